// The source x destination heatmap, drawn on one canvas. At 500 hosts that is 250,000 cells, far
// too many for DOM elements, so the cells are written as pixels of an n x n image, scaled up
// without smoothing, and the mouse is mapped back to a cell by arithmetic (no per-cell objects).
import { CELL, SPECIAL, rampRGB, scaleFor, staleRGB } from "./scale.js";

const LABEL_FONT = "11px system-ui, sans-serif";
const PAD = 8;

// Builds the per-cell arrays for one protocol/group. hosts: ordered names (rows = sources,
// columns = destinations). agentState: Map name -> "up" | "down" | ...
export function buildModel(hosts, mesh, agentState) {
  const n = hosts.length;
  const index = new Map(hosts.map((h, i) => [h, i]));
  const pairAt = new Int32Array(n * n).fill(-1);
  const state = new Uint8Array(n * n).fill(CELL.missing);
  const staleBefore = mesh.windowMs ? mesh.nowMs - 2 * mesh.windowMs : -Infinity;
  for (let k = 0; k < mesh.pairs.length; k++) {
    const p = mesh.pairs[k];
    const i = index.get(p.src), j = index.get(p.dst);
    if (i === undefined || j === undefined) continue;  // not in this group
    pairAt[i * n + j] = k;
    const stale = p.ageMs != null && mesh.windowMs ? p.ageMs > 2 * mesh.windowMs : p.endMs != null && p.endMs < staleBefore;
    state[i * n + j] = stale ? CELL.stale : CELL.ok;
  }
  const down = hosts.map((h) => agentState.get(h) === "down");
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      if (i === j) state[i * n + j] = CELL.self;
      else if (down[i] || down[j]) state[i * n + j] = CELL.down;
    }
  }
  const counts = { ok: 0, missing: 0, stale: 0, down: 0 };
  for (let c = 0; c < n * n; c++) {
    const s = state[c];
    if (s === CELL.ok) counts.ok++;
    else if (s === CELL.missing) counts.missing++;
    else if (s === CELL.stale) counts.stale++;
    else if (s === CELL.down) counts.down++;
  }
  return { hosts, n, index, pairs: mesh.pairs, pairAt, state, counts, windowMs: mesh.windowMs, nowMs: mesh.nowMs };
}

function packRGB([r, g, b]) {
  return ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;  // ImageData bytes are RGBA; little-endian view
}

export class Heatmap {
  constructor(canvas) {
    this.canvas = canvas;
    this.ctx = canvas.getContext("2d");
    this.image = document.createElement("canvas");
    this.model = null;
    this.geom = null;
    this.lut = new Uint32Array(256);
    this.staleLut = new Uint32Array(256);
    for (let k = 0; k < 256; k++) {
      const rgb = rampRGB(k / 255);
      this.lut[k] = packRGB(rgb);
      this.staleLut[k] = packRGB(staleRGB(rgb));
    }
  }

  // Draws `model` coloured by `metric` into at most maxW x maxH CSS pixels. Returns the scale.
  draw(model, metric, maxW, maxH) {
    this.model = model;
    const { n, pairs, pairAt, state } = model;
    const field = metric.field;
    const values = new Float32Array(n * n).fill(NaN);
    // Current values for fitting the RTT scale, in a typed array: its sort is numeric and
    // several times faster than sorting a JS array of 250,000 numbers.
    const forScale = new Float64Array(n * n);
    let m = 0;
    for (let c = 0; c < n * n; c++) {
      const k = pairAt[c];
      if (k < 0) continue;
      const v = pairs[k][field];
      if (v == null) continue;
      values[c] = v;
      if (state[c] === CELL.ok && metric.kind === "rtt" && v > 0) forScale[m++] = v;
    }
    const scale = scaleFor(metric, forScale.subarray(0, m));
    this.scale = scale;
    this.metric = metric;
    this.values = values;

    // 1. One pixel per cell.
    this.image.width = Math.max(1, n);
    this.image.height = Math.max(1, n);
    const ictx = this.image.getContext("2d");
    const img = ictx.createImageData(Math.max(1, n), Math.max(1, n));
    const px = new Uint32Array(img.data.buffer);
    const cSelf = packRGB(SPECIAL.self), cMissing = packRGB(SPECIAL.missing), cDown = packRGB(SPECIAL.down);
    for (let c = 0; c < n * n; c++) {
      const s = state[c];
      if (s === CELL.self) px[c] = cSelf;
      else if (s === CELL.down) px[c] = cDown;
      else if (s === CELL.missing || Number.isNaN(values[c])) px[c] = cMissing;
      else {
        const k = Math.round(scale.pos(values[c]) * 255);
        px[c] = s === CELL.stale ? this.staleLut[k] : this.lut[k];
      }
    }
    ictx.putImageData(img, 0, 0);

    // 2. Geometry: labels on the left (sources) and top (destinations), as many as fit.
    const ctx = this.ctx;
    ctx.font = LABEL_FONT;
    let labelW = 0;
    for (const h of model.hosts) labelW = Math.max(labelW, ctx.measureText(h).width);
    labelW = Math.min(140, Math.ceil(labelW)) + 6;
    const left = PAD + 14 + labelW, top = PAD + 14 + labelW;
    const cell = Math.max(1, Math.min(36, Math.floor(Math.min(maxW - left - PAD, maxH - top - PAD) / Math.max(1, n))));
    const size = cell * n;
    const W = left + size + PAD, H = top + size + PAD;
    const dpr = window.devicePixelRatio || 1;
    this.canvas.width = Math.round(W * dpr);
    this.canvas.height = Math.round(H * dpr);
    this.canvas.style.width = `${W}px`;
    this.canvas.style.height = `${H}px`;
    this.geom = { left, top, cell, n, dpr };

    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(this.image, left, top, size, size);

    // Thin gaps between cells when they are big enough to read one by one.
    if (cell >= 6) {
      ctx.strokeStyle = "#ffffff";
      ctx.lineWidth = 1;
      ctx.beginPath();
      for (let k = 1; k < n; k++) {
        ctx.moveTo(left + k * cell + 0.5, top);
        ctx.lineTo(left + k * cell + 0.5, top + size);
        ctx.moveTo(left, top + k * cell + 0.5);
        ctx.lineTo(left + size, top + k * cell + 0.5);
      }
      ctx.stroke();
    }
    // Stale cells also get a diagonal stripe when large enough, so they differ by shape as well as colour.
    if (cell >= 10) {
      ctx.strokeStyle = "rgba(60,60,70,0.55)";
      ctx.beginPath();
      for (let c = 0; c < n * n; c++) {
        if (state[c] !== CELL.stale) continue;
        const x = left + (c % n) * cell, y = top + Math.floor(c / n) * cell;
        ctx.moveTo(x + 2, y + cell - 2);
        ctx.lineTo(x + cell - 2, y + 2);
      }
      ctx.stroke();
    }

    ctx.fillStyle = "#1d232b";
    ctx.font = LABEL_FONT;
    const every = Math.max(1, Math.ceil(12 / cell));
    ctx.textBaseline = "middle";
    ctx.textAlign = "right";
    for (let i = 0; i < n; i += every) ctx.fillText(clip(ctx, model.hosts[i], labelW - 6), left - 4, top + i * cell + cell / 2);
    ctx.save();
    ctx.translate(left, top - 4);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "left";
    for (let j = 0; j < n; j += every) ctx.fillText(clip(ctx, model.hosts[j], labelW - 6), 0, j * cell + cell / 2);
    ctx.restore();

    ctx.fillStyle = "#66707c";
    ctx.textAlign = "left";
    ctx.fillText("destination →", left, PAD + 6);
    ctx.save();
    ctx.translate(PAD + 6, top);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "right";
    ctx.fillText("source →", 0, 0);
    ctx.restore();
    return scale;
  }

  // Cell under a mouse position (client coordinates), or null.
  hit(clientX, clientY) {
    if (!this.geom) return null;
    const r = this.canvas.getBoundingClientRect();
    const { left, top, cell, n } = this.geom;
    const x = clientX - r.left - left, y = clientY - r.top - top;
    if (x < 0 || y < 0) return null;
    const j = Math.floor(x / cell), i = Math.floor(y / cell);
    if (i >= n || j >= n) return null;
    return { i, j };
  }

  // A cell's rectangle in client coordinates (for tests and for placing the tooltip).
  cellRect(i, j) {
    const r = this.canvas.getBoundingClientRect();
    const { left, top, cell } = this.geom;
    return { x: r.left + left + j * cell, y: r.top + top + i * cell, w: cell, h: cell };
  }

  // The colour actually painted at a cell's centre, [r, g, b].
  pixel(i, j) {
    const { left, top, cell, dpr } = this.geom;
    const x = Math.floor((left + j * cell + cell / 2) * dpr), y = Math.floor((top + i * cell + cell / 2) * dpr);
    const d = this.ctx.getImageData(x, y, 1, 1).data;
    return [d[0], d[1], d[2]];
  }
}

function clip(ctx, text, w) {
  if (ctx.measureText(text).width <= w) return text;
  let s = text;
  while (s.length > 1 && ctx.measureText(s + "…").width > w) s = s.slice(0, -1);
  return s + "…";
}
