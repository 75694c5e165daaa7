// What each heatmap metric reads from a window, how it maps to a colour, and what the legend says.
import { fmtRatio, fmtUs } from "./format.js";

// Green (good) -> yellow -> red (bad): a diverging ramp that stays readable for the common
// red-green colour deficiencies because lightness changes along it too.
const STOPS = [
  [0.0, [26, 152, 80]],
  [0.25, [145, 207, 96]],
  [0.5, [254, 224, 139]],
  [0.75, [252, 141, 89]],
  [1.0, [215, 48, 39]],
];

export function rampRGB(t) {
  t = Math.min(1, Math.max(0, t));
  for (let i = 1; i < STOPS.length; i++) {
    const [t1, c1] = STOPS[i];
    if (t <= t1) {
      const [t0, c0] = STOPS[i - 1];
      const f = (t - t0) / (t1 - t0);
      return [0, 1, 2].map((k) => Math.round(c0[k] + (c1[k] - c0[k]) * f));
    }
  }
  return STOPS[STOPS.length - 1][1];
}

// Cell states, also the index into SPECIAL colours.
export const CELL = { self: 0, ok: 1, missing: 2, stale: 3, down: 4 };
export const SPECIAL = {
  self: [255, 255, 255],
  missing: [206, 210, 216],  // light grey: nothing ever reported for this pair
  down: [34, 34, 40],        // near black: the source or destination agent is down
};
// Stale windows keep their colour's hue but are washed out towards this grey, so an old red
// is still recognisably red-ish yet never mistaken for a current measurement.
export const STALE_TOWARDS = [190, 196, 206];
export const STALE_MIX = 0.7;

export function staleRGB(rgb) {
  return rgb.map((c, k) => Math.round(c * (1 - STALE_MIX) + STALE_TOWARDS[k] * STALE_MIX));
}

const LOSS_FLOOR = 1e-4;  // 0.01 %: below this a non-zero ratio still shows as "some"

// Ratio metrics share a fixed log scale: 0 is green, 0.01 % is light green, 1 % yellow-orange, 30 %+ red.
function ratioScale() {
  const lo = Math.log10(LOSS_FLOOR), hi = Math.log10(0.3);
  return {
    domain: [0, 0.3],
    pos: (v) => (v <= 0 ? 0 : 0.15 + 0.85 * Math.min(1, Math.max(0, (Math.log10(Math.max(v, LOSS_FLOOR)) - lo) / (hi - lo)))),
    ticks: [0, 1e-4, 1e-3, 1e-2, 0.1, 0.3],
    fmt: fmtRatio,
    topLabel: "≥ 30 %",
  };
}

// RTT: log scale fitted to the data on screen, from the smallest value to the larger of the
// largest value and 4x the median, so a healthy, uniform mesh stays green-to-yellow and only
// outliers turn red. The legend shows the actual numbers.
function rttScale(values) {
  const v = Float64Array.from(values).sort();  // positive values only (the caller filters)
  let lo = v.length ? v[0] : 10, hi = v.length ? v[v.length - 1] : 1000;
  const med = v.length ? v[v.length >> 1] : 100;
  hi = Math.max(hi, med * 4, lo * 2);
  const llo = Math.log10(lo), lhi = Math.log10(hi);
  const ticks = [];
  for (let e = Math.floor(llo); e <= Math.ceil(lhi); e++) {
    for (const m of [1, 2, 3, 5]) {
      const t = m * 10 ** e;
      if (t >= lo && t <= hi) ticks.push(t);
    }
  }
  if (ticks.length > 6) ticks.splice(0, ticks.length, ...ticks.filter((_, i) => i % Math.ceil(ticks.length / 6) === 0));
  return {
    domain: [lo, hi],
    pos: (x) => (lhi - llo < 1e-9 ? 0 : (Math.log10(Math.max(lo, Math.min(hi, x))) - llo) / (lhi - llo)),
    ticks: [lo, ...ticks.filter((t) => t > lo * 1.15 && t < hi / 1.15), hi],
    fmt: fmtUs,
  };
}

export const METRICS = [
  { id: "p50", label: "network RTT p50", unit: "µs / ms", field: "p50", kind: "rtt" },
  { id: "p99", label: "network RTT p99", unit: "µs / ms", field: "p99", kind: "rtt" },
  { id: "max", label: "network RTT max", unit: "µs / ms", field: "max", kind: "rtt" },
  { id: "loss", label: "loss ratio", unit: "% of probes", field: "loss", kind: "ratio" },
  { id: "latedup", label: "late + duplicate ratio", unit: "% of probes", field: "lateDup", kind: "ratio" },
];

export function scaleFor(metric, values) {
  return metric.kind === "ratio" ? ratioScale() : rttScale(values);
}
