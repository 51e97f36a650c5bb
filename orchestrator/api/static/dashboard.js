// The marathon dashboard: the run list, and for the selected run live charts fed by its event stream.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const W = 400, H = 150, PAD = 22;
let selected = null;
let source = null;
let series = null;

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

const TYPES = ["concurrency", "alert", "service", "invocation", "boundary", "injected", "reverted",
  "failed", "finished", "interrupted", "ended", "started", "stopping"];

function select(id) {
  if (selected === id) return;
  if (source) source.close();
  selected = id;
  series = fresh();
  document.getElementById("live-id").textContent = id;
  document.getElementById("live-status").textContent = "";
  draw();
  source = new EventSource(`/runs/${encodeURIComponent(id)}/events`);
  for (const type of TYPES) {
    source.addEventListener(type, message => handle(type, JSON.parse(message.data)));
  }
  source.addEventListener("end", () => { source.close(); source = null; });
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

refreshRuns();
refreshLeaderboard();
setInterval(refreshRuns, 2000);
setInterval(refreshLeaderboard, 10000);
