// The controller's JSON API (docs/api.md), turned into the few plain shapes the page draws.
// The normalisers accept the documented field names and nothing is invented: a field the
// controller did not send stays null and is shown as "–".

import { byName } from "./format.js";

export class ApiError extends Error {}

// GET a JSON document. Returns { json, bytes, fetchMs, parseMs, serverNowMs }.
export async function getJSON(url) {
  const t0 = performance.now();
  let resp;
  try {
    resp = await fetch(url, { cache: "no-store" });
  } catch (e) {
    throw new ApiError(`${url}: controller unreachable (${e.message})`);
  }
  const text = await resp.text();
  const t1 = performance.now();
  if (!resp.ok) {
    let msg = text.slice(0, 200);
    try { msg = JSON.parse(text).error ?? msg; } catch { /* not JSON: keep the text */ }
    throw new ApiError(`${url}: HTTP ${resp.status} ${msg}`);
  }
  const json = JSON.parse(text);
  const t2 = performance.now();
  const date = Date.parse(resp.headers.get("Date") ?? "");
  return { json, bytes: text.length, fetchMs: t1 - t0, parseMs: t2 - t1, serverNowMs: Number.isFinite(date) ? date : null };
}

// Timestamps: Unix ns / µs / ms / s as numbers (told apart by size), or RFC 3339 strings -> ms.
export function toMs(t) {
  if (t == null) return null;
  if (typeof t === "string") {
    if (/^\d+(\.\d+)?$/.test(t)) return toMs(Number(t));
    const v = Date.parse(t);
    return Number.isFinite(v) ? v : null;
  }
  if (!Number.isFinite(t)) return null;
  if (t > 1e17) return t / 1e6;  // ns
  if (t > 1e14) return t / 1e3;  // µs
  if (t > 1e11) return t;        // ms
  return t * 1000;               // s
}

const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);

// /api/v1/groups -> { protocols: [..], groups: [{ name, protocols: [..], members: [..] }], windowMs }
export function normalizeGroups(json) {
  const groups = (json.groups ?? []).map((g) => ({
    name: String(g.name),
    protocols: (g.protocols ?? []).map(String),
    members: (g.members ?? []).map(String),
  }));
  let protocols = (json.protocols ?? []).map(String);
  if (!protocols.length) protocols = [...new Set(groups.flatMap((g) => g.protocols))];
  return { protocols, groups, windowMs: windowMsOf(json) };
}

function windowMsOf(json) {
  if (num(json.window_ns) != null) return json.window_ns / 1e6;
  if (num(json.window_ms) != null) return json.window_ms;
  if (num(json.window_s) != null) return json.window_s * 1000;
  return null;
}

// One pair window from the mesh or history API. RTTs in µs, ratios 0..1, times in ms.
export function normalizeWindow(p) {
  const rtt = p.network_rtt_us ?? {};
  const sent = num(p.sent), lost = num(p.lost), late = num(p.late), dup = num(p.duplicate);
  let loss = num(p.loss_ratio);
  if (loss == null && sent) loss = (lost ?? 0) / sent;
  let lateDup = null;
  if (sent && (late != null || dup != null)) lateDup = ((late ?? 0) + (dup ?? 0)) / sent;
  return {
    src: p.src == null ? null : String(p.src),
    dst: p.dst == null ? null : String(p.dst),
    startMs: toMs(p.window_start),
    endMs: toMs(p.window_end),
    // How old the window is by the controller's clock (the browser's clock may differ).
    ageMs: num(p.age_s) == null ? null : p.age_s * 1000,
    sent, received: num(p.received), lost, late, duplicate: dup,
    loss, lateDup,
    p50: num(rtt.p50), p90: num(rtt.p90), p99: num(rtt.p99), max: num(rtt.max),
    timestampSource: p.timestamp_source ?? null,
  };
}

// The columnar mesh (format=columns: one array per field, hosts by index) -> pair objects in
// normalizeWindow's shape. Times come as the controller's "now" and each window's age.
function columnsToPairs(json) {
  const c = json.columns ?? {}, hosts = json.hosts ?? [];
  const n = (c.src ?? []).length, nowMs = toMs(json.now), windowMs = windowMsOf(json);
  const pairs = new Array(n);
  for (let k = 0; k < n; k++) {
    const sent = c.sent[k], lost = c.lost[k], late = c.late[k], dup = c.duplicate[k];
    const ageMs = c.age_ms[k];
    const endMs = nowMs == null ? null : nowMs - ageMs;
    pairs[k] = {
      src: hosts[c.src[k]], dst: hosts[c.dst[k]],
      startMs: endMs == null || windowMs == null ? null : endMs - windowMs, endMs, ageMs,
      sent, received: c.received[k], lost, late, duplicate: dup,
      loss: sent ? lost / sent : null, lateDup: sent ? (late + dup) / sent : null,
      p50: c.p50_us[k], p90: c.p90_us[k], p99: c.p99_us[k], max: c.max_us[k],
      timestampSource: c.source[k],
    };
  }
  return pairs;
}

// /api/v1/mesh (rows or columns) -> { protocol, windowMs, nowMs, hosts, pairs }
export function normalizeMesh(json, serverNowMs) {
  const pairs = json.format === "columns" ? columnsToPairs(json) : (json.pairs ?? []).map(normalizeWindow);
  // "Now" on the controller's clock: a window's end plus its age, when the controller says it.
  const aged = pairs.find((p) => p.endMs != null && p.ageMs != null);
  let windowMs = windowMsOf(json);
  if (windowMs == null) {
    // Fall back to the windows' own length (end - start) when the controller does not say.
    const w = pairs.find((p) => p.startMs != null && p.endMs != null);
    if (w) windowMs = w.endMs - w.startMs;
  }
  return {
    protocol: json.protocol ?? null,
    windowMs,
    nowMs: toMs(json.now) ?? (aged ? aged.endMs + aged.ageMs : null) ?? serverNowMs ?? Date.now(),
    hosts: Array.isArray(json.hosts) ? json.hosts.map(String) : null,
    pairs,
  };
}

// /api/v1/agents -> [{ name, state, lastSeenMs, lastSeenAgeMs, version, probesPerS, cpuPercent, rssBytes, alarms, addresses }]
export function normalizeAgents(json) {
  const list = Array.isArray(json) ? json : (json.agents ?? []);
  return list.map((a) => {
    const h = a.health ?? {};
    const rssKb = num(h.rss_kb) ?? num(a.rss_kb);
    return {
      name: String(a.name),
      state: String(a.state ?? "unknown"),
      lastSeenMs: toMs(a.last_seen),
      lastSeenAgeMs: num(a.last_seen_age_s) == null ? null : a.last_seen_age_s * 1000,
      version: a.version ?? null,
      probesPerS: num(h.probes_per_s) ?? num(a.probes_per_s),
      cpuPercent: num(h.cpu_percent) ?? num(a.cpu_percent),
      rssBytes: rssKb == null ? null : rssKb * 1024,
      droppedWindows: num(h.dropped_windows),
      alarms: (a.alarms ?? []).map((x) => (typeof x === "string" ? { kind: x, message: "" } : { kind: String(x.kind ?? ""), message: String(x.message ?? "") })),
      addresses: (a.addresses ?? []).map(String),
    };
  }).sort((a, b) => byName(a.name, b.name));
}

// /api/v1/pairs/{src}/{dst}/history -> windows sorted by end time
export function normalizeHistory(json) {
  const list = Array.isArray(json) ? json : (json.windows ?? json.history ?? []);
  return list.map(normalizeWindow).filter((w) => w.endMs != null).sort((a, b) => a.endMs - b.endMs);
}

export const api = {
  groups: () => "/api/v1/groups",
  agents: () => "/api/v1/agents",
  topology: () => "/api/v1/topology",
  suspects: (protocol) => `/api/v1/suspects?protocol=${encodeURIComponent(protocol)}`,
  mesh: (protocol, group) => `/api/v1/mesh?format=columns&protocol=${encodeURIComponent(protocol)}` + (group ? `&group=${encodeURIComponent(group)}` : ""),
  history: (protocol, src, dst, sinceMs) =>
    `/api/v1/pairs/${encodeURIComponent(src)}/${encodeURIComponent(dst)}/history?protocol=${encodeURIComponent(protocol)}&since=${Math.floor(sinceMs / 1000)}`,
};
