// The flame graph (icicle) of the stacks, by metric and stage, with zoom and search.

// ---------------------------------------------------------------- flame graph (icicle)

const flame = data.flame || { parent: [], frame: [], figures: [] };
const nodeCount = flame.parent.length;
const METRICS = [
  { key: 'live', title: 'Live at peak', column: 2, bytes: true, explain: 'bytes live at the run\'s heap peak' },
  { key: 'leaked', title: 'Leaked', column: 3, bytes: true, explain: 'bytes never freed' },
  { key: 'allocated', title: 'Allocated', column: 4, bytes: true, explain: 'bytes allocated over the run' },
  { key: 'count', title: 'Allocations', column: 5, bytes: false, explain: 'allocation calls' },
];
const flameState = { metric: 0, stage: 'all', zoom: 0, search: '' };
const flameChildren = Array.from({ length: nodeCount }, () => []);
const flameDepth = new Int32Array(nodeCount);
for (let n = 1; n < nodeCount; n++) {
  const p = flame.parent[n];
  if (p >= 0 && p < n) {
    flameChildren[p].push(n);
    flameDepth[n] = flameDepth[p] + 1;
  }
}
let flameValues = new Float64Array(nodeCount);
// Nodes into which the renderer merged frames too small to show, with how many.
const absorbed = new Map((flame.absorbed || []).map(([node, count]) => [node, count]));

function computeFlameValues() {
  const filter = flameState.stage === 'all' ? null : stageSubtree(stages, Number(flameState.stage));
  flameValues = flameValuesOf(flame.parent, flame.figures, METRICS[flameState.metric].column, filter);
}
function nodeFrame(n) {
  return n > 0 ? frames[flame.frame[n]] : null;
}
function nodeLabel(n) {
  return n === 0 ? 'all' : nodeFrame(n)[F_LABEL];
}
function frameColor(n, depth) {
  const f = nodeFrame(n);
  if (!f) return '#c7cdd6';
  if (f[F_KIND] === 'python') return `hsl(${48 + (hashString(f[F_LABEL]) % 14)}, 78%, ${62 + (hashString(f[F_LABEL]) % 12)}%)`;
  if (f[F_ALLOCATOR]) return 'hsl(0, 0%, 78%)';
  const moduleHue = [8, 24, 200, 152, 262, 330][hashString(f[F_MODULE]) % 6];
  return `hsl(${moduleHue + (hashString(f[F_LABEL]) % 18)}, ${58 + (depth % 3) * 6}%, ${64 + (hashString(f[F_LABEL]) % 14)}%)`;
}
function fmtMetric(v) {
  return METRICS[flameState.metric].bytes ? fmtBytes(v) : fmtCount(v);
}

// A link may open the flame graph on one stage and metric, `#flame-stage=INDEX&flame-metric=KEY`
// (a notebook cell's output links its stage's page so).
function readFlameHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  const metric = METRICS.findIndex((m) => m.key === params.get('flame-metric'));
  if (metric >= 0) flameState.metric = metric;
  const stage = params.get('flame-stage');
  if (stage !== null && /^-?\d+$/.test(stage) && Number(stage) < stages.length) flameState.stage = stage;
}

function renderFlameControls() {
  const metrics = document.getElementById('flame-metrics');
  METRICS.forEach((m, i) => {
    const b = el('button', { type: 'button', title: m.explain, 'data-metric': m.key, class: i === flameState.metric ? 'active' : null }, m.title);
    b.addEventListener('click', () => {
      flameState.metric = i;
      for (const other of metrics.children) other.classList.toggle('active', other === b);
      flameState.zoom = 0;
      updateFlame();
    });
    metrics.append(b);
  });
  const select = document.getElementById('flame-stage');
  fillStageSelect(select, false);
  // The whole list when the reader reaches for it (a pointer or the keyboard focuses it first).
  for (const type of ['pointerdown', 'focus']) select.addEventListener(type, () => fillStageSelect(select, true));
  select.addEventListener('change', () => {
    flameState.stage = select.value;
    flameState.zoom = 0;
    updateFlame();
  });
  const search = document.getElementById('flame-search');
  search.addEventListener('input', () => {
    flameState.search = search.value.trim().toLowerCase();
    renderFlame();
  });
  document.getElementById('flame-reset').addEventListener('click', () => {
    flameState.zoom = 0;
    renderFlame();
  });
}

// The stage choices: until `all` is asked for, only those before the stages and the one
// chosen, since a select of a long run's thousands of rows took a third of a second to lay out.
function fillStageSelect(select, all) {
  if (select.options.length > 0 && (!all || select.getAttribute('data-filled') === 'all')) return;
  clear(select);
  select.append(el('option', { value: 'all' }, 'all stages'));
  if (flame.figures.some((f) => f[1] < 0)) select.append(el('option', { value: '-1' }, '(outside any stage)'));
  stages.forEach((s, i) => {
    if (all || String(i) === flameState.stage) select.append(el('option', { value: String(i) }, '\u00a0\u00a0'.repeat(s.depth) + s.name));
  });
  select.value = flameState.stage;
  select.setAttribute('data-filled', all || !stages.length ? 'all' : 'chosen');
}

function updateFlame() {
  computeFlameValues();
  renderFlame();
}

// One canvas, not an element per frame (a zoom rebuilt thousands of SVG groups, seconds of
// style and layout on a large run's page), kept and wired once; what it shows now.
const flameCanvas = el('canvas', { role: 'img', 'aria-label': 'flame graph' });
let flameShown = { frameAt: () => null, view: null };
let flameWired = false;

function renderFlame() {
  const host = document.getElementById('flame');
  const note = document.getElementById('flame-note');
  const detail = document.getElementById('flame-detail');
  clear(note);
  clear(detail);
  for (const a of ['data-node', 'data-x', 'data-width', 'data-depth']) detail.removeAttribute(a);
  document.body.setAttribute('data-flame-zoom', String(flameState.zoom));
  if (nodeCount <= 1 || !flame.figures.length) {
    clear(host);
    host.append(el('div', { class: 'empty' }, data.mode === 'stats'
      ? 'This run was traced in stats mode, which records no stacks; trace in full mode to see where memory was allocated.'
      : 'No stacks were recorded.'));
    return;
  }
  const zoom = flameState.zoom;
  const view = { metric: METRICS[flameState.metric], total: flameValues[0], zoom, zoomValue: flameValues[zoom],
    search: flameState.search, rowHeight: 19, font: `11.5px ${getComputedStyle(host).fontFamily}` };
  const width = Math.max(320, host.clientWidth || 900);
  const layout = flameLayout(width, zoom);
  const { matched, matchValue } = flameMatches(layout.rects, view.search, zoom);
  if (flameCanvas.parentNode !== host) {
    clear(host);
    host.append(flameCanvas);
  }
  const ctx = sizedCanvas(flameCanvas, width, (layout.maxDepth + 1) * view.rowHeight + 2);
  view.hatch = mergedFill(ctx);
  for (const r of layout.rects) drawFlameRect(ctx, r, matched, view);
  flameCanvas.setAttribute('data-frames-drawn', String(layout.rects.length));
  flameShown = { frameAt: flameHitTest(layout.rects, view.rowHeight), view };
  writeFlameNote(note, view, layout, matchValue);
  detail.append('Hover a frame for its details.');
  if (!flameWired) wireFlame(flameCanvas, detail);
  flameWired = true;
}

// The canvas sized to `width` x `height` CSS pixels, backed by device pixels, and cleared;
// its context in CSS pixels. Its bitmap is made anew only when the size changes.
function sizedCanvas(canvas, width, height) {
  const scale = window.devicePixelRatio || 1;
  const w = Math.round(width * scale), h = Math.round(height * scale);
  if (canvas.width !== w || canvas.height !== h) {
    canvas.width = w;
    canvas.height = h;
    canvas.style.width = width + 'px';
    canvas.style.height = height + 'px';
  }
  const ctx = canvas.getContext('2d');
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.clearRect(0, 0, w, h);
  ctx.setTransform(scale, 0, 0, scale, 0, 0);
  return ctx;
}

// What is drawn at this zoom: the zoomed node's ancestors across the whole width, then its
// callees by value, largest at the left; frames under half a pixel are counted as hidden.
function flameLayout(width, zoom) {
  const minWidth = 0.5;  // narrower frames are not drawn
  const chain = [];
  for (let n = zoom; n > 0; n = flame.parent[n]) chain.unshift(n);
  chain.unshift(0);
  const rects = [];
  chain.forEach((n, i) => {
    if (n !== zoom) rects.push({ n, x: 0, w: width, depth: i, ancestor: true });
  });
  let hidden = 0, hiddenValue = 0, maxDepth = chain.length - 1;
  const scale = flameValues[zoom] > 0 ? width / flameValues[zoom] : 0;
  const stack = [{ n: zoom, x: 0, depth: chain.length - 1 }];
  while (stack.length) {
    const { n, x, depth } = stack.pop();
    const w = flameValues[n] * scale;
    if (w < minWidth) {
      hidden++;
      hiddenValue += flameValues[n];
      continue;
    }
    rects.push({ n, x, w, depth, ancestor: false });
    maxDepth = Math.max(maxDepth, depth);
    // Largest callee first, at the left.
    const kids = flameChildren[n].filter((c) => flameValues[c] > 0).sort((a, b) => flameValues[b] - flameValues[a]);
    let cx = x, tinyCount = 0, tinyWidth = 0;
    for (const c of kids) {
      const cw = flameValues[c] * scale;
      if (cw < minWidth) {
        tinyCount++;
        tinyWidth += cw;
        hidden++;
        hiddenValue += flameValues[c];
        continue;
      }
      stack.push({ n: c, x: cx, depth: depth + 1 });
      cx += cw;
    }
    // Callees too small to draw, and those the renderer merged into this frame, as one
    // block where they would have been.
    const mergedCount = tinyCount + (absorbed.get(n) || 0);
    const blockWidth = absorbed.has(n) ? x + w - cx : tinyWidth;
    if (mergedCount > 0 && blockWidth >= 2) {
      rects.push({ n, x: cx, w: blockWidth, depth: depth + 1, merged: mergedCount, mergedValue: blockWidth / scale });
      maxDepth = Math.max(maxDepth, depth + 1);
    }
  }
  return { rects, hidden, hiddenValue, maxDepth };
}

// The drawn frames whose label holds the search, and the value they cover; a match's value
// counts once even when it calls itself.
function flameMatches(rects, search, zoom) {
  let matchValue = 0;
  const matched = new Uint8Array(nodeCount);
  if (!search) return { matched, matchValue };
  for (const r of rects) {
    if (r.ancestor || r.n === 0) continue;
    if (nodeLabel(r.n).toLowerCase().includes(search)) {
      matched[r.n] = 1;
      let counted = false;
      for (let a = flame.parent[r.n]; a > 0 && a !== flame.parent[zoom]; a = flame.parent[a]) counted = counted || matched[a] === 1;
      if (!counted) matchValue += flameValues[r.n];
    }
  }
  return { matched, matchValue };
}

// The hatching of merged callees: 3 px stripes at 45 degrees, as the SVG pattern was.
function mergedFill(ctx) {
  const tile = document.createElement('canvas');
  tile.width = 6;
  tile.height = 6;
  const t = tile.getContext('2d');
  t.fillStyle = '#eceff3';
  t.fillRect(0, 0, 6, 6);
  t.fillStyle = '#d7dce3';
  t.fillRect(0, 0, 3, 6);
  const pattern = ctx.createPattern(tile, 'repeat');
  pattern.setTransform(new DOMMatrix().rotate(45));
  return pattern;
}

// A frame as the page's SVG drew it: a rounded box with a white edge, dimmed when a search
// leaves it out, pink when it matches; a merged block hatched; the label cut to fit.
function drawFlameRect(ctx, r, matched, view) {
  const { rowHeight, font, search, total } = view;
  const y = r.depth * rowHeight;
  const w = Math.max(0.5, r.w - 0.5);
  ctx.globalAlpha = search && !r.merged && !matched[r.n] ? 0.25 : 1;
  if (r.merged) ctx.fillStyle = view.hatch;
  else ctx.fillStyle = search && matched[r.n] ? '#e64980' : r.ancestor ? '#d5dae2' : frameColor(r.n, r.depth);
  ctx.beginPath();
  ctx.roundRect(r.x, y, w, rowHeight - 1, 1.5);
  ctx.fill();
  if (!r.merged) {
    ctx.strokeStyle = '#fff';
    ctx.lineWidth = 0.5;
    ctx.stroke();
  }
  ctx.globalAlpha = 1;
  if (r.w - 8 < 14) return;  // too narrow for any label (fitText)
  const text = r.merged ? `${fmtExactCount(r.merged)} smaller frames` : r.n === 0 ? `all: ${fmtMetric(total)}` : nodeLabel(r.n);
  const label = fitText(text, r.w - 8, font);
  if (!label) return;
  ctx.font = r.merged ? font.replace('11.5px', '11px') : font;
  ctx.fillStyle = r.merged ? '#5f6b7a' : '#1a1a1a';
  ctx.fillText(label, r.x + 4, y + rowHeight - 6);
}

// The drawn frame under a point of the canvas (CSS pixels), or null: rows by depth, each
// searched by x.
function flameHitTest(rects, rowHeight) {
  const rows = [];
  for (const r of rects) (rows[r.depth] || (rows[r.depth] = [])).push(r);
  for (const row of rows) if (row) row.sort((a, b) => a.x - b.x);
  return (x, y) => {
    const row = rows[Math.floor(y / rowHeight)];
    if (!row) return null;
    let lo = 0, hi = row.length - 1, found = null;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (row[mid].x <= x) { found = row[mid]; lo = mid + 1; } else hi = mid - 1;
    }
    return found && x < found.x + found.w ? found : null;
  };
}

// What the view shows and what it leaves out (frames pruned by the renderer, or too narrow).
function writeFlameNote(note, view, layout, matchValue) {
  const { metric, total, zoom, zoomValue, search } = view;
  const { hidden, hiddenValue } = layout;
  const pruned = flame.pruned_nodes || 0;
  const parts = [`${metric.title}: ${fmtMetric(total)} in all`];
  if (flameState.stage !== 'all') parts.push(`in ${stagePath(Number(flameState.stage))} and the stages nested in it`);
  if (zoom !== 0) parts.push(`zoomed to ${nodeLabel(zoom)}: ${fmtMetric(zoomValue)} (${fmtPercent(zoomValue, total)})`);
  if (search) parts.push(`“${search}” matches ${fmtMetric(matchValue)} (${fmtPercent(matchValue, zoomValue)} of the view)`);
  note.append(parts.join(' · ') + '. Click a frame to zoom into it, a grey bar above to zoom out.');
  if (pruned > 0 || hidden > 0) {
    const why = [];
    if (pruned > 0) {
      why.push(`${fmtExactCount(pruned)} of ${fmtExactCount(flame.total_nodes)} call-tree frames were each under ` +
        `${(100 * flame.prune_share).toFixed(2)}% of every view and are merged into their callers, whose own share includes them`);
    }
    if (hidden > 0) why.push(`${fmtExactCount(hidden)} frames narrower than half a pixel (${fmtMetric(hiddenValue)}) are drawn together as “smaller frames” at this zoom`);
    note.append(el('br', {}), el('span', { class: 'pruned-note' }, 'Aggregated: ' + why.join('; ') + '.'));
  }
}

// A click zooms into a frame (out again on the zoomed one), a merged block into its
// caller; hovering gives its figures, and the detail line says which frame and where.
function wireFlame(canvas, detail) {
  const hit = (event) => flameShown.frameAt(event.offsetX, event.offsetY);
  canvas.addEventListener('click', (event) => {
    const r = hit(event);
    if (!r) return;
    const n = r.n;
    if (r.merged) flameState.zoom = n;
    else flameState.zoom = n === flameState.zoom ? flame.parent[n] >= 0 ? flame.parent[n] : 0 : n;
    hideTooltip();
    renderFlame();
  });
  canvas.addEventListener('mousemove', (event) => {
    const r = hit(event);
    canvas.style.cursor = r ? 'pointer' : 'default';
    if (!r) return;
    if (r.merged) showTooltip(event, mergedLines(r, flameShown.view));
    else showFlameFrame(event, r, detail, flameShown.view);
  });
  canvas.addEventListener('mouseleave', hideTooltip);
}

function mergedLines(r, view) {
  return [[`${fmtExactCount(r.merged)} smaller frames`, 't-title'],
    [`called from ${nodeLabel(r.n)}, each too small to show here`, ''],
    [`${fmtMetric(r.mergedValue)} (${fmtPercent(r.mergedValue, view.total)} of all)` + (absorbed.has(r.n) ? `, with ${nodeLabel(r.n)}'s own` : ''), '']];
}

// A frame's tooltip and detail line; the detail keeps the frame's node and place on the
// canvas as attributes (what a browser check reads, the canvas holding no elements).
function showFlameFrame(event, r, detail, view) {
  const n = r.n;
  const f = nodeFrame(n);
  showTooltip(event, flameNodeLines(n, f, view));
  clear(detail);
  detail.append(`${nodeLabel(n)}  ${fmtMetric(flameValues[n])} (${fmtPercent(flameValues[n], view.total)})` +
    (f && frameLocation(f) ? `  ${frameLocation(f)}` : '') + (f && f[F_MODULE] ? `  ${basename(f[F_MODULE])}` : ''));
  setAttrs(detail, { 'data-node': n, 'data-x': r.x.toFixed(1), 'data-width': r.w.toFixed(1), 'data-depth': r.depth });
}

// The tooltip's lines for node n (frame f): where it is, its value, and its own share.
function flameNodeLines(n, f, view) {
  const { total, zoom, zoomValue } = view;
  const lines = [[nodeLabel(n), 't-title']];
  if (f) {
    if (frameLocation(f)) lines.push([frameLocation(f), '']);
    if (f[F_MODULE]) lines.push([f[F_MODULE] + (f[F_FUNCTION] ? '' : ' +' + f[F_OFFSET]), '']);
    if (f[F_KIND] === 'python') lines.push(['Python frame', '']);
  }
  lines.push([`${fmtMetric(flameValues[n])} · ${fmtPercent(flameValues[n], total)} of all` +
    (zoom ? ` · ${fmtPercent(flameValues[n], zoomValue)} of the view` : ''), '']);
  let own = flameValues[n];
  for (const c of flameChildren[n]) own -= flameValues[c];
  if (own > 0 && flameChildren[n].length) lines.push([`own (incl. merged callees): ${fmtMetric(own)}`, '']);
  return lines;
}
