// The controller's verdict on the current mesh (GET /api/v1/suspects, docs/api.md): the hosts and
// links it blames, worst first, in one line under the summary. Computed by the controller over all
// pairs of the protocol (not only the selected group), so the page and scripts agree.
import { escapeHtml, fmtRatio, fmtUs } from "./format.js";

const DIRECTION = { in: "receiving", out: "sending", both: "both ways" };
const SHOWN = 8;  // more than this is a bigger problem than a list can explain

export function renderSuspects(el, v, protocol) {
  if (!v) {
    el.textContent = "";
    return;
  }
  const items = [];
  // With a topology the controller names elements (spine, ToR, link, host), worst first.
  for (const e of v.elements ?? []) {
    const what = [e.reason];
    if (e.loss_ratio) what.push(`${fmtRatio(e.loss_ratio)} lost`);
    if (e.extra_latency_ns) what.push(`+${fmtUs(e.extra_latency_ns / 1000)}`);
    items.push(`${escapeHtml(e.type)} <b>${escapeHtml(e.name)}</b> (${what.filter(Boolean).map(escapeHtml).join(", ")})`);
  }
  for (const h of v.hosts ?? [])
    items.push(`host <b>${escapeHtml(h.host)}</b> (${DIRECTION[h.direction] ?? escapeHtml(h.direction)}: ` +
      `${h.bad_pairs} of ${h.pairs} pairs bad, ${fmtRatio(h.loss_ratio)} loss)`);
  for (const l of v.links ?? [])
    items.push(`link <b>${escapeHtml(l.src)} → ${escapeHtml(l.dst)}</b> (${fmtRatio(l.loss_ratio)} loss)`);
  const scope = `${v.measured_pairs ?? 0} current ${escapeHtml(protocol)} pairs, loss ≥ ${fmtRatio(v.loss_threshold)} counts as bad`;
  if (!items.length) {
    el.innerHTML = `No suspects <span class="muted">(${scope})</span>`;
    return;
  }
  const more = items.length > SHOWN ? `, and ${items.length - SHOWN} more` : "";
  el.innerHTML = `<b class="alarm">Suspect${items.length > 1 ? "s" : ""}:</b> ${items.slice(0, SHOWN).join(", ")}${more} ` +
    `<span class="muted">(${scope})</span>`;
}
