// The run's timeline: heap, RSS and device memory over time under the stage bands; drag to zoom.

// ---------------------------------------------------------------- timeline

const timelineView = { t0: 0, t1: runEnd };
function renderTimeline() {
  const host = document.getElementById('timeline');
  clear(host);
  const c = timelineChart(Math.max(320, host.clientWidth || 900));
  const { width, height, margin, plotWidth, plotHeight } = c;
  const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, height, role: 'img', 'aria-label': 'live heap and RSS over time' });
  const clipId = 'timeline-clip';
  root.append(svg('defs', {}, svg('clipPath', { id: clipId },
    svg('rect', { x: margin.left, y: 0, width: plotWidth, height }))));

  // Grid and axes.
  root.append(...bytesTimeGrid(c));

  const plotted = svg('g', { 'clip-path': `url(#${clipId})` });
  const bands = svg('g', { class: 'stage-band' });
  drawStageBands(c, plotted, bands);
  root.append(plotted, bands);
  drawTimelineSeries(c, plotted);

  // Interaction: hover, drag to zoom, wheel, double click to reset.
  const cursor = svg('line', { class: 'cursor-line', y1: margin.top, y2: margin.top + plotHeight, visibility: 'hidden' });
  const selection = svg('rect', { class: 'selection', y: margin.top, height: plotHeight, visibility: 'hidden' });
  const overlay = svg('rect', { x: margin.left, y: margin.top, width: plotWidth, height: plotHeight, fill: 'transparent', style: 'cursor: crosshair' });
  root.append(cursor, selection, overlay);
  host.append(root);
  wireTimelinePointer(c, root, overlay, cursor, selection);
  wireStageBands(bands);
}

// The chart's series, layout and scales for the view's time range: the y range follows
// what is visible, so zooming in shows detail.
function timelineChart(width) {
  const t = timeline.t_s, heap = timeline.heap_bytes, rss = timeline.rss_bytes;
  // The tracer's own resident memory is part of RSS: the program's own is drawn apart.
  const tracer = timeline.tracer_bytes || [];
  const programRss = rss.map((v, i) => Math.max(0, v - (tracer[i] || 0)));
  const showTracer = tracer.some((v) => v > 0);
  const maxDepth = stages.reduce((m, s) => Math.max(m, s.depth), -1);
  const bandRow = 18;
  const bandsHeight = (maxDepth + 1) * bandRow;
  const margin = { left: 70, right: 16, top: 8 + bandsHeight + (bandsHeight ? 6 : 0), bottom: 26 };
  const plotHeight = 240;
  const height = margin.top + plotHeight + margin.bottom;
  const plotWidth = width - margin.left - margin.right;
  const { t0, t1 } = timelineView;
  const xOf = (time) => margin.left + ((time - t0) / (t1 - t0 || 1)) * plotWidth;
  const tOf = (x) => t0 + ((x - margin.left) / plotWidth) * (t1 - t0);
  const { from, to } = visibleRange(t, t0, t1);
  let yMax = 0;
  for (let i = from; i <= to; i++) yMax = Math.max(yMax, heap[i] || 0, rss[i] || 0);
  const device = data.device ? data.device.timeline : null;
  if (device) for (let i = 0; i < device.t_s.length; i++) {
    if (device.t_s[i] >= t0 && device.t_s[i] <= t1) yMax = Math.max(yMax, device.bytes[i]);
  }
  if (totals.peak_heap_time_s >= t0 && totals.peak_heap_time_s <= t1) yMax = Math.max(yMax, totals.peak_heap_bytes);
  yMax = yMax * 1.08 || 1;
  const unit = byteUnit(yMax);
  const step = niceStep(yMax / 1024 ** unit, 5) * 1024 ** unit;
  const yOf = (bytes) => margin.top + plotHeight - (bytes / yMax) * plotHeight;
  return { t, heap, rss, tracer, programRss, showTracer, device, bandRow, margin, width, height, plotWidth, plotHeight,
    t0, t1, xOf, tOf, from, to, yMax, step, yOf };
}

// Stages: a band per nesting level above the plot, and the top level's spans behind it.
function drawStageBands(c, plotted, bands) {
  const { margin, bandRow, plotHeight } = c;
  const shown = shownStageBands(c);
  for (const { i, x0, x1 } of shown.spans) {
    plotted.append(svg('rect', { x: x0, y: margin.top, width: x1 - x0, height: plotHeight, fill: stageColor(i, 0.13) }));
  }
  for (const { i, x0, x1 } of shown.bands) {
    const s = stages[i];
    const y = 8 + s.depth * bandRow;
    const g = svg('g', { 'data-stage': i });
    g.append(svg('rect', { x: x0, y, width: x1 - x0, height: bandRow - 2, rx: 2, fill: stageColor(i) }));
    const label = fitText(s.name, x1 - x0 - 8, '11px sans-serif');
    if (label) g.append(svg('text', { x: x0 + 4, y: y + bandRow - 6 }, label));
    bands.append(g);
  }
}

// The bands and spans that show, in drawing order. Later stages are drawn over earlier
// ones, so of a long run's thousands of rows (grouped rows span the run) most are hidden.
// Looked at at each pixel column's centre (a band under a pixel wide, at its column): an
// opaque band shows where no later band of its depth does, a translucent span (alpha
// 0.13) where fewer than 40 later ones do (0.87^40 < 1/255). So at most a band per column
// and depth is drawn, and 40 spans per column.
function shownStageBands(c) {
  const { margin, width, xOf } = c;
  const columns = Math.ceil(width) + 1;
  const covered = new Map();  // depth -> per pixel column, whether a later band shows there
  const layers = new Uint8Array(columns);  // translucent spans over each column
  const bands = [], spans = [];
  for (let i = stages.length - 1; i >= 0; i--) {
    const s = stages[i];
    const x0 = Math.max(margin.left, xOf(s.start_s));
    const x1 = Math.min(width - margin.right, xOf(s.end_s));
    if (x1 <= x0) continue;
    if (!covered.has(s.depth)) covered.set(s.depth, new Uint8Array(columns));
    const cover = covered.get(s.depth);
    if (drawnOver(cover, x0, x1, (v) => v === 0, () => 1)) bands.push({ i, x0, x1 });
    if (s.depth === 0 && drawnOver(layers, x0, x1, (v) => v < 40, (v) => Math.min(255, v + 1))) spans.push({ i, x0, x1 });
  }
  return { bands: bands.reverse(), spans: spans.reverse() };
}

// Whether something from x0 to x1 shows at a column `shows` says yes to; if so each of its
// columns becomes `next` of itself. Its columns: those whose centre it covers, else its own.
function drawnOver(columns, x0, x1, shows, next) {
  let first = Math.ceil(x0 - 0.5), last = Math.floor(x1 - 0.5);
  if (last < first) first = last = Math.floor(x0);
  let drawn = false;
  for (let col = first; col <= last && !drawn; col++) drawn = shows(columns[col]);
  if (drawn) for (let col = first; col <= last; col++) columns[col] = next(columns[col]);
  return drawn;
}

// RSS and heap as areas with lines (the points given drawn in order), device memory, the heap peak.
function drawTimelineSeries(c, plotted) {
  const { t, heap, rss, programRss, showTracer, device, margin, plotWidth, plotHeight, t0, t1, from, to, xOf, yOf } = c;
  const pathFor = (values, area) => {
    if (to < from) return '';
    let d = '';
    for (let i = from; i <= to; i++) d += (d ? 'L' : 'M') + xOf(t[i]).toFixed(1) + ',' + yOf(values[i]).toFixed(1);
    if (area) d += `L${xOf(t[to]).toFixed(1)},${yOf(0)}L${xOf(t[from]).toFixed(1)},${yOf(0)}Z`;
    return d;
  };
  plotted.append(
    svg('path', { d: pathFor(rss, true), fill: 'rgba(224, 132, 43, 0.10)', stroke: 'none' }),
    svg('path', { d: pathFor(heap, true), fill: 'rgba(47, 111, 223, 0.16)', stroke: 'none' }),
    svg('path', { d: pathFor(rss, false), fill: 'none', stroke: 'var(--rss)', 'stroke-width': 1.6 }),
    showTracer ? svg('path', { d: pathFor(programRss, false), fill: 'none', stroke: 'var(--rss)', 'stroke-width': 1.2,
      'stroke-dasharray': '5 3', class: 'program-rss' }) : '',
    svg('path', { d: pathFor(heap, false), fill: 'none', stroke: 'var(--heap)', 'stroke-width': 1.8 }));

  // Device memory (CUDA): a step line, each allocation and free a step.
  if (device && device.t_s.length) {
    let d = `M${xOf(0).toFixed(1)},${yOf(0).toFixed(1)}`;
    for (let i = 0; i < device.t_s.length; i++) {
      const x = xOf(device.t_s[i]).toFixed(1);
      d += `H${x}V${yOf(device.bytes[i]).toFixed(1)}`;
    }
    d += `H${xOf(runEnd).toFixed(1)}`;
    plotted.append(svg('path', { d, fill: 'none', stroke: 'var(--device)', 'stroke-width': 1.6, class: 'device-line' }));
  }

  if (totals.peak_heap_bytes > 0 && totals.peak_heap_time_s >= t0 && totals.peak_heap_time_s <= t1) {
    const px = xOf(totals.peak_heap_time_s), py = yOf(totals.peak_heap_bytes);
    const text = `peak ${fmtBytes(totals.peak_heap_bytes)} at ${fmtSeconds(totals.peak_heap_time_s)}`;
    const anchorEnd = px > margin.left + plotWidth * 0.7;
    plotted.append(
      svg('line', { x1: px, x2: px, y1: py, y2: margin.top + plotHeight, stroke: 'var(--peak)', 'stroke-dasharray': '4 3' }),
      svg('circle', { cx: px, cy: py, r: 5, fill: 'var(--peak)', stroke: '#fff', 'stroke-width': 1.5, class: 'peak-marker' }),
      svg('text', { x: px + (anchorEnd ? -9 : 9), y: Math.max(margin.top + 12, py - 6), 'text-anchor': anchorEnd ? 'end' : 'start', class: 'peak-label' }, text));
  }
}

// The tooltip's lines at the sample nearest `time`.
function timelineHoverLines(c, time) {
  const { t, heap, rss, tracer, showTracer, device } = c;
  const i = nearestIndex(t, time);
  const st = timeline.stage[i] !== undefined && timeline.stage[i] !== null ? timeline.stage[i] : stageAt(t[i]);
  const lines = [[fmtSeconds(t[i]), 't-title'], [`heap ${fmtBytes(heap[i])}`, ''],
    [`RSS ${fmtBytes(rss[i])}` + (showTracer ? ` (the tracer's own ${fmtBytes(tracer[i] || 0)})` : ''), ''], [`stage ${stagePath(st)}`, '']];
  if (device && device.t_s.length) {
    let k = -1;
    while (k + 1 < device.t_s.length && device.t_s[k + 1] <= time) k++;
    lines.splice(3, 0, [`device ${fmtBytes(k >= 0 ? device.bytes[k] : 0)}`, '']);
  }
  return lines;
}

// Hover shows the cursor and the figures under it; drag selects a span to zoom to; the
// wheel zooms about the pointer; a double click shows the whole run again.
function wireTimelinePointer(c, root, overlay, cursor, selection) {
  const toLocalX = (event) => {
    const box = root.getBoundingClientRect();
    return ((event.clientX - box.left) / box.width) * c.width;
  };
  let dragFrom = null;
  overlay.addEventListener('mousedown', (event) => {
    dragFrom = toLocalX(event);
    event.preventDefault();
  });
  overlay.addEventListener('mousemove', (event) => {
    const x = toLocalX(event);
    if (dragFrom !== null) {
      selection.setAttribute('x', Math.min(x, dragFrom));
      selection.setAttribute('width', Math.abs(x - dragFrom));
      selection.setAttribute('visibility', 'visible');
    }
    cursor.setAttribute('x1', x);
    cursor.setAttribute('x2', x);
    cursor.setAttribute('visibility', 'visible');
    if (!c.t.length) return;
    showTooltip(event, timelineHoverLines(c, c.tOf(x)));
  });
  overlay.addEventListener('mouseleave', () => {
    cursor.setAttribute('visibility', 'hidden');
    hideTooltip();
  });
  overlay.addEventListener('mouseup', (event) => {
    if (dragFrom === null) return;
    const x = toLocalX(event);
    const a = Math.min(x, dragFrom), b = Math.max(x, dragFrom);
    dragFrom = null;
    selection.setAttribute('visibility', 'hidden');
    if (b - a > 4) zoomTimeline(c.tOf(a), c.tOf(b));
  });
  root.addEventListener('mouseleave', () => {
    dragFrom = null;
    selection.setAttribute('visibility', 'hidden');
  });
  root.addEventListener('wheel', (event) => {
    event.preventDefault();
    const center = c.tOf(toLocalX(event));
    const factor = event.deltaY < 0 ? 1 / 1.25 : 1.25;
    zoomTimeline(center - (center - timelineView.t0) * factor, center + (timelineView.t1 - center) * factor);
  }, { passive: false });
  root.addEventListener('dblclick', () => zoomTimeline(0, runEnd));
}

// A click on a stage's band zooms to it; hovering it gives its span and peaks.
function wireStageBands(bands) {
  bands.addEventListener('click', (event) => {
    const g = event.target.closest('[data-stage]');
    if (g) zoomToStage(Number(g.getAttribute('data-stage')));
  });
  bands.addEventListener('mousemove', (event) => {
    const g = event.target.closest('[data-stage]');
    if (!g) return;
    const s = stages[Number(g.getAttribute('data-stage'))];
    showTooltip(event, [[s.path || s.name, 't-title'], [`${fmtSeconds(s.start_s)} – ${fmtSeconds(s.end_s)} (${fmtSeconds(s.end_s - s.start_s)})`, ''],
      [`peak heap ${fmtBytes(s.figures.peak_heap_bytes)} · peak RSS ${fmtBytes(s.figures.peak_rss_bytes)}`, '']]);
  });
  bands.addEventListener('mouseleave', hideTooltip);
}
function zoomTimeline(a, b) {
  const minSpan = runEnd * 1e-6;
  a = Math.max(0, a);
  b = Math.min(runEnd, b);
  if (b - a < minSpan) return;
  timelineView.t0 = a;
  timelineView.t1 = b;
  renderTimeline();
}
function zoomToStage(i) {
  const s = stages[i];
  const pad = (s.end_s - s.start_s) * 0.04;
  zoomTimeline(s.start_s - pad, s.end_s + pad);
  document.getElementById('timeline-section').scrollIntoView({ behavior: 'smooth', block: 'nearest' });
}
