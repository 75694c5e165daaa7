// A small time-series chart on a canvas: lines (RTT percentiles) or bars (loss), time on x.
import { fmtClock } from "./format.js";

function niceStep(span, target) {
  const raw = span / Math.max(1, target);
  const e = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * e >= raw) return m * e;
  return 10 * e;
}

// Tick spacing on a clock: whole seconds, minutes or hours people read at a glance.
const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400]
  .map((s) => s * 1000);
function timeStep(span, target) {
  const raw = span / Math.max(1, target);
  return TIME_STEPS.find((s) => s >= raw) ?? Math.ceil(raw / 86400000) * 86400000;
}

// series: [{ label, color, points: [[tMs, value|null], ...] }]; opts: { tMin, tMax, yFmt, title, bars, yMin }
export function drawChart(canvas, series, opts) {
  const dpr = window.devicePixelRatio || 1;
  const W = canvas.clientWidth || 600, H = canvas.clientHeight || 200;
  canvas.width = Math.round(W * dpr);
  canvas.height = Math.round(H * dpr);
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, W, H);
  ctx.font = "11px system-ui, sans-serif";

  const L = 70, R = 12, T = 22, B = 22;
  const pw = W - L - R, ph = H - T - B;
  const { tMin, tMax } = opts;
  let yMax = 0;
  for (const s of series) for (const [, v] of s.points) if (v != null && v > yMax) yMax = v;
  if (yMax <= 0) yMax = opts.yEmptyMax ?? 1;
  const yMin = opts.yMin ?? 0;
  const step = niceStep(yMax - yMin, 4);
  yMax = Math.ceil(yMax / step) * step;
  const X = (t) => L + ((t - tMin) / Math.max(1, tMax - tMin)) * pw;
  const Y = (v) => T + ph - ((v - yMin) / (yMax - yMin)) * ph;

  // Axes and grid.
  ctx.strokeStyle = "#e3e6ea";
  ctx.fillStyle = "#66707c";
  ctx.lineWidth = 1;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (let v = yMin; v <= yMax + step / 2; v += step) {
    ctx.beginPath();
    ctx.moveTo(L, Math.round(Y(v)) + 0.5);
    ctx.lineTo(L + pw, Math.round(Y(v)) + 0.5);
    ctx.stroke();
    ctx.fillText(opts.yFmt(v), L - 6, Y(v));
  }
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  const tStep = timeStep(tMax - tMin, Math.max(2, Math.floor(pw / 110)));
  // Ticks fall on local-time boundaries (a 15 min step gives :00 :15 :30 :45).
  const tz = new Date(tMin).getTimezoneOffset() * 60000;
  for (let t = Math.ceil((tMin - tz) / tStep) * tStep + tz; t <= tMax; t += tStep) {
    ctx.fillText(fmtClock(t, tStep < 60000), X(t), T + ph + 5);
  }
  ctx.textAlign = "left";
  ctx.fillStyle = "#1d232b";
  ctx.fillText(opts.title, L, 4);

  // Legend entries after the title.
  let lx = L + ctx.measureText(opts.title).width + 18;
  for (const s of series) {
    ctx.fillStyle = s.color;
    ctx.fillRect(lx, 7, 14, 3);
    ctx.fillStyle = "#1d232b";
    ctx.fillText(s.label, lx + 18, 4);
    lx += 26 + ctx.measureText(s.label).width;
  }

  ctx.save();
  ctx.beginPath();
  ctx.rect(L, T, pw, ph);
  ctx.clip();
  for (const s of series) {
    ctx.strokeStyle = s.color;
    ctx.fillStyle = s.color;
    if (opts.bars) {
      const bw = Math.max(1, Math.min(12, pw / Math.max(1, s.points.length) - 1));
      for (const [t, v] of s.points) if (v != null && v > 0) ctx.fillRect(X(t) - bw / 2, Y(v), bw, Y(yMin) - Y(v));
      continue;
    }
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    let pen = false;
    for (const [t, v] of s.points) {
      if (v == null) { pen = false; continue; }  // a gap in the data stays a gap in the line
      if (pen) ctx.lineTo(X(t), Y(v)); else ctx.moveTo(X(t), Y(v));
      pen = true;
    }
    ctx.stroke();
    if (s.points.length < 60) for (const [t, v] of s.points) if (v != null) ctx.fillRect(X(t) - 1.5, Y(v) - 1.5, 3, 3);
  }
  ctx.restore();
  ctx.strokeStyle = "#9aa3ad";
  ctx.strokeRect(L + 0.5, T + 0.5, pw, ph);
}
