// memstage HTML report. Reads the JSON data block and draws every section.
// Every name in the data comes from the traced program and is untrusted: it only ever
// reaches the page as text (textContent, SVG text nodes, attribute values set one by one),
// never as markup.
// The page's frame: the data block, DOM and SVG builders, the tooltip, the stage model, the summary.
// The build concatenates script/*.js, in html/CMakeLists.txt's order, into one function.

const data = JSON.parse(document.getElementById('memstage-data').textContent);
const SVG_NS = 'http://www.w3.org/2000/svg';

// ---------------------------------------------------------------- helpers

// el('div', {class: 'x'}, 'text', child...): attributes one by one, strings as text nodes.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  setAttrs(node, attrs);
  append(node, children);
  return node;
}
function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  setAttrs(node, attrs);
  append(node, children);
  return node;
}
function setAttrs(node, attrs) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value !== undefined && value !== null && value !== false) node.setAttribute(key, String(value));
  }
}
function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.appendChild(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child);
  }
}
function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

// Rows appended a slice at a time, the next when the last drawn comes into view or within
// 600 px below it: a long run's thousands of stage rows would otherwise be laid out, all of
// them, before the page answers. Only below: scrolled past, the last row stays above the
// view as slices are added (scroll anchoring), and would pull in every row. A host thrown
// away (a re-sort draws a new table body) takes its watcher along: its rows never show.
function appendInSlices(host, count, makeRow, slice = 150) {
  let next = 0;
  const watcher = new IntersectionObserver((entries) => {
    if (!entries.some((e) => e.isIntersecting)) return;
    watcher.disconnect();
    more();
  }, { rootMargin: '0px 0px 600px 0px' });
  const more = () => {
    const end = Math.min(count, next + slice);
    for (; next < end; next++) host.append(makeRow(next));
    host.setAttribute('data-rows-drawn', String(next));
    if (next < count) watcher.observe(host.lastElementChild);
  };
  host.setAttribute('data-rows', String(count));
  more();
}

const tooltip = document.getElementById('tooltip');
// lines: [[text, className], ...]
function showTooltip(event, lines) {
  clear(tooltip);
  for (const [text, cls] of lines) tooltip.appendChild(el('div', { class: cls }, text));
  tooltip.hidden = false;
  const pad = 14;
  const w = tooltip.offsetWidth;
  const h = tooltip.offsetHeight;
  let x = event.clientX + pad;
  let y = event.clientY + pad;
  if (x + w > window.innerWidth - 4) x = Math.max(4, event.clientX - w - pad);
  if (y + h > window.innerHeight - 4) y = Math.max(4, event.clientY - h - pad);
  tooltip.style.left = x + 'px';
  tooltip.style.top = y + 'px';
}
function hideTooltip() {
  tooltip.hidden = true;
}

// Text that fits a width, cut with an ellipsis; widths measured once per font.
const measure = document.createElement('canvas').getContext('2d');
function fitText(text, width, font) {
  measure.font = font;
  if (width < 14) return '';
  if (measure.measureText(text).width <= width) return text;
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (measure.measureText(text.slice(0, mid) + '…').width <= width) lo = mid;
    else hi = mid - 1;
  }
  return lo > 0 ? text.slice(0, lo) + '…' : '';
}

// A chart's grid and axes: bytes up the side every `step`, seconds along the bottom at
// a round step; returns the two groups to append.
function bytesTimeGrid({ yMax, step, yOf, t0, t1, xOf, margin, width, height, plotWidth, plotHeight }) {
  const grid = svg('g', { class: 'grid' });
  const axis = svg('g', { class: 'axis' });
  for (let v = 0; v <= yMax; v += step) {
    grid.append(svg('line', { x1: margin.left, x2: width - margin.right, y1: yOf(v), y2: yOf(v) }));
    axis.append(svg('text', { x: margin.left - 6, y: yOf(v) + 4, 'text-anchor': 'end' }, fmtBytes(v)));
  }
  const tStep = niceStep(t1 - t0, Math.max(2, Math.floor(plotWidth / 110)));
  for (let v = Math.ceil(t0 / tStep) * tStep; v <= t1 + 1e-12; v += tStep) {
    grid.append(svg('line', { x1: xOf(v), x2: xOf(v), y1: margin.top, y2: margin.top + plotHeight }));
    axis.append(svg('text', { x: xOf(v), y: height - 8, 'text-anchor': 'middle' }, fmtSeconds(Number(v.toPrecision(12)))));
  }
  return [grid, axis];
}

// ---------------------------------------------------------------- model

const stages = rowsOf(data.stages || []);
const frames = data.frames || [];  // [label, function, file, line, module, module_offset, kind, inlined]
const F_LABEL = 0, F_FUNCTION = 1, F_FILE = 2, F_LINE = 3, F_MODULE = 4, F_OFFSET = 5, F_KIND = 6, F_INLINED = 7,
  F_ALLOCATOR = 8;
const totals = data.totals || {};
// What the runtime holds for the process's life, apart from the program's leaks.
const runtimeHeld = data.runtime_held || { bytes: 0, blocks: 0 };
const timeline = data.timeline || { t_s: [], heap_bytes: [], rss_bytes: [], stage: [] };
const runEnd = Math.max(data.duration_s || 0, timeline.t_s.length ? timeline.t_s[timeline.t_s.length - 1] : 0,
  ...stages.map((s) => s.end_s || 0)) || 1;

const STAGE_HUES = [212, 28, 142, 280, 352, 48, 190, 318, 96, 250];
const topLevelIndex = new Map();
let topCount = 0;
function rootOf(s) {
  let guard = 0;
  while (stages[s] && stages[s].parent >= 0 && guard++ < 1000) s = stages[s].parent;
  return s;
}
stages.forEach((s, i) => {
  if (s.parent < 0) topLevelIndex.set(i, topCount++);
});
function stageColor(i, alpha) {
  const hue = STAGE_HUES[(topLevelIndex.get(rootOf(i)) || 0) % STAGE_HUES.length];
  const depth = stages[i] ? stages[i].depth : 0;
  return `hsla(${hue}, 62%, ${Math.min(86, 66 + depth * 7)}%, ${alpha === undefined ? 1 : alpha})`;
}
function stageName(i) {
  return i >= 0 && stages[i] ? stages[i].name : '(outside any stage)';
}
function stagePath(i) {
  return i >= 0 && stages[i] ? stages[i].path || stages[i].name : '(outside any stage)';
}
// The innermost stage open at time t.
function stageAt(t) {
  let found = -1;
  stages.forEach((s, i) => {
    if (t >= s.start_s && t <= s.end_s && (found < 0 || s.depth >= stages[found].depth)) found = i;
  });
  return found;
}

function stackFrames(stackIndex) {
  return (data.stacks && data.stacks[String(stackIndex)]) || [];
}
function frameLocation(f) {
  if (!f[F_FILE]) return '';
  return f[F_LINE] ? `${f[F_FILE]}:${f[F_LINE]}` : f[F_FILE];
}

// ---------------------------------------------------------------- summary

function renderSummary() {
  const header = document.getElementById('summary');
  const command = (data.command || []).join(' ');
  document.title = 'memstage: ' + (command || 'report');
  const worst = data.worst_stage;
  const peakStage = stageAt(totals.peak_heap_time_s || 0);
  const exit = data.signal !== null && data.signal !== undefined ? `signal ${data.signal}`
    : data.exit_code !== null && data.exit_code !== undefined ? `exit ${data.exit_code}` : 'exit code unknown';
  const figure = (label, value, sub, cls) =>
    el('div', { class: 'figure' + (cls ? ' ' + cls : '') }, el('div', { class: 'label' }, label),
      el('div', { class: 'value' }, value), sub ? el('div', { class: 'sub' }, sub) : null);
  const rb = totals.rss_breakdown || {};
  // Headlined only where the allocator holds enough free memory to matter (the rule in report_model.h).
  const fragmentationMatters = Math.max(0, (rb.allocator_resident_bytes || 0) - (rb.live_bytes || 0)) >=
    (data.fragmentation_headline_free_bytes || 0);
  header.append(
    el('h1', {}, 'memstage report'),
    el('div', { class: 'command', title: 'command' }, command || '(no command recorded)'),
    ...(data.attached ? [el('div', { class: 'note' }, data.sampling
      ? 'Attached to the running process: blocks allocated before attaching have no stacks (their frees are ' +
        'ignored); the heap counts start from the allocator\'s in-use bytes at attach; what is "leaked" below was ' +
        'allocated while attached and still held when memstage detached.'
      : data.leaks_measured === false
      ? 'Attached to the running process: calls are counted from attach on; the heap counts start from the ' +
        'allocator\'s in-use bytes at attach, memory allocated before attaching included.'
      : 'Attached to the running process: memory allocated before attaching is unknown (its frees are ignored); ' +
        'what is "leaked" below was allocated while attached and still held when memstage detached.')] : []),
    el('div', { class: 'figures' },
      figure('Peak heap', fmtBytes(totals.peak_heap_bytes),
        `at ${fmtSeconds(totals.peak_heap_time_s)}` + (peakStage >= 0 ? `, in ${stagePath(peakStage)}` : ''), 'highlight'),
      figure('Peak RSS', fmtBytes(totals.peak_rss_bytes),
        totals.tracer_peak_bytes ? `the program's own ${fmtBytes(totals.peak_program_rss_bytes)} · the tracer's up to ${fmtBytes(totals.tracer_peak_bytes)}`
          : (rb.tracer_bytes ? `tracer's own: ${fmtBytes(rb.tracer_bytes)}` : '')),
      figure('Worst stage', worst >= 0 ? stageName(worst) : '–',
        worst >= 0 ? `peak heap ${fmtBytes(stages[worst].figures.peak_heap_bytes)}` + (stages[worst].path !== stages[worst].name ? ` · ${stages[worst].path}` : '') : 'no stages marked'),
      data.leaks_measured === false
        ? figure('Leaked', 'not measured', `${data.mode} mode counts allocations; it does not follow blocks to their free`)
        : data.attached
          ? figure('Held at detach', fmtBytes(totals.leaked_bytes),
            `${fmtExactCount(totals.leaked_blocks || 0)} blocks allocated while attached and not freed by detach`)
          : figure('Leaked', fmtBytes(totals.leaked_bytes), `${fmtExactCount(totals.leaked_blocks || 0)} blocks never freed` +
            (runtimeHeld.blocks ? ` · the runtime's own ${fmtBytes(runtimeHeld.bytes)} apart` : '')),
      data.device
        ? figure('Peak device', fmtBytes(data.device.peak_bytes),
          `GPU memory from the driver, at ${fmtSeconds(data.device.peak_time_s)} · ${fmtBytes(data.device.leaked_bytes)} never freed`)
        : null,
      figure('Allocations', fmtCount(totals.allocations),
        `${fmtBytes(totals.bytes_allocated)} in total · ` +
          (data.sampling || data.leaks_measured === false ? 'temporaries not measured' : `${fmtCount(totals.temporary_allocations)} temporary`)),
      figure('Fragmentation', totals.fragmentation && fragmentationMatters ? (100 * totals.fragmentation.ratio).toFixed(1) + '%' : '–',
        `${fmtBytes(Math.max(0, (rb.allocator_resident_bytes || 0) - (rb.live_bytes || 0)))} free of ${fmtBytes(rb.allocator_resident_bytes || 0)} the allocator holds` +
          (totals.fragmentation && totals.fragmentation.estimated ? ' · estimated' : '') +
          (rb.t_s !== undefined ? ` · at ${fmtSeconds(rb.t_s)}` : '')),
      figure('Duration', fmtSeconds(data.duration_s), exit),
      figure('Allocator · mode', `${data.allocator} · ${data.mode}`,
        `${fmtExactCount(stages.length)} stages · ${fmtExactCount(data.stack_count || 0)} stacks` +
        (data.python ? ` · Python ${String(data.python.version).split(' ')[0]}, ${data.python.allocator === 'malloc'
          ? 'PYTHONMALLOC=malloc' : 'pymalloc (small objects counted by arena, as mmap)'}` : ''))));

  // Sample mode: which figures are estimates, said before any of them is read.
  if (data.sampling) header.append(el('p', { class: 'sampling-note' }, data.sampling.note));
  const warnings = data.warnings || [];
  if (warnings.length) {
    const box = document.getElementById('warnings-section');
    box.hidden = false;
    box.append(el('strong', {}, 'Warnings'), el('ul', {}, warnings.map((w) => el('li', {}, w))));
  }
  const notes = data.capture_notes || [];
  if (notes.length) {
    const box = document.getElementById('capture-notes-section');
    box.hidden = false;
    box.append(el('strong', {}, 'How this run was captured'), el('ul', {}, notes.map((n) => el('li', {}, n))));
  }
  const footer = document.getElementById('footer');
  footer.append('Generated by memstage. ', 'Sizes in binary units (1 MiB = 1,048,576 bytes). ',
    'This page is self-contained and loads nothing from the network.');
}
