// The marathon dashboard: the run list, and for the selected run live charts fed by its event stream.
// A run's live events carry ground truth (which fault, where), so the control plane serves them to holders
// of its bearer token only: the page asks for the token, keeps it for this tab, and sends it as a header.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const W = 400, H = 150, PAD = 22;
const TOKEN_KEY = "marathon-token";
const RETRY_MS = 2000;
let selected = null;
let following = null;
let series = null;

function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

function authHeaders() {
  return token() ? { Authorization: `Bearer ${token()}` } : {};
}

function showTokenState() {
  document.getElementById("token-state").textContent = token() ? "token set for this tab" : "no token";
}

function fresh() {
  return { concurrency: [], firing: [], newAlerts: [], pendingAlerts: 0, errors: [], invocations: [], end: 0 };
}

function el(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function scale(points, tMax, yMax) {
  const x = t => PAD + (W - PAD - 4) * (tMax > 0 ? t / tMax : 0);
  const y = v => H - PAD - (H - PAD - 6) * (yMax > 0 ? v / yMax : 0);
  return { x, y };
}

function axes(svg, tMax, yMax, yLabel) {
  svg.appendChild(el("line", { x1: PAD, y1: H - PAD, x2: W - 4, y2: H - PAD, stroke: "#9aa3af" }));
  svg.appendChild(el("line", { x1: PAD, y1: 6, x2: PAD, y2: H - PAD, stroke: "#9aa3af" }));
  svg.appendChild(el("text", { x: 2, y: 14, "font-size": 10, fill: "#6b7280" }, yLabel(yMax)));
  svg.appendChild(el("text", { x: W - 60, y: H - 6, "font-size": 10, fill: "#6b7280" },
    `t=${Math.round(tMax / 60)} min`));
}

function step(points, s) {
  // Fault concurrency is a step function: it holds its value until the next boundary.
  let d = "";
  let last = null;
  for (const [t, v] of points) {
    d += last === null ? `M${s.x(t)},${s.y(v)}` : `H${s.x(t)}V${s.y(v)}`;
    last = v;
  }
  return d;
}

function line(points, s) {
  return points.map(([t, v], i) => `${i ? "L" : "M"}${s.x(t)},${s.y(v)}`).join("");
}

function draw() {
  const tMax = Math.max(series.end, 1);
  const c = document.getElementById("chart-concurrency");
  c.replaceChildren();
  const cMax = Math.max(1, ...series.concurrency.map(p => p[1]));
  const cs = scale(series.concurrency, tMax, cMax);
  axes(c, tMax, cMax, m => `${m}`);
  c.appendChild(el("path", { d: step(series.concurrency, cs), fill: "none", stroke: "#0b6bcb", "stroke-width": 2 }));
  c.setAttribute("data-points", String(series.concurrency.length));

  const a = document.getElementById("chart-alerts");
  a.replaceChildren();
  const aMax = Math.max(1, ...series.firing.map(p => p[1]), ...series.newAlerts.map(p => p[1]));
  const as = scale(series.firing, tMax, aMax);
  axes(a, tMax, aMax, m => `${m}`);
  for (const [t, v] of series.newAlerts) {
    a.appendChild(el("rect", { x: as.x(t) - 2, y: as.y(v), width: 4, height: H - PAD - as.y(v), fill: "#f59e0b" }));
  }
  a.appendChild(el("path", { d: line(series.firing, as), fill: "none", stroke: "#b42318", "stroke-width": 2 }));
  a.setAttribute("data-points", String(series.firing.length));

  const e = document.getElementById("chart-errors");
  e.replaceChildren();
  const es = scale(series.errors, tMax, 1);
  axes(e, tMax, 1, () => "100%");
  for (const t of series.invocations) {
    e.appendChild(el("line", { x1: es.x(t), y1: 6, x2: es.x(t), y2: H - PAD, stroke: "#a78bfa", "stroke-dasharray": "2,2" }));
  }
  e.appendChild(el("path", { d: line(series.errors, es), fill: "none", stroke: "#1a7f37", "stroke-width": 2 }));
  e.setAttribute("data-points", String(series.errors.length));
}

function handle(type, event) {
  const t = typeof event.t === "number" ? event.t : null;
  if (t !== null) series.end = Math.max(series.end, t);
  if (type === "concurrency") {
    series.concurrency.push([event.t, event.active]);
    series.firing.push([event.t, event.firing]);
    series.newAlerts.push([event.t, series.pendingAlerts]);
    series.pendingAlerts = 0;
  } else if (type === "alert" && event.state === "firing") {
    series.pendingAlerts += 1;
  } else if (type === "service") {
    series.errors.push([event.t, event.e]);
  } else if (type === "invocation") {
    series.invocations.push(event.start_s);
    series.end = Math.max(series.end, event.end_s);
  } else if (type === "boundary") {
    document.getElementById("live-log").textContent = `boundary ${event.k} of ${event.of}`;
  } else if (type === "finished" || type === "interrupted") {
    document.getElementById("live-status").textContent = event.status || "interrupted";
  }
  draw();
}

// Every event type of orchestrator/run/events.py (EVENT_TYPES), each in its wire form; a test keeps the two equal.
const TYPES = ["concurrency", "alert", "service", "invocation", "boundary", "injected", "reverted",
  "failed", "finished", "interrupted", "ended", "started", "stopping", "identified", "phase"];

function dispatch(block, state) {
  // One server-sent event: "field: value" lines; comments (": ping") start with a colon.
  let type = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") type = value;
    else if (field === "data") data.push(value);
    else if (field === "id") state.lastId = value;
  }
  if (type === "end") {
    state.ended = true;
  } else if (TYPES.includes(type) && data.length) {
    handle(type, JSON.parse(data.join("\n")));
  }
}

async function follow(id, state) {
  // EventSource cannot send a header, so the stream is read with fetch; it resumes after the last event
  // seen (Last-Event-ID) when the connection drops before the run's end.
  while (!state.ended && !state.abort.signal.aborted) {
    const headers = authHeaders();
    if (state.lastId !== null) headers["Last-Event-ID"] = state.lastId;
    let response;
    try {
      response = await fetch(`/runs/${encodeURIComponent(id)}/events`, { headers, signal: state.abort.signal });
    } catch (error) {
      if (state.abort.signal.aborted) return;
      await new Promise(resolve => setTimeout(resolve, RETRY_MS));
      continue;
    }
    if (response.status === 401) {
      document.getElementById("live-log").textContent = token()
        ? "The control plane refused this token: live events need the right one (enter it above)."
        : "Live events carry ground truth: enter the control plane's token above to follow this run.";
      document.getElementById("live").dataset.locked = "true";
      return;
    }
    if (!response.ok) {
      document.getElementById("live-log").textContent = `the event stream answered ${response.status}`;
      return;
    }
    document.getElementById("live").dataset.locked = "false";
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let raw = "", text = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        raw += decoder.decode(value, { stream: true });
        // A CR at the very end may be the first half of a CRLF: keep it for the next chunk.
        const cut = raw.endsWith("\r") ? raw.length - 1 : raw.length;
        text += raw.slice(0, cut).replace(/\r\n?/g, "\n");
        raw = raw.slice(cut);
        let at;
        while ((at = text.indexOf("\n\n")) >= 0) {
          dispatch(text.slice(0, at), state);
          text = text.slice(at + 2);
          if (state.ended) return;
        }
      }
    } catch (error) {
      if (state.abort.signal.aborted) return;
    }
    if (!state.ended) await new Promise(resolve => setTimeout(resolve, RETRY_MS));
  }
}

function select(id, again) {
  if (selected === id && !again) return;
  if (following) following.abort.abort();
  selected = id;
  series = fresh();
  document.getElementById("live-id").textContent = id;
  document.getElementById("live-status").textContent = "";
  document.getElementById("live-log").textContent = "";
  draw();
  following = { abort: new AbortController(), lastId: null, ended: false };
  follow(id, following);
  refreshRuns();
}

function cell(row, text, href) {
  const td = document.createElement("td");
  if (href) {
    const a = document.createElement("a");
    a.href = href;
    a.textContent = text;
    a.addEventListener("click", ev => ev.stopPropagation());
    td.appendChild(a);
  } else {
    td.textContent = text;
  }
  row.appendChild(td);
  return td;
}

async function refreshRuns() {
  let page;
  try {
    const response = await fetch("/runs?limit=50");
    page = await response.json();
  } catch (error) {
    return;
  }
  const body = document.querySelector("#runs tbody");
  body.replaceChildren();
  for (const run of page.runs) {
    const tr = document.createElement("tr");
    tr.dataset.run = run.id;
    if (run.id === selected) tr.className = "selected";
    cell(tr, run.id);
    cell(tr, run.app);
    cell(tr, run.agent);
    cell(tr, String(run.seed));
    cell(tr, run.status).className = `status ${run.status}`;
    cell(tr, run.progress.boundaries ? `${run.progress.boundary}/${run.progress.boundaries}` : "");
    cell(tr, String(run.active_faults.length));
    cell(tr, run.score ? run.score.marathon_score.toFixed(1) : "");
    const ended = ["finished", "stopped", "failed", "interrupted"].includes(run.status);
    if (ended) cell(tr, "report", run.links.report); else cell(tr, "");
    tr.addEventListener("click", () => select(run.id));
    body.appendChild(tr);
  }
  if (selected === null) {
    const live = page.runs.find(r => ["queued", "running", "stopping"].includes(r.status));
    if (live) select(live.id);
  }
}

async function refreshLeaderboard() {
  let board;
  try {
    board = await (await fetch("/leaderboard")).json();
  } catch (error) {
    return;
  }
  const body = document.querySelector("#leaderboard tbody");
  body.replaceChildren();
  for (const row of board.rows) {
    const tr = document.createElement("tr");
    cell(tr, row.app);
    cell(tr, row.agent);
    cell(tr, String(row.runs));
    cell(tr, row.best.marathon_score.toFixed(1), row.best.report);
    cell(tr, row.latest.marathon_score.toFixed(1), row.latest.report);
    body.appendChild(tr);
  }
}

document.getElementById("token-form").addEventListener("submit", event => {
  event.preventDefault();
  const input = document.getElementById("token");
  if (input.value) sessionStorage.setItem(TOKEN_KEY, input.value);
  else sessionStorage.removeItem(TOKEN_KEY);
  input.value = "";
  showTokenState();
  if (selected !== null) select(selected, true);
});

showTokenState();
refreshRuns();
refreshLeaderboard();
setInterval(refreshRuns, 2000);
setInterval(refreshLeaderboard, 10000);
