// The fabric as the controller knows it (GET /api/v1/topology, docs/api.md): spines on top, one box
// per rack with its ToR and hosts below, every link a line. Elements are coloured by state: the
// topology's own `state` map and the elements /api/v1/suspects names (its `elements`, worst
// first) mark them suspect; a host whose agent is down is drawn dark. One inline SVG (no library),
// hidden when the controller has no topology.
import { escapeHtml, fmtRatio, fmtUs } from "./format.js";

const SVG = "http://www.w3.org/2000/svg";
const HOST_W = 46, HOST_GAP = 8, RACK_PAD = 12, RACK_GAP = 24, NODE_H = 24;
const Y_SPINE = 16, Y_TOR = 110, Y_HOST = 180;

// GET /api/v1/topology -> { spines: [..], racks: [{ name, tor, hosts: [..] }], links: [{ name, a, b }],
// state: { name: "suspect" | ... } }, or null when no topology is configured.
export function normalizeTopology(json) {
  if (!json || !json.configured || !Array.isArray(json.elements) || !json.elements.length) return null;
  const spines = [], racks = new Map(), links = [];
  const rack = (name) => {
    if (!racks.has(name)) racks.set(name, { name, tor: null, hosts: [] });
    return racks.get(name);
  };
  for (const e of json.elements) {
    const name = String(e.name);
    if (e.type === "spine") spines.push(name);
    else if (e.type === "tor") rack(String(e.rack ?? name)).tor = name;
    else if (e.type === "host") rack(String(e.rack ?? "")).hosts.push(name);
    else if (e.type === "link" && Array.isArray(e.ends) && e.ends.length === 2)
      links.push({ name, a: String(e.ends[0]), b: String(e.ends[1]) });
  }
  return { spines, racks: [...racks.values()], links, state: json.state ?? {} };
}

// The state each element is drawn in: "suspect", "warn" (flapping, or a state the page does not
// know), "down" (a host whose agent is down) or "ok"; with the suspect entry that explains it.
export function elementStates(topo, suspects, agents) {
  const out = new Map();
  for (const [name, s] of Object.entries(topo.state ?? {})) {
    if (s && s !== "ok") out.set(name, { state: s === "suspect" ? "suspect" : "warn", why: null });
  }
  for (const e of suspects?.elements ?? []) {
    out.set(String(e.name), { state: e.reason === "flapping" ? "warn" : "suspect", why: e });
  }
  for (const a of agents ?? []) {
    if (a.state === "down" && !out.has(a.name)) out.set(a.name, { state: "down", why: null });
  }
  return out;
}

function el(tag, attrs, parent) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

function describe(type, name, st) {
  const lines = [`${type} ${name}`];
  if (!st) return lines.concat("no fault named").join("\n");
  const w = st.why;
  if (!w) return lines.concat(st.state === "down" ? "agent down" : `state: ${st.state}`).join("\n");
  lines.push(`suspect: ${w.reason ?? "?"}, confidence ${w.confidence ?? "–"}`);
  if (w.loss_ratio != null) lines.push(`loss ${fmtRatio(w.loss_ratio)}`);
  if (w.extra_latency_ns) lines.push(`extra latency ${fmtUs(w.extra_latency_ns / 1000)}`);
  const ev = w.evidence;
  if (ev) {
    lines.push(`${ev.bad_flows ?? "?"} of ${ev.flows ?? "?"} flows bad over ${ev.pairs ?? "?"} pairs`);
    for (const x of (ev.examples ?? []).slice(0, 4)) lines.push(`  ${x}`);
  }
  return lines.join("\n");
}

// Draws the topology into `wrap` (hidden when there is none). Returns what it drew, for the tests.
export function renderTopology(wrap, topo, suspects, agents) {
  if (!topo) {
    wrap.hidden = true;
    wrap.replaceChildren();
    return null;
  }
  wrap.hidden = false;
  const states = elementStates(topo, suspects, agents);
  const pos = new Map();  // element name -> { x, y } of its node's centre
  let x = RACK_PAD;
  const rackBoxes = [];
  for (const r of topo.racks) {
    const w = Math.max(1, r.hosts.length) * (HOST_W + HOST_GAP) - HOST_GAP + 2 * RACK_PAD;
    rackBoxes.push({ r, x, w });
    if (r.tor) pos.set(r.tor, { x: x + w / 2, y: Y_TOR });
    r.hosts.forEach((h, k) => pos.set(h, { x: x + RACK_PAD + k * (HOST_W + HOST_GAP) + HOST_W / 2, y: Y_HOST }));
    x += w + RACK_GAP;
  }
  const width = Math.max(x - RACK_GAP + RACK_PAD, topo.spines.length * 90);
  topo.spines.forEach((s, k) => pos.set(s, { x: (width * (k + 0.5)) / topo.spines.length, y: Y_SPINE + NODE_H / 2 }));
  const height = Y_HOST + NODE_H + 22;

  const svg = el("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
                          "aria-label": "topology: spines, racks, links coloured by state" });
  for (const b of rackBoxes) {
    el("rect", { x: b.x - 4, y: Y_TOR - NODE_H / 2 - 18, width: b.w + 8, height: Y_HOST - Y_TOR + NODE_H + 40,
                 rx: 6, class: "rack" }, svg);
    const t = el("text", { x: b.x + 2, y: height - 6, class: "rack-label" }, svg);
    t.textContent = b.r.name;
  }
  const drawn = { links: {}, nodes: {} };
  for (const l of topo.links) {
    const a = pos.get(l.a), b = pos.get(l.b);
    if (!a || !b) continue;
    const st = states.get(l.name);
    const state = st?.state ?? "ok";
    const g = el("g", { class: `link ${state}`, "data-name": l.name, "data-state": state }, svg);
    el("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y }, g);
    el("title", {}, g).textContent = describe("link", l.name, st);
    drawn.links[l.name] = state;
  }
  const node = (type, name) => {
    const p = pos.get(name);
    if (!p) return;
    const st = states.get(name);
    const state = st?.state ?? "ok";
    const w = type === "host" ? HOST_W : 70;
    const g = el("g", { class: `node ${type} ${state}`, "data-name": name, "data-state": state }, svg);
    el("rect", { x: p.x - w / 2, y: p.y - NODE_H / 2, width: w, height: NODE_H, rx: 4 }, g);
    const t = el("text", { x: p.x, y: p.y + 4, "text-anchor": "middle" }, g);
    t.textContent = name.length > 9 ? `${name.slice(0, 8)}…` : name;
    el("title", {}, g).textContent = describe(type, name, st);
    drawn.nodes[name] = state;
  };
  topo.spines.forEach((s) => node("spine", s));
  for (const r of topo.racks) {
    if (r.tor) node("tor", r.tor);
    r.hosts.forEach((h) => node("host", h));
  }
  const named = [...states.entries()].filter(([, s]) => s.state !== "down").map(([n]) => n);
  const head = document.createElement("div");
  head.className = "topology-head";
  head.innerHTML = `<b>Topology</b> <span class="muted">${topo.spines.length} spines, ${topo.racks.length} racks` +
    (named.length ? `; suspect: ${named.map(escapeHtml).join(", ")}` : "; nothing suspect") + "</span>";
  wrap.replaceChildren(head, svg);
  return drawn;
}
