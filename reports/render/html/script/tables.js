// The tables: stages, where the RSS went, leaks, growth and the top allocation sites.

// ---------------------------------------------------------------- stage table

const STAGE_COLUMNS = [
  { key: 'name', title: 'Stage', value: (s) => s.start_s },
  { key: 'start', title: 'Start', value: (s) => s.start_s, show: (s) => fmtSeconds(s.start_s) },
  // A row grouping several instances: the time they were open, summed.
  { key: 'duration', title: 'Duration', value: (s) => s.open_s, show: (s) => fmtSeconds(s.open_s) },
  { key: 'peak_heap', title: 'Peak heap', value: (s) => s.figures.peak_heap_bytes, show: (s) => fmtBytes(s.figures.peak_heap_bytes), bar: true },
  { key: 'peak_rss', title: 'Peak RSS', value: (s) => s.figures.peak_rss_bytes, show: (s) => fmtBytes(s.figures.peak_rss_bytes) },
  // Only when the run used device memory (CUDA): the device's peak while the stage was open.
  { key: 'peak_device', title: 'Peak device', device: true, value: (s) => (s.device ? s.device.peak_bytes : 0),
    show: (s) => (s.device ? fmtBytes(s.device.peak_bytes) : '–') },
  { key: 'allocations', title: 'Allocations', value: (s) => s.figures.allocations, show: (s) => fmtCount(s.figures.allocations) },
  { key: 'allocated', title: 'Allocated', value: (s) => s.figures.bytes_allocated, show: (s) => fmtBytes(s.figures.bytes_allocated) },
  // A mode that does not follow blocks (stats) did not measure what stages retained or leaked:
  // '–', never "0 B".
  { key: 'retained', title: 'Retained', value: (s) => (data.leaks_measured === false ? -1 : s.retained_bytes),
    show: (s) => (data.leaks_measured === false ? '–' : fmtBytes(s.retained_bytes)) },
  { key: 'leaked', title: 'Leaked', value: (s) => (data.leaks_measured === false ? -1 : s.figures.leaked_bytes),
    show: (s) => (data.leaks_measured === false ? '–' : fmtBytes(s.figures.leaked_bytes)) },
  { key: 'fragmentation', title: 'Fragmentation', value: (s) => s.figures.fragmentation.ratio,
    show: (s) => (100 * s.figures.fragmentation.ratio).toFixed(1) + '%' + (s.figures.fragmentation.estimated ? ' (est.)' : '') },
].filter((c) => !c.device || data.device);
const stageSort = { key: 'name', descending: false };

function renderStageTable() {
  const table = document.getElementById('stage-table');
  clear(table);
  const merged = document.getElementById('stages-merged');
  if (merged && data.stage_grouping && !merged.textContent) {
    merged.textContent = data.stage_grouping + ' (×N), so that the report stays small for a long run.';
    merged.hidden = false;
  }
  if (!stages.length) {
    table.append(el('tbody', {}, el('tr', {}, el('td', { class: 'empty' }, 'No stages were marked in this run.'))));
    return;
  }
  const column = STAGE_COLUMNS.find((c) => c.key === stageSort.key) || STAGE_COLUMNS[0];
  const order = stageOrder(column);
  const maxPeak = Math.max(1, ...stages.map((s) => s.figures.peak_heap_bytes));
  const body = el('tbody', {});
  table.append(el('thead', {}, stageHead()), body);
  appendInSlices(body, order.length, (k) => stageRow(order[k], maxPeak));
}

// The header row: a click sorts by its column, again reverses.
function stageHead() {
  const head = el('tr', {});
  for (const c of STAGE_COLUMNS) {
    const sorted = c.key === stageSort.key ? (stageSort.descending ? 'descending' : 'ascending') : null;
    const th = el('th', { scope: 'col', 'aria-sort': sorted, 'data-key': c.key }, c.title);
    th.addEventListener('click', () => {
      if (stageSort.key === c.key) stageSort.descending = !stageSort.descending;
      else {
        stageSort.key = c.key;
        stageSort.descending = c.key !== 'name' && c.key !== 'start';
      }
      renderStageTable();
    });
    head.append(th);
  }
  return head;
}

// The rows in table order: siblings sort among themselves; children stay under their parent.
function stageOrder(column) {
  const children = new Map();
  stages.forEach((s, i) => {
    const p = s.parent >= 0 && s.parent < stages.length ? s.parent : -1;
    if (!children.has(p)) children.set(p, []);
    children.get(p).push(i);
  });
  const order = [];
  const visit = (p, guard) => {
    const list = (children.get(p) || []).slice();
    list.sort((a, b) => {
      const d = column.value(stages[a]) - column.value(stages[b]);
      return (stageSort.descending ? -d : d) || a - b;
    });
    for (const i of list) {
      order.push(i);
      if (guard < 100) visit(i, guard + 1);
    }
  };
  visit(-1, 0);
  return order;
}

function stageRow(i, maxPeak) {
  const s = stages[i];
  const row = el('tr', { 'data-stage': i, class: i === data.worst_stage ? 'worst' : null });
  for (const c of STAGE_COLUMNS) {
    if (c.key === 'name') {
      row.append(el('td', { class: 'stage-name', style: `padding-left: ${10 + 18 * s.depth}px`, title: s.path },
        el('span', { class: 'stage-dot', style: `background: ${stageColor(i)}` }), el('span', { class: 'stage-label' }, s.name),
        s.closed === false ? el('span', { class: 'badge open' }, 'not ended') : null,
        s.instances > 1 ? el('span', { class: 'badge', title: 'instances of this stage path grouped into one row: first start to last end, the highest peak, summed counts and durations' },
          `×${fmtExactCount(s.instances)}`) : null,
        i === data.worst_stage ? el('span', { class: 'badge worst' }, 'worst') : null));
    } else {
      const td = el('td', { class: c.bar ? 'cell-bar' : null }, c.show(s));
      if (c.bar) {
        const bar = el('span', { class: 'bar' });
        bar.style.width = (100 * c.value(s)) / maxPeak + '%';
        td.append(bar);
      }
      row.append(td);
    }
  }
  row.addEventListener('click', () => zoomToStage(i));
  return row;
}


// ---------------------------------------------------------------- where the RSS went

const RSS_SEGMENTS = [
  { cls: 'seg-live', title: 'live (the program\'s bytes)' },
  { cls: 'seg-overhead', title: 'allocator in use on top (rounding, headers)' },
  { cls: 'seg-free', title: 'allocator resident on top (free blocks, retained pages)' },
  { cls: 'seg-other', title: 'rest of RSS (code, stacks, other mappings)' },
  { cls: 'seg-tracer', title: 'the tracer\'s own memory (apart)' },
];
// What of the resident pages other processes also hold (copy-on-write pages after a
// fork, libraries): summed RSS counts them in each process, PSS once.
function sharesText(sh) {
  return `resident pages at ${sh.t_s.toFixed(3)} s: ${fmtBytes(sh.shared_bytes)} shared with other processes, ` +
    `${fmtBytes(sh.private_bytes)} private (PSS ${fmtBytes(sh.pss_bytes)})`;
}
function renderRss() {
  const legend = document.getElementById('rss-legend');
  for (const s of RSS_SEGMENTS) legend.append(el('span', { class: 'legend' }, el('span', { class: 'swatch ' + s.cls }), s.title));
  const rows = [{ name: 'whole run', path: 'whole run', figures: totals, depth: 0, index: -1 }]
    .concat(stages.map((s, i) => ({ name: s.name, path: s.path, figures: s.figures, depth: s.depth, index: i })))
    .filter((r) => r.figures.rss_breakdown);
  const maxTotal = Math.max(1, ...rows.map((r) => rssParts(r.figures.rss_breakdown).reduce((a, b) => a + b, 0)));
  appendInSlices(document.getElementById('rss'), rows.length, (k) => rssRow(rows[k], maxTotal));
}

// One row: the name, the bar of RSS by part, the numbers; the whole run's with its shares.
function rssRow(r, maxTotal) {
  const b = r.figures.rss_breakdown;
  const bar = el('div', { class: 'rss-bar' });
  rssParts(b).forEach((v, k) => {
    if (v <= 0) return;
    const seg = el('span', { class: k === 4 ? 'tracer' : RSS_SEGMENTS[k].cls, title: `${RSS_SEGMENTS[k].title}: ${fmtBytes(v)}` });
    seg.style.width = (100 * v) / maxTotal + '%';
    bar.append(seg);
  });
  bar.addEventListener('mousemove', (event) => showTooltip(event, [[r.path, 't-title'],
    [`live ${fmtBytes(b.live_bytes)} → in use ${fmtBytes(b.allocator_in_use_bytes)} → resident ${fmtBytes(b.allocator_resident_bytes)} → RSS ${fmtBytes(b.rss_bytes)}`, ''],
    [`tracer's own: ${fmtBytes(b.tracer_bytes)}`, ''], b.estimated ? ['estimated: the allocator gave no figures', ''] : ['', '']]
    .concat(b.shares ? [[sharesText(b.shares), '']] : [])));
  bar.addEventListener('mouseleave', hideTooltip);
  const frag = r.figures.fragmentation || { ratio: 0, estimated: true };
  const row = el('div', { class: 'rss-row', 'data-stage': r.index },
    el('div', { class: 'name', title: r.path, style: `padding-left: ${14 * r.depth}px` },
      r.index === -1 ? el('strong', {}, r.name) : r.name,
      b.estimated ? el('span', { class: 'badge estimated', title: 'the allocator gave no figures; derived from RSS' }, 'estimated') : null),
    bar,
    el('div', { class: 'numbers' }, `live ${fmtBytes(b.live_bytes)} · RSS ${fmtBytes(b.rss_bytes)} · fragmentation ${(100 * frag.ratio).toFixed(1)}%` +
      (frag.estimated && !b.estimated ? ' (est.)' : '')));
  if (r.index !== -1 || !b.shares) return row;
  const both = document.createDocumentFragment();
  both.append(row, el('div', { class: 'rss-shares note' }, sharesText(b.shares)));
  return both;
}

// ---------------------------------------------------------------- stacks as tables

function framesTable(stackIndex) {
  const ids = stackFrames(stackIndex);
  const table = el('table', { class: 'frames' });
  const body = el('tbody', {});
  ids.forEach((id, i) => {
    const f = frames[id];
    if (!f) return;
    // Without a function name the frame is named by module and offset.
    const name = f[F_FUNCTION] || (f[F_MODULE] ? `${basename(f[F_MODULE])}+${f[F_OFFSET]}` : f[F_LABEL]);
    body.append(el('tr', { class: f[F_INLINED] ? 'inlined' : null },
      el('td', { class: 'idx' }, String(i)),
      el('td', { class: 'fn' }, name, f[F_KIND] === 'python' ? el('span', { class: 'badge' }, 'python') : null),
      el('td', { class: 'loc' }, frameLocation(f)),
      el('td', { class: 'mod', title: f[F_MODULE] }, f[F_MODULE] ? basename(f[F_MODULE]) : '')));
  });
  if (!ids.length) body.append(el('tr', {}, el('td', { class: 'fn' }, '(stack not recorded)')));
  table.append(body);
  return table;
}
// A row of the leaks or the top sites: named by its allocation site, which the report
// chose (the first frame that is not allocation plumbing, or the script's line).
function siteName(row) {
  const f = row.site !== null && row.site !== undefined ? frames[row.site] : null;
  return f ? f[F_LABEL] : `stack #${row.stack}`;
}

function renderLeaks() {
  const leaks = data.leaks || { groups: [], total_groups: 0 };
  const note = document.getElementById('leaks-note');
  const host = document.getElementById('leaks');
  const own = leaks.groups.filter((g) => !g.runtime);
  const runtime = leaks.groups.filter((g) => g.runtime);
  if (runtimeHeld.blocks) {
    note.append(`The runtime (the C library, the loader, library initializers, the interpreter) holds ` +
      `${fmtBytes(runtimeHeld.bytes)} in ${fmtExactCount(runtimeHeld.blocks)} blocks for the process's life: ` +
      'listed last, marked runtime, and not counted as leaked. ');
  }
  if (!own.length) {
    note.append(totals.leaked_bytes > 0
      ? `${fmtBytes(totals.leaked_bytes)} leaked, but no stacks were recorded for them (mode: ${data.mode}).`
      : 'Nothing leaked: every allocation of the program was freed before it exited.');
  }
  if (!leaks.groups.length) return;
  if (own.length) {
    note.append(`${fmtBytes(totals.leaked_bytes)} in ${fmtExactCount(totals.leaked_blocks)} blocks was never freed, from ` +
      `${fmtExactCount(leaks.total_groups)} stacks, largest first` +
      (leaks.total_groups > leaks.groups.length ? ` (the largest ${leaks.groups.length} shown).` : '.'));
  }
  own.concat(runtime).forEach((g, i) => {
    const d = el('details', { class: 'leak', open: i < 3 && !g.runtime ? 'open' : null });
    d.append(el('summary', {},
      el('span', { class: 'amount' }, fmtBytes(g.bytes)),
      el('span', {}, `${fmtExactCount(g.blocks)} blocks`),
      el('span', { class: 'frame-name' }, siteName(g)),
      el('span', { class: 'badge' }, g.stages.map(stagePath).join(', ')),
      g.runtime ? el('span', { class: 'badge' }, 'runtime') : null));
    // A stack is built when its group is opened: two hundred long stacks were most of a
    // page's elements while closed.
    const fill = () => {
      if (d.open && d.children.length === 1) d.append(framesTable(g.stack));
    };
    fill();
    d.addEventListener('toggle', fill);
    host.append(d);
  });
}

// Stacks whose live bytes grow steadily: per stack its rate, a small chart of its live
// bytes at every snapshot with the fitted line since it last held nothing, and its stack.
function renderGrowth() {
  const growth = data.growth;
  const note = document.getElementById('growth-note');
  const host = document.getElementById('growth');
  if (!growth) {
    note.append(`Not measured: a ${data.mode}-mode capture has no snapshots of live bytes per stack.`);
    return;
  }
  const every = `${fmtExactCount(growth.snapshots)} snapshots of live bytes per stack, ${fmtSeconds(growth.interval_s)} apart`;
  if (!growth.stacks.length) {
    note.append(`No stack's live bytes grew steadily over the run (${every}).`);
    return;
  }
  note.append(`Stacks whose live bytes rose steadily over the run, fastest first: a least-squares line since the ` +
    `stack last held nothing, kept when it explains the series (R²), no single moment brings most of the rise, ` +
    `and the rise goes on to the end; a constant buffer, a one-off burst or a full cache is not listed (${every}).` +
    (growth.estimate_note ? ` Estimates: ${growth.estimate_note}.` : ''));
  growth.stacks.forEach((g, i) => {
    const d = el('details', { class: 'leak growth', open: i < 3 ? 'open' : null });
    const error = g.relative_standard_error == null ? '' : ` ± ${Math.round(100 * g.relative_standard_error)}%`;
    d.append(el('summary', {},
      el('span', { class: 'amount', title: error ? 'estimated from samples: ± one standard error' : null }, `+${fmtBytes(g.bytes_per_s)}/s${error}`),
      el('span', {}, `${fmtBytes(g.live_bytes)} live at the end · since ${fmtSeconds(g.since_s)} · R² ${g.r_squared.toFixed(2)}`),
      el('span', { class: 'frame-name' }, siteName(g))),
    growthChart(g), framesTable(g.stack));
    host.append(d);
  });
}

function growthChart(g) {
  const t = g.series.t_s, live = g.series.live_bytes;
  const width = 420, height = 110, margin = { left: 62, right: 10, top: 8, bottom: 20 };
  const plotWidth = width - margin.left - margin.right, plotHeight = height - margin.top - margin.bottom;
  const t0 = t.length ? t[0] : 0, t1 = t.length ? t[t.length - 1] : 1;
  const yMax = Math.max(1, ...live) * 1.08;
  const xOf = (time) => margin.left + ((time - t0) / (t1 - t0 || 1)) * plotWidth;
  const yOf = (bytes) => margin.top + plotHeight - (bytes / yMax) * plotHeight;
  const root = svg('svg', { class: 'growth-chart', viewBox: `0 0 ${width} ${height}`, width, height, role: 'img',
    'aria-label': `live bytes of ${siteName(g)} over time` });
  const axis = svg('g', { class: 'axis' });
  for (const v of [0, yMax / 1.08]) {
    axis.append(svg('line', { x1: margin.left, x2: width - margin.right, y1: yOf(v), y2: yOf(v) }),
      svg('text', { x: margin.left - 6, y: yOf(v) + 4, 'text-anchor': 'end' }, fmtBytes(v)));
  }
  axis.append(svg('text', { x: margin.left, y: height - 5, 'text-anchor': 'start' }, fmtSeconds(t0)),
    svg('text', { x: width - margin.right, y: height - 5, 'text-anchor': 'end' }, fmtSeconds(t1)));
  let d = '';
  t.forEach((time, k) => { d += `${k ? 'L' : 'M'}${xOf(time).toFixed(1)},${yOf(live[k]).toFixed(1)}`; });
  // The fitted line through the window's mean, drawn over the window.
  const inWindow = t.map((time, k) => [time, live[k]]).filter(([time]) => time >= g.since_s);
  const tMean = inWindow.reduce((a, p) => a + p[0], 0) / (inWindow.length || 1);
  const yMean = inWindow.reduce((a, p) => a + p[1], 0) / (inWindow.length || 1);
  const fitAt = (time) => yMean + g.bytes_per_s * (time - tMean);
  root.append(axis,
    svg('path', { d, fill: 'none', stroke: 'var(--heap)', 'stroke-width': 1.6 }),
    svg('line', { class: 'growth-fit', x1: xOf(g.since_s), y1: yOf(fitAt(g.since_s)), x2: xOf(t1), y2: yOf(fitAt(t1)) }));
  return root;
}

// Two sites in one function (two of its lines) would read alike in a list: those say where.
function siteLabels(rows) {
  const names = rows.map(siteName);
  return rows.map((r, i) => {
    if (names.indexOf(names[i]) === names.lastIndexOf(names[i])) return names[i];
    const f = r.site !== null && r.site !== undefined ? frames[r.site] : null;
    const where = f ? frameLocation(f).split('/').pop() : '';
    return where ? `${names[i]} (${where})` : names[i];
  });
}

function renderSites() {
  const host = document.getElementById('sites');
  const sites = data.top_sites || {};
  const lists = [
    { title: 'By bytes allocated', rows: sites.by_bytes || [], value: (r) => r.bytes_allocated, show: fmtBytes,
      sub: (r) => `${fmtCount(r.allocations)} allocations` },
    { title: 'By number of allocations', rows: sites.by_count || [], value: (r) => r.allocations, show: fmtCount,
      sub: (r) => fmtBytes(r.bytes_allocated) },
    { title: 'By temporary allocations', rows: sites.by_temporary || [], value: (r) => r.temporary_allocations, show: fmtCount,
      sub: (r) => `${fmtPercent(r.temporary_allocations, r.allocations)} of its ${fmtCount(r.allocations)}` },
  ];
  for (const list of lists) {
    const column = el('div', { class: 'site-list' }, el('h3', {}, list.title));
    if (!list.rows.length) column.append(el('div', { class: 'empty' }, 'none recorded'));
    const top = Math.max(1, ...list.rows.map(list.value));
    const shown = list.rows.slice(0, 15);
    const labels = siteLabels(shown);
    shown.forEach((r, i) => {
      const share = el('span', {});
      share.style.width = (100 * list.value(r)) / top + '%';
      const d = el('details', { class: 'site' },
        el('summary', {}, el('span', { class: 'frame-name' }, labels[i]),
          el('span', { class: 'value', title: list.sub(r) }, list.show(list.value(r))),
          el('span', { class: 'share' }, share)));
      // Stacks are built when opened: lists of long stacks cost nothing until then.
      d.addEventListener('toggle', () => {
        if (d.open && d.children.length === 1) {
          const stacks = r.stacks > 1 ? ` · from ${fmtExactCount(r.stacks)} stacks; the largest by bytes:` : '';
          d.append(el('div', { class: 'hint' }, list.sub(r) + stacks), framesTable(r.stack));
        }
      });
      column.append(d);
    });
    host.append(column);
  }
}
