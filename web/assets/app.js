// The dashboard: wires the API, heatmap, legend, tooltip, pair history and agents table together
// and refreshes them in place on a timer (never a page reload).
import { api, getJSON, normalizeAgents, normalizeGroups, normalizeHistory, normalizeMesh } from "./api.js";
import { renderAgents } from "./agents.js";
import { drawChart } from "./chart.js";
import { byName, escapeHtml, fmtAge, fmtRatio, fmtUs } from "./format.js";
import { Heatmap, buildModel } from "./heatmap.js";
import { renderSuspects } from "./suspects.js";
import { normalizeTopology, renderTopology } from "./topology.js";
import { CELL, METRICS, SPECIAL, rampRGB, staleRGB } from "./scale.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);

const state = {
  groups: { protocols: [], groups: [], windowMs: null },
  agents: [],
  protocol: params.get("protocol"),
  group: params.get("group"),
  metric: METRICS.find((m) => m.id === params.get("metric")) ?? METRICS[0],
  refreshS: Number(params.get("refresh") ?? 5),
  model: null,
  history: null,  // { src, dst, rangeS }
  timer: null,
  lastOk: null,
  renders: 0,
  timings: null,
  error: null,
  topology: null,  // normalizeTopology(GET /api/v1/topology), null without one
  topologyDrawn: null,
};

const heatmap = new Heatmap($("heatmap"));

function setStatus(text, isError = false) {
  const el = $("status");
  el.textContent = text;
  el.classList.toggle("error", isError);
}

function rgbCss(rgb) { return `rgb(${rgb[0]},${rgb[1]},${rgb[2]})`; }

// ---- selectors -------------------------------------------------------------------------------

function fillSelect(sel, options, value) {
  sel.innerHTML = options.map(([v, label]) => `<option value="${escapeHtml(v)}">${escapeHtml(label)}</option>`).join("");
  if (options.some(([v]) => v === value)) sel.value = value;
  return sel.value;
}

function fillSelectors() {
  const protos = state.groups.protocols.length ? state.groups.protocols : ["udp", "tcp", "rdma"];
  state.protocol = fillSelect($("protocol"), protos.map((p) => [p, p.toUpperCase()]), state.protocol ?? protos[0]);
  const groups = state.groups.groups.filter((g) => !g.protocols.length || g.protocols.includes(state.protocol));
  const opts = groups.map((g) => [g.name, `${g.name} (${g.members.length})`]);
  opts.push(["", "all hosts"]);
  // The page opens on the whole mesh; a group is a choice (or a bookmarked URL).
  state.group = fillSelect($("group"), opts, state.group ?? "");
  fillSelect($("metric"), METRICS.map((m) => [m.id, m.label]), state.metric.id);
}

function syncUrl() {
  const p = new URLSearchParams();
  p.set("protocol", state.protocol);
  if (state.group) p.set("group", state.group);
  p.set("metric", state.metric.id);
  if (state.refreshS !== 5) p.set("refresh", String(state.refreshS));
  history.replaceState(null, "", `?${p}${location.hash}`);
}

// ---- mesh ------------------------------------------------------------------------------------

function hostsFor(mesh) {
  // The controller says which hosts belong on the axes (the group's members, or every agent that
  // speaks the protocol); hosts that only appear in pairs are added so no data is hidden.
  if (mesh.hosts && mesh.hosts.length) {
    const all = new Set(mesh.hosts);
    for (const p of mesh.pairs) { all.add(p.src); all.add(p.dst); }
    return [...all].sort(byName);
  }
  const g = state.groups.groups.find((x) => x.name === state.group);
  if (g) return [...g.members].sort(byName);
  const all = new Set(state.agents.map((a) => a.name));
  for (const p of mesh.pairs) { all.add(p.src); all.add(p.dst); }
  return [...all].sort(byName);
}

function drawMesh() {
  const m = state.model;
  if (!m) return;
  const t0 = performance.now();
  const wrap = document.querySelector(".heatmap-wrap");
  const maxW = Math.max(320, wrap.clientWidth - 220);
  const maxH = Math.max(320, window.innerHeight - 150);
  const scale = heatmap.draw(m, state.metric, maxW, maxH);
  drawLegend(scale);
  drawSummary();
  return performance.now() - t0;
}

function drawLegend(scale) {
  const el = $("legend");
  const metric = state.metric;
  el.innerHTML = `<h3>${escapeHtml(metric.label)}</h3><canvas width="160" height="208"></canvas>
    <div class="swatches">
      <span class="sw" style="background:${rgbCss(staleRGB(rampRGB(0.1)))}"></span><span>stale (older than 2 windows)</span>
      <span class="sw" style="background:${rgbCss(SPECIAL.missing)}"></span><span>no data</span>
      <span class="sw" style="background:${rgbCss(SPECIAL.down)}"></span><span>agent down</span>
    </div>`;
  const c = el.querySelector("canvas");
  const ctx = c.getContext("2d");
  const h = c.height - 8;
  // Vertical ramp, good at the top, with the scale's ticks at their true positions.
  for (let y = 0; y < h; y++) {
    ctx.fillStyle = rgbCss(rampRGB(y / (h - 1)));
    ctx.fillRect(0, 4 + y, 18, 1);
  }
  ctx.font = "11px system-ui, sans-serif";
  ctx.fillStyle = "#1d232b";
  ctx.textBaseline = "middle";
  scale.ticks.forEach((t, k) => {
    const y = 4 + scale.pos(t) * (h - 1);
    ctx.fillRect(18, Math.round(y), 5, 1);
    const last = k === scale.ticks.length - 1 && scale.topLabel;
    ctx.fillText(last ? scale.topLabel : scale.fmt(t), 27, Math.min(h, Math.max(8, y)));
  });
}

function drawSummary() {
  const m = state.model;
  const c = m.counts;
  const total = m.n * (m.n - 1);
  let lossy = 0, worst = null, worstV = -Infinity;
  const f = state.metric.field;
  for (let cell = 0; cell < m.n * m.n; cell++) {
    if (m.state[cell] !== CELL.ok) continue;
    const p = m.pairs[m.pairAt[cell]];
    if (p.loss > 0) lossy++;
    const v = p[f];
    if (v != null && v > worstV) { worstV = v; worst = p; }
  }
  const fmt = state.metric.kind === "ratio" ? fmtRatio : fmtUs;
  $("summary").innerHTML =
    `<b>${m.n}</b> hosts, <b>${c.ok}</b> of ${total} ordered pairs current` +
    (lossy ? `, <b class="alarm">${lossy}</b> with loss` : ", none with loss") +
    (c.stale ? `, <b>${c.stale}</b> stale` : "") + (c.missing ? `, <b>${c.missing}</b> without data` : "") +
    (c.down ? `, <b>${c.down}</b> involving a down agent` : "") +
    (worst ? ` — worst ${escapeHtml(state.metric.label)}: <b>${escapeHtml(worst.src)} → ${escapeHtml(worst.dst)}</b> ${fmt(worstV)}` : "") +
    (m.windowMs ? ` — window ${(m.windowMs / 1000).toFixed(m.windowMs < 10000 ? 1 : 0)} s` : "");
}

async function refresh() {
  clearTimeout(state.timer);
  const t0 = performance.now();
  try {
    // The verdict is a bonus: a controller that cannot give one must not stop the heatmap.
    const [meshR, agentsR, groupsR, suspectsR] = await Promise.all([
      getJSON(api.mesh(state.protocol, state.group)), getJSON(api.agents()), getJSON(api.groups()),
      getJSON(api.suspects(state.protocol)).catch(() => null)]);
    // A controller that localises to elements says so in its verdict (`elements`, [] without a
    // topology); only then is there a topology to ask for (an older one would answer 404).
    const topologyR = suspectsR && Array.isArray(suspectsR.json.elements)
      ? await getJSON(api.topology()).catch(() => null) : null;
    const t1 = performance.now();
    // Groups change when the controller reloads its config: rebuild the selectors only then.
    const groups = normalizeGroups(groupsR.json);
    if (JSON.stringify(groups) !== JSON.stringify(state.groups)) { state.groups = groups; fillSelectors(); }
    state.agents = normalizeAgents(agentsR.json);
    const mesh = normalizeMesh(meshR.json, meshR.serverNowMs);
    if (mesh.windowMs == null) mesh.windowMs = state.groups.windowMs;
    const agentState = new Map(state.agents.map((a) => [a.name, a.state]));
    const tm = performance.now();
    state.model = buildModel(hostsFor(mesh), mesh, agentState);
    const modelMs = performance.now() - tm;
    const drawMs = drawMesh();
    renderAgents($("agents").querySelector("tbody"), state.agents, mesh.nowMs);
    state.suspects = suspectsR ? suspectsR.json : null;
    renderSuspects($("suspects"), state.suspects, state.protocol);
    state.topology = topologyR ? normalizeTopology(topologyR.json) : null;
    state.topologyDrawn = renderTopology($("topology"), state.topology, state.suspects, state.agents);
    if (state.history) await loadHistory();
    state.renders++;
    state.error = null;
    state.lastOk = Date.now();
    state.timings = {
      fetchMs: meshR.fetchMs, parseMs: meshR.parseMs, modelMs, drawMs,
      renderMs: modelMs + drawMs, totalMs: performance.now() - t0, apiMs: t1 - t0,
      bytes: meshR.bytes, pairs: mesh.pairs.length, hosts: state.model.n,
      sinceNavigationMs: performance.now(),  // page opened -> this render on screen
    };
    setStatus(`updated ${new Date().toLocaleTimeString()}`);
  } catch (e) {
    state.error = String(e.message ?? e);
    setStatus(state.lastOk ? `${state.error} (showing data from ${fmtAge(Date.now() - state.lastOk)})` : state.error, true);
  }
  if (state.refreshS > 0) state.timer = setTimeout(refresh, state.refreshS * 1000);
}

// ---- tooltip and drill-down ------------------------------------------------------------------

function cellInfo(i, j) {
  const m = state.model;
  const c = i * m.n + j;
  const k = m.pairAt[c];
  return { src: m.hosts[i], dst: m.hosts[j], state: Object.keys(CELL).find((s) => CELL[s] === m.state[c]), pair: k >= 0 ? m.pairs[k] : null };
}

function tooltipText(info) {
  const lines = [`${info.src} → ${info.dst}  (${state.protocol})`];
  if (info.state === "self") return `${info.src} (itself)`;
  if (info.state === "down") {
    const down = [info.src, info.dst].filter((h) => state.agents.find((a) => a.name === h)?.state === "down");
    lines.push(`agent down: ${down.join(", ")}`);
  }
  const p = info.pair;
  if (!p) { lines.push("no data for this pair"); return lines.join("\n"); }
  if (info.state === "stale") lines.push("STALE: older than 2 windows");
  lines.push(`window end   ${p.endMs ? new Date(p.endMs).toLocaleTimeString() + "  (" + fmtAge(state.model.nowMs - p.endMs) + ")" : "–"}`);
  lines.push(`sent ${p.sent ?? "–"}  received ${p.received ?? "–"}  lost ${p.lost ?? "–"}`);
  lines.push(`loss         ${fmtRatio(p.loss)}`);
  lines.push(`late+dup     ${fmtRatio(p.lateDup)}  (late ${p.late ?? "–"}, dup ${p.duplicate ?? "–"})`);
  lines.push(`network RTT  p50 ${fmtUs(p.p50)}  p90 ${fmtUs(p.p90)}`);
  lines.push(`             p99 ${fmtUs(p.p99)}  max ${fmtUs(p.max)}`);
  lines.push("click for history");
  return lines.join("\n");
}

const tip = $("tooltip");
$("heatmap").addEventListener("mousemove", (ev) => {
  const h = heatmap.hit(ev.clientX, ev.clientY);
  if (!h || !state.model) { tip.hidden = true; return; }
  tip.textContent = tooltipText(cellInfo(h.i, h.j));
  tip.hidden = false;
  const x = ev.clientX + 14, y = ev.clientY + 14;
  tip.style.left = `${Math.min(x, window.innerWidth - tip.offsetWidth - 4)}px`;
  tip.style.top = `${Math.min(y, window.innerHeight - tip.offsetHeight - 4)}px`;
});
$("heatmap").addEventListener("mouseleave", () => { tip.hidden = true; });
$("heatmap").addEventListener("click", (ev) => {
  const h = heatmap.hit(ev.clientX, ev.clientY);
  if (!h || h.i === h.j) return;
  const info = cellInfo(h.i, h.j);
  openHistory(info.src, info.dst);
});

function openHistory(src, dst) {
  state.history = { src, dst, rangeS: state.history?.rangeS ?? 3600, windows: null };
  $("history").hidden = false;
  $("history-title").textContent = `${src} → ${dst}  ·  ${state.protocol.toUpperCase()}`;
  loadHistory();
}

async function loadHistory() {
  const h = state.history;
  if (!h) return;
  const now = state.model?.nowMs ?? Date.now();
  const since = now - h.rangeS * 1000;
  try {
    const r = await getJSON(api.history(state.protocol, h.src, h.dst, since));
    if (state.history !== h) return;  // closed or replaced while loading
    h.windows = normalizeHistory(r.json);
    // When the pair has less history than the range asked for, fit the time axis to what exists
    // (a fresh controller would otherwise squeeze everything against the right edge).
    const first = h.windows.length ? h.windows[0].endMs - (state.model?.windowMs ?? 0) : since;
    drawHistory(Math.max(since, first), now, since);
  } catch (e) {
    $("history-note").textContent = String(e.message ?? e);
  }
}

function drawHistory(tMin, tMax, since) {
  const h = state.history;
  const w = h.windows;
  $("history-note").textContent = w.length
    ? `${w.length} windows since ${new Date(since).toLocaleString()}` +
      (tMin > since ? ` (the first at ${new Date(w[0].endMs).toLocaleTimeString()})` : "") +
      "; gaps are windows the controller does not hold"
    : "no windows for this pair in the selected range";
  // Gaps: break the line where consecutive windows are further apart than 2 window lengths.
  const gap = 2 * (state.model?.windowMs ?? Infinity);
  const pts = (f, scale = 1) => {
    const out = [];
    for (let k = 0; k < w.length; k++) {
      if (k > 0 && w[k].endMs - w[k - 1].endMs > gap) out.push([w[k].endMs, null]);
      out.push([w[k].endMs, w[k][f] == null ? null : w[k][f] * scale]);
    }
    return out;
  };
  drawChart($("history-rtt"), [
    { label: "p50", color: "#2f6fdf", points: pts("p50") },
    { label: "p90", color: "#1a9850", points: pts("p90") },
    { label: "p99", color: "#e8a33d", points: pts("p99") },
    { label: "max", color: "#d73027", points: pts("max") },
  ], { tMin, tMax, yFmt: fmtUs, title: "network RTT", yEmptyMax: 100 });
  drawChart($("history-loss"), [
    { label: "loss", color: "#d73027", points: pts("loss", 100) },
  ], { tMin, tMax, yFmt: (v) => `${+v.toFixed(2)} %`, title: "loss", bars: true, yEmptyMax: 1 });
}

$("history-close").addEventListener("click", () => { state.history = null; $("history").hidden = true; });
$("history-ranges").addEventListener("click", (ev) => {
  const b = ev.target.closest("button");
  if (!b || !state.history) return;
  for (const x of $("history-ranges").querySelectorAll("button")) x.classList.toggle("active", x === b);
  state.history.rangeS = Number(b.dataset.range);
  state.history.windows = null;  // until the new range arrives
  loadHistory();
});

// ---- views and controls ----------------------------------------------------------------------

function showView() {
  const agents = location.hash === "#agents";
  $("view-mesh").hidden = agents;
  $("view-agents").hidden = !agents;
  $("mesh-controls").style.visibility = agents ? "hidden" : "visible";
  $("tab-mesh").classList.toggle("active", !agents);
  $("tab-agents").classList.toggle("active", agents);
  if (!agents) drawMesh();
}
window.addEventListener("hashchange", showView);
window.addEventListener("resize", () => drawMesh());

$("protocol").addEventListener("change", () => { state.protocol = $("protocol").value; fillSelectors(); syncUrl(); refresh(); });
$("group").addEventListener("change", () => { state.group = $("group").value; syncUrl(); refresh(); });
$("metric").addEventListener("change", () => {
  state.metric = METRICS.find((m) => m.id === $("metric").value);
  syncUrl();
  const ms = drawMesh();
  if (state.timings) state.timings.redrawMs = ms;
});
$("refresh").addEventListener("change", () => {
  state.refreshS = Number($("refresh").value);
  syncUrl();
  refresh();
});

// ---- test and benchmark hooks (read-only views of what is on screen) -------------------------

window.weftDashboard = {
  state: () => ({
    renders: state.renders, error: state.error, protocol: state.protocol, group: state.group,
    metric: state.metric.id, hosts: state.model?.hosts ?? [], counts: state.model?.counts ?? null,
    timings: state.timings, history: state.history && { src: state.history.src, dst: state.history.dst, rangeS: state.history.rangeS,
                               windows: state.history.windows?.length ?? null },
  }),
  cell: (src, dst) => {
    const i = state.model?.index.get(src), j = state.model?.index.get(dst);
    if (i === undefined || j === undefined) return null;
    const info = cellInfo(i, j);
    return { state: info.state, pair: info.pair, rect: heatmap.cellRect(i, j), rgb: heatmap.pixel(i, j) };
  },
  // What the topology view drew: { links: { name: state }, nodes: { name: state } }, or null.
  topology: () => state.topologyDrawn,
  // Draws again and says how long it took (ms): for the render benchmark.
  redraw: () => drawMesh(),
};

// ---- start -----------------------------------------------------------------------------------

async function start() {
  $("refresh").value = String(state.refreshS);
  try {
    state.groups = normalizeGroups((await getJSON(api.groups())).json);
  } catch (e) {
    setStatus(String(e.message ?? e), true);
  }
  fillSelectors();
  syncUrl();
  showView();
  await refresh();
  showView();
}
start();
