// Small hand-written SVG charts: a time series chart for the overview and a sparkline for lag
// trends. No chart library: a few hundred points of one hour need no more than polylines.
import { svg, h } from './dom.js';

// series: [{label, values: [...], className}] over shared `times` (ms). `format` turns a value into
// axis text. Returns a <figure> holding the chart and its legend.
export function timeChart(title, times, series, format, binary) {
  const width = 600;
  const height = 180;
  const pad = { left: 56, right: 10, top: 10, bottom: 24 };
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const root = svg('svg', {
    viewBox: `0 0 ${width} ${height}`,
    class: 'chart',
    role: 'img',
    'aria-label': title,
    preserveAspectRatio: 'none',
  });
  let max = 0;
  for (const s of series) for (const v of s.values) max = Math.max(max, v);
  // Byte axes step in KiB, MiB, GiB: round numbers of the unit the labels print.
  let unit = 1;
  while (binary && max / unit >= 1024) unit *= 1024;
  max = niceMax(max / unit) * unit;
  const t0 = times.length ? times[0] : Date.now() - 60000;
  const t1 = times.length ? Math.max(times[times.length - 1], t0 + 1000) : Date.now();
  const x = (t) => pad.left + ((t - t0) / (t1 - t0)) * plotW;
  const y = (v) => pad.top + plotH - (max > 0 ? (v / max) * plotH : 0);
  // Grid and axis labels.
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    const yy = y(v);
    root.appendChild(svg('line', { x1: pad.left, x2: width - pad.right, y1: yy, y2: yy, class: 'grid' }));
    root.appendChild(svg('text', { x: pad.left - 6, y: yy + 4, class: 'axis', 'text-anchor': 'end' }, format(v)));
  }
  const span = t1 - t0;
  for (let i = 0; i <= 3; i++) {
    const t = t0 + (span * i) / 3;
    const label = new Date(t).toISOString().slice(11, 19);
    root.appendChild(
      svg('text', { x: x(t), y: height - 6, class: 'axis', 'text-anchor': i === 0 ? 'start' : i === 3 ? 'end' : 'middle' }, label),
    );
  }
  for (const s of series) {
    if (!times.length) continue;
    const points = s.values.map((v, i) => `${x(times[i]).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
    root.appendChild(svg('polyline', { points, class: 'line ' + s.className, fill: 'none' }));
  }
  if (!times.length) {
    root.appendChild(svg('text', { x: width / 2, y: height / 2, class: 'axis empty', 'text-anchor': 'middle' }, 'no samples yet'));
  }
  const legend = h(
    'figcaption',
    {},
    h('strong', {}, title),
    series.map((s) => {
      const last = s.values.length ? s.values[s.values.length - 1] : 0;
      return h('span', { class: 'legend ' + s.className }, s.label + ': ' + format(last));
    }),
  );
  return h('figure', { class: 'chart-box' }, legend, root);
}

// A tiny trend line (no axes) for a table cell; points: [[t, value], …].
export function sparkline(points, label) {
  const width = 120;
  const height = 28;
  const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, class: 'spark', role: 'img', 'aria-label': label });
  if (points.length < 2) {
    root.appendChild(svg('text', { x: 2, y: 18, class: 'axis' }, points.length ? 'collecting…' : 'no trend yet'));
    return root;
  }
  const t0 = points[0][0];
  const t1 = points[points.length - 1][0];
  const max = Math.max(1, ...points.map((p) => p[1]));
  const pts = points
    .map((p) => `${(((p[0] - t0) / Math.max(1, t1 - t0)) * (width - 4) + 2).toFixed(1)},${(height - 3 - (p[1] / max) * (height - 6)).toFixed(1)}`)
    .join(' ');
  root.appendChild(svg('polyline', { points: pts, class: 'line lag', fill: 'none' }));
  return root;
}

function niceMax(v) {
  if (v <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  // Four grid steps of round numbers: 1, 2, 4, 8 or 10 times a power of ten.
  for (const m of [1, 2, 4, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}
