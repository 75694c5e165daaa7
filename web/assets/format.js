// Number and time formatting shared by the heatmap, tooltip, legend, charts and agents table.

// Microseconds -> "35.2 µs" / "1.84 ms" / "2.10 s"; the unit follows the size.
export function fmtUs(us) {
  if (us == null || !Number.isFinite(us)) return "–";
  const a = Math.abs(us);
  if (a === 0) return "0";
  if (a < 1) return `${(us * 1000).toFixed(0)} ns`;
  if (a < 1000) return `${us.toFixed(a < 10 ? 2 : a < 100 ? 1 : 0)} µs`;
  if (a < 1e6) return `${(us / 1000).toFixed(a < 1e4 ? 2 : a < 1e5 ? 1 : 0)} ms`;
  return `${(us / 1e6).toFixed(2)} s`;
}

// Ratio 0..1 -> "0 %", "0.012 %", "30.1 %".
export function fmtRatio(r) {
  if (r == null || !Number.isFinite(r)) return "–";
  if (r === 0) return "0 %";
  const p = r * 100;
  if (p < 0.01) return `${p.toPrecision(2)} %`;
  if (p < 1) return `${p.toFixed(3)} %`;
  if (p < 10) return `${p.toFixed(2)} %`;
  return `${p.toFixed(1)} %`;
}

// Milliseconds of age -> "4 s ago", "3 min ago", "2 h ago".
export function fmtAge(ms) {
  if (ms == null || !Number.isFinite(ms)) return "never";
  const s = Math.max(0, ms / 1000);
  if (s < 90) return `${s.toFixed(0)} s ago`;
  if (s < 5400) return `${(s / 60).toFixed(0)} min ago`;
  if (s < 172800) return `${(s / 3600).toFixed(1)} h ago`;
  return `${(s / 86400).toFixed(1)} d ago`;
}

export function fmtBytes(b) {
  if (b == null || !Number.isFinite(b)) return "–";
  if (b < 1024) return `${b} B`;
  if (b < 1024 * 1024) return `${(b / 1024).toFixed(0)} KiB`;
  if (b < 1024 ** 3) return `${(b / 1024 / 1024).toFixed(1)} MiB`;
  return `${(b / 1024 ** 3).toFixed(2)} GiB`;
}

export function fmtCount(n) {
  if (n == null || !Number.isFinite(n)) return "–";
  return n >= 1e4 ? n.toLocaleString("en-US") : String(n);
}

export function fmtClock(ms, withSeconds = true) {
  const d = new Date(ms);
  const p = (x) => String(x).padStart(2, "0");
  const hm = `${p(d.getHours())}:${p(d.getMinutes())}`;
  if (!withSeconds && d.getHours() === 0 && d.getMinutes() === 0) return `${d.getMonth() + 1}/${d.getDate()}`;
  return withSeconds ? `${hm}:${p(d.getSeconds())}` : hm;
}

// Host names sorted as people expect: h2 before h10.
export const byName = new Intl.Collator("en", { numeric: true, sensitivity: "base" }).compare;

export function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}
