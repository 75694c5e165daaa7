// The agents table: one row per agent, down agents and agents with alarms first.
import { escapeHtml, fmtAge, fmtBytes, fmtCount, byName } from "./format.js";

function lastSeen(a, nowMs) {
  if (!a.lastSeenMs) return "never";
  return fmtAge(a.lastSeenAgeMs ?? nowMs - a.lastSeenMs);
}

export function renderAgents(tbody, agents, nowMs) {
  const rank = (a) => (a.state === "down" ? 0 : a.alarms.length ? 1 : 2);
  const rows = [...agents].sort((a, b) => rank(a) - rank(b) || byName(a.name, b.name));
  tbody.innerHTML = rows.map((a) => {
    const state = ["up", "down"].includes(a.state) ? a.state : "unknown";
    const alarms = a.alarms.map((x) => `<div class="alarm">${escapeHtml(x.kind)}${x.message ? ": " + escapeHtml(x.message) : ""}</div>`).join("");
    return `<tr data-agent="${escapeHtml(a.name)}">
      <td>${escapeHtml(a.name)}</td>
      <td><span class="badge ${state}">${escapeHtml(a.state)}</span></td>
      <td title="${a.lastSeenMs ? new Date(a.lastSeenMs).toISOString() : ""}">${lastSeen(a, nowMs)}</td>
      <td>${escapeHtml(a.version ?? "–")}</td>
      <td class="num">${a.probesPerS == null ? "–" : fmtCount(Math.round(a.probesPerS))}</td>
      <td class="num">${a.cpuPercent == null ? "–" : a.cpuPercent.toFixed(1) + " %"}</td>
      <td class="num">${fmtBytes(a.rssBytes)}</td>
      <td>${escapeHtml(a.addresses.join(", "))}</td>
      <td>${alarms || "–"}</td>
    </tr>`;
  }).join("");
}
