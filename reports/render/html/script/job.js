// The job section: several processes of one run, their tree, stacked heaps and stacks at the job's peak.

// ---------------------------------------------------------------- the job

// Several processes of one run (forked workers, exec'd programs, ranks) on one clock:
// the process tree, then each process's heap stacked over time with the job's peak.
const processes = data.processes || [];
const job = data.job;
const PROCESS_HUES = [212, 28, 142, 280, 352, 48, 190, 318, 96, 250, 0, 160];
function processColor(i, alpha) {
  const hue = PROCESS_HUES[i % PROCESS_HUES.length];
  const light = 52 + 10 * (Math.floor(i / PROCESS_HUES.length) % 3);
  return `hsla(${hue}, 58%, ${light}%, ${alpha === undefined ? 1 : alpha})`;
}
const severalHosts = processes.some((p) => p.host !== (processes[0] || {}).host);
function processName(p) {
  const program = basename((p.command || [])[0] || '?');
  return (p.rank !== null && p.rank !== undefined ? `rank ${p.rank} · ` : '') + program +
    (severalHosts && p.host ? ` on ${p.host}` : '');
}
function processEnd(p) {
  if (p.ended === 'exec') return `exec'd ${basename(p.exec_path || '')}`;
  if (p.ended === 'signal') return p.signal !== null && p.signal !== undefined ? `killed by signal ${p.signal}` : 'killed by a signal';
  if (p.ended === 'unknown') return 'killed (no end record: SIGKILL, the OOM killer, or a cut trace)';
  return p.exit_code !== null && p.exit_code !== undefined ? `exit ${p.exit_code}` : 'exited';
}

function renderJob() {
  if (processes.length < 2) return;
  document.getElementById('job-section').hidden = false;
  document.getElementById('job-title').textContent = `The job: ${processes.length} processes`;
  const figures = document.getElementById('job-figures');
  const figure = (label, value, sub, cls) =>
    el('div', { class: 'figure' + (cls ? ' ' + cls : '') }, el('div', { class: 'label' }, label),
      el('div', { class: 'value' }, value), sub ? el('div', { class: 'sub' }, sub) : null);
  if (job) {
    figures.append(
      figure('Job peak heap', fmtBytes(job.peak_heap_bytes),
        `all processes at ${fmtSeconds(job.peak_heap_time_s)}, to ${fmtSeconds(job.clock_resolution_s)}`, 'highlight'),
      figure('Job peak RSS', fmtBytes(job.peak_rss_bytes),
        'summed: pages shared between processes count in each'),
      job.peak_pss_bytes !== null && job.peak_pss_bytes !== undefined
        ? figure('Job peak PSS', fmtBytes(job.peak_pss_bytes),
          `shared pages counted once · private ${fmtBytes(job.peak_uss_bytes)}` +
          (job.peak_rss_bytes > 0 ? ` · ${fmtPercent(job.peak_pss_bytes, job.peak_rss_bytes)} of summed RSS` : ''))
        : figure('Job peak PSS', '–', 'not sampled (no /proc/self/smaps_rollup)'));
    if (job.rss_overstates) {
      document.getElementById('job-shared-note').hidden = false;
      document.getElementById('job-shared-note').textContent =
        `Summed RSS (${fmtBytes(job.peak_rss_bytes)}) overstates what the job holds: the processes share pages ` +
        `(copy-on-write after fork, shared libraries), and RSS counts a shared page in every process that maps it. ` +
        `PSS counts it once: ${fmtBytes(job.peak_pss_bytes)}.`;
    }
  }
  renderProcessTree();
  renderJobTimeline();
  renderJobStacks();
}

// Processes by pid: an exec keeps the pid, so the programs one pid ran are steps of one
// process, in the order they ran; children hang under their parent's pid.
function renderProcessTree() {
  const host = document.getElementById('job-tree');
  const byPid = new Map();
  processes.forEach((p, i) => {
    if (!byPid.has(p.pid)) byPid.set(p.pid, []);
    byPid.get(p.pid).push(i);
  });
  for (const steps of byPid.values()) steps.sort((a, b) => processes[a].start_s - processes[b].start_s);
  const children = new Map();
  const roots = [];
  for (const [pid, steps] of byPid) {
    const parent = processes[steps[0]].parent_pid;
    if (parent !== pid && byPid.has(parent)) {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(pid);
    } else {
      roots.push(pid);
    }
  }
  const startOf = (pid) => processes[byPid.get(pid)[0]].start_s;
  const jobPeak = job ? job.peak_heap_bytes : 0;
  const rows = el('ul', { class: 'job-tree' });
  const seen = new Set();
  const add = (pid, list, depth) => {
    if (seen.has(pid)) return;
    seen.add(pid);
    const steps = byPid.get(pid);
    const last = processes[steps[steps.length - 1]];
    const atPeak = steps.reduce((sum, i) => sum + (processes[i].heap_at_job_peak_bytes || 0), 0);
    const item = el('li', { class: 'job-process', 'data-pid': pid, 'data-heap-at-job-peak': atPeak, 'data-depth': depth });
    const head = el('div', { class: 'job-process-head' },
      el('span', { class: 'job-pid' }, `pid ${pid}`),
      steps.map((i, k) => [k ? el('span', { class: 'job-exec-arrow' }, ' → exec → ') : null,
        el('span', { class: 'job-step', 'data-process': i },
          el('span', { class: 'swatch', style: `background:${processColor(i)}` }), processName(processes[i]))]),
      el('span', { class: 'badge' + (last.ended === 'unknown' || last.ended === 'signal' ? ' killed' : '') }, processEnd(last)),
      steps[0] === 0 ? el('span', { class: 'badge' }, 'traced command') : null);
    const numbers = steps.map((i) => {
      const p = processes[i];
      const share = jobPeak ? (p.heap_at_job_peak_bytes || 0) / jobPeak : 0;
      return el('div', { class: 'job-numbers' },
        steps.length > 1 ? el('span', { class: 'job-step-name' }, basename((p.command || [])[0] || '?') + ': ') : null,
        `peak heap ${fmtBytes(p.peak_heap_bytes)} · peak RSS ${fmtBytes(p.peak_rss_bytes)}` +
        (p.peak_pss_bytes !== null && p.peak_pss_bytes !== undefined ? ` · peak PSS ${fmtBytes(p.peak_pss_bytes)}` : '') +
        ` · ${fmtSeconds(p.start_s)} – ${fmtSeconds(p.end_s)}`,
        el('span', { class: 'job-share', title: 'its heap at the job\'s peak, as a share of the job\'s peak' },
          el('span', { class: 'job-share-bar' }, el('span', { style: `width:${(100 * share).toFixed(1)}%;background:${processColor(i)}` })),
          `${fmtBytes(p.heap_at_job_peak_bytes || 0)} at the job's peak (${fmtPercent(p.heap_at_job_peak_bytes || 0, jobPeak)})`));
    });
    item.append(head, el('div', { class: 'command' }, (processes[steps[0]].command || []).join(' ')), ...numbers);
    list.append(item);
    const kids = (children.get(pid) || []).slice().sort((a, b) => startOf(a) - startOf(b));
    if (kids.length) {
      const sub = el('ul', { class: 'job-tree' });
      kids.forEach((k) => add(k, sub, depth + 1));
      item.append(sub);
    }
  };
  roots.sort((a, b) => startOf(a) - startOf(b)).forEach((pid) => add(pid, rows, 0));
  host.append(rows);
}

// One band per process, in the order of processes, each on top of those before it.
function jobBands(tl, xOf, yOf) {
  const t = tl.t_s, n = t.length;
  const below = new Array(n).fill(0);
  const bands = svg('g', { class: 'job-bands' });
  processes.forEach((p, i) => {
    const own = tl.process_heap_bytes[i] || [];
    if (!own.some((v) => v > 0)) return;
    let top = '', bottom = '';
    for (let k = 0; k < n; k++) {
      top += (k ? 'L' : 'M') + xOf(t[k]).toFixed(1) + ',' + yOf(below[k] + (own[k] || 0)).toFixed(1);
    }
    for (let k = n - 1; k >= 0; k--) bottom += 'L' + xOf(t[k]).toFixed(1) + ',' + yOf(below[k]).toFixed(1);
    for (let k = 0; k < n; k++) below[k] += own[k] || 0;
    bands.append(svg('path', { d: top + bottom + 'Z', fill: processColor(i, 0.55), stroke: processColor(i), 'stroke-width': 1,
      class: 'job-band', 'data-process': i }));
  });
  return bands;
}

function renderJobTimeline() {
  const host = document.getElementById('job-timeline');
  clear(host);
  const tl = job && job.timeline;
  if (!tl || !tl.t_s.length) {
    host.append(el('p', { class: 'empty' }, 'No job timeline in this report.'));
    return;
  }
  const t = tl.t_s, n = t.length;
  const width = Math.max(320, host.clientWidth || 900);
  const margin = { left: 70, right: 16, top: 10, bottom: 26 };
  const plotHeight = 240;
  const height = margin.top + plotHeight + margin.bottom;
  const plotWidth = width - margin.left - margin.right;
  const t0 = Math.min(0, t[0]), t1 = Math.max(t[n - 1], ...processes.map((p) => p.end_s || 0)) || 1;
  const xOf = (time) => margin.left + ((time - t0) / (t1 - t0 || 1)) * plotWidth;
  const tOf = (x) => t0 + ((x - margin.left) / plotWidth) * (t1 - t0);
  const pss = tl.pss_bytes;
  let yMax = Math.max(job.peak_heap_bytes, ...tl.heap_bytes, ...tl.rss_bytes, ...(pss || []).map((v) => v || 0));
  yMax = yMax * 1.08 || 1;
  const unit = byteUnit(yMax);
  const step = niceStep(yMax / 1024 ** unit, 5) * 1024 ** unit;
  const yOf = (bytes) => margin.top + plotHeight - (bytes / yMax) * plotHeight;
  const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, height, role: 'img', 'aria-label': 'each process\'s heap, stacked, over time' });
  root.append(...bytesTimeGrid({ yMax, step, yOf, t0, t1, xOf, margin, width, height, plotWidth, plotHeight }));
  const bands = jobBands(tl, xOf, yOf);
  const line = (values) => {
    let d = '';
    for (let k = 0; k < n; k++) if (values[k] !== null && values[k] !== undefined) d += (d ? 'L' : 'M') + xOf(t[k]).toFixed(1) + ',' + yOf(values[k]).toFixed(1);
    return d;
  };
  root.append(bands,
    svg('path', { d: line(tl.rss_bytes), fill: 'none', stroke: 'var(--rss)', 'stroke-width': 1.6, class: 'job-rss' }),
    pss ? svg('path', { d: line(pss), fill: 'none', stroke: 'var(--pss)', 'stroke-width': 1.6, 'stroke-dasharray': '6 3', class: 'job-pss' }) : '');
  // The job's peak: the top of the stack at that instant.
  const px = xOf(job.peak_heap_time_s), py = yOf(job.peak_heap_bytes);
  const anchorEnd = px > margin.left + plotWidth * 0.7;
  root.append(
    svg('line', { x1: px, x2: px, y1: py, y2: margin.top + plotHeight, stroke: 'var(--peak)', 'stroke-dasharray': '4 3' }),
    svg('circle', { cx: px, cy: py, r: 5, fill: 'var(--peak)', stroke: '#fff', 'stroke-width': 1.5, class: 'job-peak-marker',
      'data-bytes': job.peak_heap_bytes }),
    svg('text', { x: px + (anchorEnd ? -9 : 9), y: Math.max(margin.top + 12, py - 6), 'text-anchor': anchorEnd ? 'end' : 'start', class: 'peak-label' },
      `job peak ${fmtBytes(job.peak_heap_bytes)} at ${fmtSeconds(job.peak_heap_time_s)}`));
  const cursor = svg('line', { class: 'cursor-line', y1: margin.top, y2: margin.top + plotHeight, visibility: 'hidden' });
  const overlay = svg('rect', { x: margin.left, y: margin.top, width: plotWidth, height: plotHeight, fill: 'transparent', class: 'job-overlay' });
  root.append(cursor, overlay);
  host.append(root);
  overlay.addEventListener('mousemove', (event) => {
    const box = root.getBoundingClientRect();
    const x = ((event.clientX - box.left) / box.width) * width;
    const time = tOf(x);
    let k = 0;
    for (let j = 1; j < n; j++) if (Math.abs(t[j] - time) < Math.abs(t[k] - time)) k = j;
    // Near the marked peak, the peak: the instant beside it may lie within a pixel.
    const peakIndex = t.indexOf(job.peak_heap_time_s);
    if (peakIndex >= 0 && Math.abs(x - px) <= 4) k = peakIndex;
    cursor.setAttribute('x1', xOf(t[k]));
    cursor.setAttribute('x2', xOf(t[k]));
    cursor.setAttribute('visibility', 'visible');
    const lines = [[fmtSeconds(t[k]), 't-title'], [`job heap ${fmtBytes(tl.heap_bytes[k])}`, ''],
      [`job RSS ${fmtBytes(tl.rss_bytes[k])}` + (pss && pss[k] !== null ? ` · PSS ${fmtBytes(pss[k])}` : ''), '']];
    const held = processes.map((p, i) => [i, (tl.process_heap_bytes[i] || [])[k] || 0]).filter(([, v]) => v > 0)
      .sort((a, b) => b[1] - a[1]);
    for (const [i, v] of held.slice(0, 8)) lines.push([`${fmtBytes(v)} · pid ${processes[i].pid} ${processName(processes[i])}`, '']);
    if (held.length > 8) lines.push([`… and ${held.length - 8} more`, '']);
    showTooltip(event, lines);
  });
  overlay.addEventListener('mouseleave', () => {
    cursor.setAttribute('visibility', 'hidden');
    hideTooltip();
  });
}

function renderJobStacks() {
  const host = document.getElementById('job-stacks');
  const tops = (job && job.top_stacks_at_peak) || [];
  if (!tops.length) return;
  host.append(el('h3', {}, 'Held at the job\'s peak'));
  for (const s of tops) {
    const p = processes[s.process] || {};
    const ids = stackFrames(s.stack);
    const site = ids.map((id) => frames[id]).find((f) => f && !f[F_ALLOCATOR]);
    const d = el('details', { class: 'site job-stack' },
      el('summary', {}, el('span', { class: 'frame-name' }, site ? site[F_LABEL] : `stack #${s.stack}`),
        el('span', { class: 'value' }, `${fmtBytes(s.bytes)} in ${fmtExactCount(s.blocks)} blocks · pid ${p.pid} ${processName(p)}`)));
    d.addEventListener('toggle', () => {
      if (d.open && d.children.length === 1) d.append(framesTable(s.stack));
    });
    host.append(d);
  }
}
