// The marathon dashboard: the run list, a form to start a run, and for the selected run live charts, its
// active faults, firing alerts and agent invocations, fed by its event stream; the leaderboard and the
// nightly schedule beside them.
// A run's live events carry ground truth (which fault, where), so the control plane serves them to holders
// of its bearer token only: the page asks for the token, keeps it for this tab, and sends it as a header.
// Without it the page shows what the run list tells anyone: how many faults of which category are active
// and which alerts fire, never where.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const TOKEN_KEY = "marathon-token";
const RETRY_MS = 2000;
const ACTIVE = ["queued", "running", "stopping"];
const ENDED = ["finished", "stopped", "failed", "interrupted"];
const MAX_INVOCATIONS = 50;
let selected = null;
let following = null;
let series = null;
let views = new Map(); // run id -> the run's last document from GET /runs
let drawPending = false;

function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

function authHeaders() {
  return token() ? { Authorization: `Bearer ${token()}` } : {};
}

function $(id) {
  return document.getElementById(id);
}

function showTokenState() {
  $("token-state").textContent = token() ? "token set for this tab" : "no token";
}

function fresh() {
  return {
    concurrency: [], firing: [], newAlerts: [], pendingAlerts: 0, errors: [], invocations: [], end: 0,
    faults: new Map(), alerts: new Map(), boundary: null, phase: "", streaming: false,
  };
}

// Formatting.

function minutes(t) {
  const m = t / 60;
  return `${m >= 100 ? Math.round(m) : m.toFixed(1)} min`;
}

function trimmed(v, digits) {
  return String(Number(v.toFixed(digits)));
}

// Charts: real pixel geometry (the viewBox is the drawn size), so text is never stretched.

function el(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function niceStep(span, maxTicks, integer) {
  const raw = span / Math.max(1, maxTicks);
  if (raw <= 0) return 1;
  const mag = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) {
    const step = m * mag;
    if (step >= raw && (!integer || Number.isInteger(step))) return step;
  }
  return integer ? Math.max(1, Math.ceil(raw)) : 10 * mag;
}

function timeTicks(tMax, width) {
  // Schedule time in minutes, or hours once a run is longer than three.
  const unit = tMax > 3 * 3600 ? 3600 : 60;
  const step = niceStep(tMax / unit, Math.max(2, Math.floor(width / 42)), false);
  const ticks = [];
  for (let i = 0; i * step * unit <= tMax + 1e-6; i++) {
    ticks.push({ at: i * step * unit, label: trimmed(i * step, 2) });
  }
  return { ticks, title: `schedule time (${unit === 60 ? "min" : "h"})` };
}

function plot(svg, spec, paint) {
  // spec: xMax, xTicks(plotWidth) -> {ticks, title}, yMax, yStep, yFormat, yTitle.
  svg.replaceChildren();
  const box = svg.getBoundingClientRect();
  const w = Math.max(160, Math.round(box.width));
  const h = Math.max(80, Math.round(box.height));
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  const f = { left: 44, right: 12, top: 18, bottom: 34 };
  const pw = w - f.left - f.right;
  const ph = h - f.top - f.bottom;
  const x = v => f.left + pw * (spec.xMax > 0 ? Math.min(v, spec.xMax) / spec.xMax : 0);
  const y = v => f.top + ph * (1 - (spec.yMax > 0 ? Math.min(v, spec.yMax) / spec.yMax : 0));
  for (let i = 0; i * spec.yStep <= spec.yMax + 1e-9; i++) {
    const v = i * spec.yStep;
    svg.appendChild(el("line", { class: "grid", x1: f.left, x2: f.left + pw, y1: y(v), y2: y(v) }));
    svg.appendChild(el("text", { x: f.left - 6, y: y(v) + 4, "text-anchor": "end" }, spec.yFormat(v)));
  }
  const xs = spec.xTicks(pw);
  for (const tick of xs.ticks) {
    svg.appendChild(el("line", { class: "grid", x1: x(tick.at), x2: x(tick.at), y1: f.top, y2: f.top + ph }));
    svg.appendChild(el("line", { class: "axis", x1: x(tick.at), x2: x(tick.at), y1: f.top + ph, y2: f.top + ph + 4 }));
    svg.appendChild(el("text", { x: x(tick.at), y: f.top + ph + 16, "text-anchor": "middle" }, tick.label));
  }
  svg.appendChild(el("line", { class: "axis", x1: f.left, x2: f.left + pw, y1: f.top + ph, y2: f.top + ph }));
  svg.appendChild(el("line", { class: "axis", x1: f.left, x2: f.left, y1: f.top, y2: f.top + ph }));
  svg.appendChild(el("text", { x: 2, y: 11 }, spec.yTitle));
  svg.appendChild(el("text", { x: f.left + pw, y: h - 2, "text-anchor": "end" }, xs.title));
  paint({ x, y, top: f.top, bottom: f.top + ph });
}

function countAxis(max) {
  const step = niceStep(Math.max(1, max), 4, true);
  return { yMax: Math.max(step, Math.ceil(Math.max(1, max) / step) * step), yStep: step };
}

function step(points, s, end) {
  // Fault concurrency is a step function: it holds its value until the next boundary.
  let d = "";
  for (const [t, v] of points) d += d === "" ? `M${s.x(t)},${s.y(v)}` : `H${s.x(t)}V${s.y(v)}`;
  if (d !== "" && end > points[points.length - 1][0]) d += `H${s.x(end)}`;
  return d;
}

function line(points, s) {
  return points.map(([t, v], i) => `${i ? "L" : "M"}${s.x(t)},${s.y(v)}`).join("");
}

function draw() {
  drawPending = false;
  const tMax = Math.max(series.end, 60);
  const time = width => timeTicks(tMax, width);

  const c = $("chart-concurrency");
  const cAxis = countAxis(Math.max(0, ...series.concurrency.map(p => p[1])));
  plot(c, { xMax: tMax, xTicks: time, ...cAxis, yFormat: v => String(v), yTitle: "faults" }, s => {
    if (series.concurrency.length) {
      c.appendChild(el("path", { d: step(series.concurrency, s, series.end), fill: "none", stroke: "#0b6bcb",
        "stroke-width": 2 }));
    }
  });
  c.setAttribute("data-points", String(series.concurrency.length));

  const a = $("chart-alerts");
  const aAxis = countAxis(Math.max(0, ...series.firing.map(p => p[1]), ...series.newAlerts.map(p => p[1])));
  plot(a, { xMax: tMax, xTicks: time, ...aAxis, yFormat: v => String(v), yTitle: "alerts" }, s => {
    for (const [t, v] of series.newAlerts) {
      if (v > 0) a.appendChild(el("rect", { x: s.x(t) - 3, y: s.y(v), width: 6, height: s.bottom - s.y(v), fill: "#f59e0b" }));
    }
    if (series.firing.length) {
      a.appendChild(el("path", { d: step(series.firing, s, series.end), fill: "none", stroke: "#b42318",
        "stroke-width": 2 }));
    }
  });
  a.setAttribute("data-points", String(series.firing.length));

  const e = $("chart-errors");
  const peak = Math.max(0, ...series.errors.map(p => p[1])) * 100;
  const eStep = niceStep(Math.max(5, peak), 4, false);
  const eMax = Math.min(100, Math.max(eStep, Math.ceil(Math.max(5, peak) / eStep) * eStep));
  plot(e, { xMax: tMax, xTicks: time, yMax: eMax, yStep: eStep, yFormat: v => `${trimmed(v, 1)}%`,
    yTitle: "failed requests (%)" }, s => {
    for (const call of series.invocations) {
      e.appendChild(el("line", { x1: s.x(call.start_s), x2: s.x(call.start_s), y1: s.top, y2: s.bottom,
        stroke: "#7c3aed", "stroke-dasharray": "3,3", "stroke-width": 1 }));
    }
    if (series.errors.length) {
      const pct = series.errors.map(([t, v]) => [t, v * 100]);
      e.appendChild(el("path", { d: line(pct, s), fill: "none", stroke: "#1a7f37", "stroke-width": 2 }));
    }
  });
  e.setAttribute("data-points", String(series.errors.length));

  renderLists();
  renderInvocations();
  renderProgress();
}

function scheduleDraw() {
  if (drawPending || series === null) return;
  drawPending = true;
  requestAnimationFrame(draw);
}

// The selected run's lists: from its events when the token opened them, else what anyone may see.

function span(cls, text) {
  const node = document.createElement("span");
  node.className = cls;
  node.textContent = text;
  return node;
}

function item(list, head, since, sub, attrs) {
  // One entry: a tag and how long ago on the first line, what it concerns on the second.
  const li = document.createElement("li");
  for (const [k, v] of Object.entries(attrs || {})) li.dataset[k] = v;
  li.appendChild(span(head[0], head[1]));
  if (since !== null) li.appendChild(span("since", `since ${minutes(since)}`));
  if (sub.length) {
    const line = span("sub", "");
    for (const [cls, text] of sub) line.appendChild(span(cls, text));
    li.appendChild(line);
  }
  list.appendChild(li);
}

function renderLists() {
  const faults = $("active-faults");
  const alerts = $("firing-alerts");
  faults.replaceChildren();
  alerts.replaceChildren();
  const view = views.get(selected);
  const live = view !== undefined && ACTIVE.includes(view.status);
  let faultCount = 0, alertCount = 0;
  if (series.streaming) {
    const byTime = (m) => [...m.entries()].sort((p, q) => p[1].t - q[1].t || (p[0] < q[0] ? -1 : 1));
    for (const [id, f] of byTime(series.faults)) {
      item(faults, ["tag category", f.category], f.t, [["target", f.target], ["detail", f.catalog_id]],
        { fault: id, category: f.category });
    }
    for (const [id, a] of byTime(series.alerts)) {
      item(alerts, ["tag alert", a.rule], a.t, [["service", a.service]], { alert: id, rule: a.rule });
    }
    faultCount = series.faults.size;
    alertCount = series.alerts.size;
  } else if (live) {
    const categories = view.active_fault_categories || [];
    const rules = view.firing_alert_names || [];
    for (const category of categories) {
      item(faults, ["tag category", category], null, [["hidden-target", "target hidden: enter the token"]],
        { category });
    }
    for (const rule of rules) item(alerts, ["tag alert", rule], null, [], { rule });
    faultCount = categories.length;
    alertCount = rules.length;
  }
  if (!faultCount) item(faults, ["", selected === null ? "no run selected" : "none active"], null, [], {});
  if (!alertCount) item(alerts, ["", selected === null ? "no run selected" : "none firing"], null, [], {});
  faults.lastChild.classList.toggle("none", !faultCount);
  alerts.lastChild.classList.toggle("none", !alertCount);
  $("faults-count").textContent = faultCount ? `(${faultCount})` : "";
  $("alerts-count").textContent = alertCount ? `(${alertCount})` : "";
}

function renderInvocations() {
  const body = document.querySelector("#invocations tbody");
  body.replaceChildren();
  const of = series.boundary ? series.boundary.of : null;
  for (const call of series.invocations.slice(-MAX_INVOCATIONS).reverse()) {
    const tr = document.createElement("tr");
    tr.dataset.invocation = String(call.n);
    cell(tr, String(call.n)).className = "num";
    cell(tr, of ? `${call.n} of ${of}` : String(call.n));
    cell(tr, minutes(call.start_s)).className = "num";
    cell(tr, `${call.wall_s.toFixed(2)} s`).className = "num";
    cell(tr, typeof call.tool_calls === "number" ? String(call.tool_calls) : "–").className = "num";
    let exit;
    if (call.timed_out) exit = "timed out";
    else if (call.exit_code === null) exit = "no exit code";
    else exit = call.exit_code === 0 ? "0 (ok)" : `exit ${call.exit_code}`;
    const td = cell(tr, exit);
    if (call.timed_out || call.exit_code !== 0) td.className = "exit-bad";
    body.appendChild(tr);
  }
  if (!series.invocations.length) {
    const tr = document.createElement("tr");
    const td = cell(tr, series.streaming ? "none yet" : "shown with the token");
    td.colSpan = 6;
    td.className = "muted";
    body.appendChild(tr);
  }
}

function renderProgress() {
  const view = views.get(selected);
  const parts = [];
  if (view) {
    parts.push(`${view.app} · ${view.agent} · seed ${view.seed} · ${view.clock}`);
    const p = view.progress;
    if (p.boundaries) parts.push(`boundary ${p.boundary} of ${p.boundaries} (${minutes(p.schedule_t_s)})`);
  }
  if (series.phase && view && ACTIVE.includes(view.status)) parts.push(series.phase);
  $("live-progress").textContent = parts.join(" · ");
}

// The event stream.

function handle(type, event) {
  if (typeof event.t === "number") series.end = Math.max(series.end, event.t);
  if (type === "concurrency") {
    series.concurrency.push([event.t, event.active]);
    series.firing.push([event.t, event.firing]);
    series.newAlerts.push([event.t, series.pendingAlerts]);
    series.pendingAlerts = 0;
  } else if (type === "alert") {
    if (event.state === "firing") {
      series.pendingAlerts += 1;
      series.alerts.set(event.alert_id, { rule: event.rule, service: event.service, t: event.t });
    } else {
      series.alerts.delete(event.alert_id);
    }
  } else if (type === "injected") {
    series.faults.set(event.fault_id, { category: event.category, target: event.target,
      catalog_id: event.catalog_id, t: event.t });
  } else if (type === "reverted") {
    series.faults.delete(event.fault_id);
  } else if (type === "service") {
    series.errors.push([event.t, event.e]);
  } else if (type === "invocation") {
    series.invocations.push(event);
    series.end = Math.max(series.end, event.end_s);
  } else if (type === "boundary") {
    series.boundary = event;
    series.phase = ""; // a phase is shown until the next boundary: it tells what happens between them
  } else if (type === "phase") {
    series.phase = event.name;
  } else if (type === "finished" || type === "interrupted") {
    series.faults.clear();
    series.alerts.clear();
    series.phase = "";
    refreshRuns();
    refreshLeaderboard();
  }
  scheduleDraw();
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
      $("live-log").textContent = token()
        ? "The control plane refused this token: live events need the right one (enter it above)."
        : "Live events carry ground truth: enter the control plane's token above to follow this run.";
      $("live").dataset.locked = "true";
      series.streaming = false;
      scheduleDraw();
      return;
    }
    if (!response.ok) {
      $("live-log").textContent = `the event stream answered ${response.status}`;
      return;
    }
    $("live").dataset.locked = "false";
    $("live-log").textContent = "";
    series.streaming = true;
    scheduleDraw();
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
  $("live-id").textContent = id;
  $("live").dataset.locked = "";
  $("live-log").textContent = "";
  $("stop-state").textContent = "";
  showSelected();
  draw();
  following = { abort: new AbortController(), lastId: null, ended: false };
  follow(id, following);
  refreshRuns();
}

function showSelected() {
  const view = views.get(selected);
  const status = view ? view.status : "";
  const badge = $("live-status");
  badge.textContent = status;
  badge.className = `status ${status}`;
  $("stop-run").hidden = !(view && ["queued", "running"].includes(status));
  for (const tr of document.querySelectorAll("#runs tr[data-run]")) {
    tr.classList.toggle("selected", tr.dataset.run === selected);
  }
}

// Starting and stopping runs (the token's).

function problemText(body, status) {
  if (body && Array.isArray(body.detail)) {
    return body.detail.map(d => `${(d.loc || []).filter(p => p !== "body").join(".")}: ${d.msg}`).join("; ");
  }
  if (body && typeof body.detail === "string") return body.detail;
  return `the control plane answered ${status}`;
}

async function post(path, body) {
  const headers = { ...authHeaders() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { method: "POST", headers,
    body: body === undefined ? undefined : JSON.stringify(body) });
  let parsed = null;
  try {
    parsed = await response.json();
  } catch (error) {
    parsed = null;
  }
  if (response.status === 401) {
    throw new Error(token() ? "the control plane refused this token" : "enter the control plane's token above first");
  }
  if (!response.ok) throw new Error(problemText(parsed, response.status));
  return parsed;
}

function startBody() {
  const value = id => $(id).value.trim();
  const body = { app: value("start-app"), agent: value("start-agent"), seed: Number(value("start-seed")),
    baseline: $("start-baseline").checked };
  if (value("start-clock")) body.clock = value("start-clock");
  if (value("start-speed")) body.speed = Number(value("start-speed"));
  const schedule = {};
  for (const [id, key] of [["start-faults", "faults"], ["start-injection", "injection_period_s"],
    ["start-observation", "observation_period_s"], ["start-delta", "delta_s"]]) {
    if (value(id)) schedule[key] = Number(value(id));
  }
  if (Object.keys(schedule).length) body.schedule = schedule;
  return body;
}

async function startRun(event) {
  event.preventDefault();
  const state = $("start-state");
  const button = $("start-button");
  button.disabled = true;
  state.className = "muted";
  state.textContent = "starting…";
  try {
    const created = await post("/runs", startBody());
    state.textContent = `started ${created.id}`;
    state.dataset.run = created.id;
    await refreshRuns();
    select(created.id);
  } catch (error) {
    state.className = "error";
    state.textContent = error.message;
  } finally {
    button.disabled = false;
  }
}

async function stopRun(id) {
  const state = $("stop-state");
  state.className = "muted";
  state.textContent = "stopping…";
  try {
    await post(`/runs/${encodeURIComponent(id)}/stop`);
    state.textContent = id === selected ? "asked to stop: it reverts its faults, seals and scores" : "";
  } catch (error) {
    state.className = "error";
    state.textContent = error.message;
  }
  await refreshRuns();
}

// The run list, the leaderboard and the nightly schedule, polled.

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

function runRow(run) {
  const tr = document.createElement("tr");
  tr.dataset.run = run.id;
  tr.addEventListener("click", () => select(run.id));
  const ended = ENDED.includes(run.status);
  if (ended) tr.classList.add(`ended-${run.status}`);
  if (run.id === selected) tr.classList.add("selected");
  cell(tr, run.id).className = "id";
  cell(tr, run.source);
  cell(tr, run.app);
  cell(tr, run.agent).className = "wide-only";
  cell(tr, String(run.seed)).className = "num";
  const status = document.createElement("span");
  status.className = `status ${run.status}`;
  status.textContent = run.status;
  cell(tr, "").appendChild(status);
  cell(tr, run.progress.boundaries ? `${run.progress.boundary}/${run.progress.boundaries}` : "").className =
    "num wide-only";
  cell(tr, ended ? "" : String(run.active_faults.length)).className = "num";
  cell(tr, ended ? "" : String(run.firing_alerts)).className = "num";
  cell(tr, run.score ? run.score.marathon_score.toFixed(1) : "").className = "num";
  const actions = cell(tr, "");
  actions.className = "actions";
  if (ended) {
    const a = document.createElement("a");
    a.href = run.links.report;
    a.textContent = "report";
    a.addEventListener("click", ev => ev.stopPropagation());
    actions.appendChild(a);
  } else if (["queued", "running"].includes(run.status)) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "danger stop";
    button.textContent = "stop";
    button.addEventListener("click", ev => {
      ev.stopPropagation();
      stopRun(run.id);
    });
    actions.appendChild(button);
  }
  return tr;
}

function signature(run) {
  return JSON.stringify([run.status, run.progress, run.active_faults.length, run.firing_alerts,
    run.score ? run.score.marathon_score : null, run.id === selected]);
}

async function refreshRuns() {
  let page;
  try {
    const response = await fetch("/runs?limit=50");
    if (!response.ok) return;
    page = await response.json();
  } catch (error) {
    return;
  }
  views = new Map(page.runs.map(run => [run.id, run]));
  const body = document.querySelector("#runs tbody");
  const existing = new Map([...body.querySelectorAll("tr[data-run]")].map(tr => [tr.dataset.run, tr]));
  // Rows are replaced only when their run changed, so a row under the pointer stays put between polls.
  page.runs.forEach((run, index) => {
    let tr = existing.get(run.id);
    const sig = signature(run);
    if (!tr || tr.dataset.sig !== sig) {
      const replacement = runRow(run);
      replacement.dataset.sig = sig;
      if (tr) tr.replaceWith(replacement);
      tr = replacement;
    }
    if (body.children[index] !== tr) body.insertBefore(tr, body.children[index] || null);
    existing.delete(run.id);
  });
  for (const stale of existing.values()) stale.remove();
  if (selected === null) {
    const live = page.runs.find(r => ACTIVE.includes(r.status));
    if (live) select(live.id);
  }
  if (selected !== null) {
    showSelected();
    scheduleDraw();
  }
}

async function refreshLeaderboard() {
  let board;
  try {
    const response = await fetch("/leaderboard");
    if (!response.ok) return;
    board = await response.json();
  } catch (error) {
    return;
  }
  const table = $("leaderboard");
  const body = table.querySelector("tbody");
  body.replaceChildren();
  for (const row of board.rows) {
    const tr = document.createElement("tr");
    cell(tr, row.app);
    cell(tr, row.agent);
    cell(tr, String(typeof row.n === "number" ? row.n : row.runs)).className = "num";
    let mean = typeof row.mean === "number" ? row.mean.toFixed(1) : "–";
    if (row.ci95) mean += ` ± ${row.ci95.half_width.toFixed(1)}`;
    cell(tr, mean).className = "num";
    cell(tr, row.best.marathon_score.toFixed(1), row.best.report).className = "num";
    cell(tr, row.latest.marathon_score.toFixed(1), row.latest.report).className = "num";
    body.appendChild(tr);
  }
  if (!board.rows.length) {
    const tr = document.createElement("tr");
    const td = cell(tr, "no finished runs yet");
    td.colSpan = 6;
    td.className = "muted";
    body.appendChild(tr);
  }
  table.dataset.loaded = String(Number(table.dataset.loaded) + 1);
}

let nightlyServed = null; // whether the control plane has GET /nightly (from its OpenAPI document)
let nightlyNights = [];

function noNightly(text) {
  $("nightly").dataset.state = "none";
  $("nightly-next").textContent = text;
  $("nightly-trend").hidden = true;
  $("nightly-nights").hidden = true;
}

function mean(values) {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
}

async function refreshNightly() {
  if (nightlyServed === null) {
    try {
      const schema = await (await fetch("/openapi.json")).json();
      nightlyServed = Boolean(schema.paths && schema.paths["/nightly"]);
    } catch (error) {
      return;
    }
  }
  if (!nightlyServed) return noNightly("no nightly schedule");
  let doc;
  try {
    const response = await fetch("/nightly");
    if (response.status === 404) return noNightly("no nightly schedule");
    if (!response.ok) return noNightly(`the nightly schedule answered ${response.status}`);
    doc = await response.json();
  } catch (error) {
    return;
  }
  const nights = [...(doc.nights || [])].sort((a, b) => (a.started_at < b.started_at ? -1 : 1));
  if (!doc.next_run_at && !nights.length) return noNightly("no nightly schedule");
  $("nightly").dataset.state = "scheduled";
  $("nightly-next").textContent = doc.next_run_at
    ? `next run: ${new Date(doc.next_run_at).toLocaleString()}` : "no next run scheduled";
  nightlyNights = nights.slice(-14);
  const body = document.querySelector("#nightly-nights tbody");
  body.replaceChildren();
  for (const night of [...nightlyNights].reverse()) {
    const tr = document.createElement("tr");
    tr.dataset.night = night.night;
    const scores = night.runs.map(r => r.marathon_score).filter(s => typeof s === "number");
    const counts = {};
    for (const run of night.runs) counts[run.status] = (counts[run.status] || 0) + 1;
    cell(tr, night.started_at.slice(0, 16).replace("T", " "));
    cell(tr, String(night.runs.length)).className = "num";
    cell(tr, Object.entries(counts).map(([s, n]) => `${n} ${s}`).join(", "));
    const m = mean(scores);
    cell(tr, m === null ? "–" : m.toFixed(1)).className = "num";
    body.appendChild(tr);
  }
  $("nightly-nights").hidden = !nightlyNights.length;
  $("nightly-trend").hidden = !nightlyNights.length;
  drawNightly();
}

function drawNightly() {
  const svg = $("nightly-chart");
  if ($("nightly-trend").hidden || !nightlyNights.length) return;
  const n = nightlyNights.length;
  const points = nightlyNights.map((night, i) => {
    const scores = night.runs.map(r => r.marathon_score).filter(s => typeof s === "number");
    return { i, mean: mean(scores), best: scores.length ? Math.max(...scores) : null };
  });
  const ticks = width => {
    const every = Math.max(1, Math.ceil(n / Math.max(1, Math.floor(width / 56))));
    const list = [];
    for (let i = 0; i < n; i += every) list.push({ at: i + 0.5, label: nightlyNights[i].started_at.slice(5, 10) });
    return { ticks: list, title: "night (month-day, UTC)" };
  };
  plot(svg, { xMax: n, xTicks: ticks, yMax: 100, yStep: 25, yFormat: v => String(v), yTitle: "score" }, s => {
    for (const [key, colour] of [["mean", "#0b6bcb"], ["best", "#1a7f37"]]) {
      const known = points.filter(p => p[key] !== null).map(p => [p.i + 0.5, p[key]]);
      if (known.length) svg.appendChild(el("path", { d: line(known, s), fill: "none", stroke: colour, "stroke-width": 2 }));
      for (const [t, v] of known) svg.appendChild(el("circle", { cx: s.x(t), cy: s.y(v), r: 3, fill: colour }));
    }
  });
  svg.setAttribute("data-points", String(n));
}

async function loadChoices() {
  let choices;
  try {
    choices = await (await fetch("/dashboard/choices")).json();
  } catch (error) {
    return;
  }
  for (const [id, names, preferred] of [["start-app", choices.apps, null], ["start-agent", choices.agents, "noop"]]) {
    const select = $(id);
    select.replaceChildren();
    for (const name of names) {
      const option = document.createElement("option");
      option.value = name;
      option.textContent = name;
      if (name === preferred) option.selected = true;
      select.appendChild(option);
    }
  }
  $("start-form").dataset.ready = "true";
}

$("token-form").addEventListener("submit", event => {
  event.preventDefault();
  const input = $("token");
  if (input.value) sessionStorage.setItem(TOKEN_KEY, input.value);
  else sessionStorage.removeItem(TOKEN_KEY);
  input.value = "";
  showTokenState();
  if (selected !== null) select(selected, true);
});
$("start-form").addEventListener("submit", startRun);
$("stop-run").addEventListener("click", () => {
  if (selected !== null) stopRun(selected);
});
window.addEventListener("resize", () => {
  scheduleDraw();
  drawNightly();
});

series = fresh();
showTokenState();
draw();
loadChoices();
refreshRuns();
refreshLeaderboard();
refreshNightly();
setInterval(refreshRuns, 2000);
setInterval(refreshLeaderboard, 10000);
setInterval(refreshNightly, 30000);
