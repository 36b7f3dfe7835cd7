// memstage HTML report. Reads the JSON data block and draws every section.
// Every name in the data comes from the traced program and is untrusted: it only ever
// reaches the page as text (textContent, SVG text nodes, attribute values set one by one),
// never as markup.
'use strict';

(function main() {
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

  const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  function byteUnit(bytes) {
    let unit = 0;
    while (unit < BYTE_UNITS.length - 1 && Math.abs(bytes) >= 1024 ** (unit + 1)) unit++;
    return unit;
  }
  function fmtBytes(bytes) {
    if (bytes === null || bytes === undefined || !isFinite(bytes)) return '–';
    const unit = byteUnit(bytes);
    const value = bytes / 1024 ** unit;
    const digits = unit === 0 ? 0 : Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2;
    return value.toFixed(digits) + ' ' + BYTE_UNITS[unit];
  }
  function fmtCount(n) {
    if (n === null || n === undefined) return '–';
    if (Math.abs(n) < 10000) return String(n);
    const units = [['', 1], ['k', 1e3], ['M', 1e6], ['G', 1e9], ['T', 1e12]];
    let i = units.length - 1;
    while (i > 0 && Math.abs(n) < units[i][1]) i--;
    const v = n / units[i][1];
    return (v >= 100 ? v.toFixed(0) : v.toFixed(1)) + units[i][0];
  }
  function fmtExactCount(n) {
    return Number(n).toLocaleString('en-US');
  }
  function fmtSeconds(s) {
    if (s === null || s === undefined || !isFinite(s)) return '–';
    const a = Math.abs(s);
    if (a === 0) return '0 s';
    if (a < 1e-3) return (s * 1e6).toFixed(0) + ' µs';
    if (a < 1) return (s * 1e3).toFixed(a < 0.01 ? 2 : 1) + ' ms';
    if (a < 120) return s.toFixed(a < 10 ? 2 : 1) + ' s';
    const m = Math.floor(s / 60);
    return m + ' min ' + (s - 60 * m).toFixed(0) + ' s';
  }
  function fmtPercent(part, whole) {
    if (!whole) return '–';
    const p = (100 * part) / whole;
    return (p >= 10 || p === 0 ? p.toFixed(0) : p >= 1 ? p.toFixed(1) : p.toFixed(2)) + '%';
  }
  function hashString(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
    return h >>> 0;
  }
  function basename(path) {
    const i = path.lastIndexOf('/');
    return i < 0 ? path : path.slice(i + 1);
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

  function niceStep(range, count) {
    const raw = range / Math.max(1, count);
    if (!(raw > 0)) return 1;
    const mag = 10 ** Math.floor(Math.log10(raw));
    const norm = raw / mag;
    return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
  }

  // ---------------------------------------------------------------- model

  const stages = data.stages || [];
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
    // One band per process, in the order of processes, each on top of those before it.
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

  // ---------------------------------------------------------------- timeline

  const timelineView = { t0: 0, t1: runEnd };
  function renderTimeline() {
    const host = document.getElementById('timeline');
    clear(host);
    const width = Math.max(320, host.clientWidth || 900);
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

    // The y range follows what is visible, so zooming in shows detail.
    let first = 0;
    while (first < t.length && t[first] < t0) first++;
    let last = t.length - 1;
    while (last >= 0 && t[last] > t1) last--;
    const from = Math.max(0, first - 1), to = Math.min(t.length - 1, last + 1);
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

    const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, height, role: 'img', 'aria-label': 'live heap and RSS over time' });
    const clipId = 'timeline-clip';
    root.append(svg('defs', {}, svg('clipPath', { id: clipId },
      svg('rect', { x: margin.left, y: 0, width: plotWidth, height }))));

    // Grid and axes.
    root.append(...bytesTimeGrid({ yMax, step, yOf, t0, t1, xOf, margin, width, height, plotWidth, plotHeight }));

    // Stages: a band per nesting level above the plot, and the top level's spans behind it.
    const plotted = svg('g', { 'clip-path': `url(#${clipId})` });
    const bands = svg('g', { class: 'stage-band' });
    stages.forEach((s, i) => {
      const x0 = Math.max(margin.left, xOf(s.start_s));
      const x1 = Math.min(width - margin.right, xOf(s.end_s));
      if (x1 <= x0) return;
      if (s.depth === 0) {
        plotted.append(svg('rect', { x: x0, y: margin.top, width: x1 - x0, height: plotHeight, fill: stageColor(i, 0.13) }));
      }
      const y = 8 + s.depth * bandRow;
      const g = svg('g', { 'data-stage': i });
      g.append(svg('rect', { x: x0, y, width: x1 - x0, height: bandRow - 2, rx: 2, fill: stageColor(i) }));
      const label = fitText(s.name, x1 - x0 - 8, '11px sans-serif');
      if (label) g.append(svg('text', { x: x0 + 4, y: y + bandRow - 6 }, label));
      bands.append(g);
    });
    root.append(plotted, bands);

    // RSS and heap as areas with lines; the points given are drawn in order.
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

    // The heap peak.
    if (totals.peak_heap_bytes > 0 && totals.peak_heap_time_s >= t0 && totals.peak_heap_time_s <= t1) {
      const px = xOf(totals.peak_heap_time_s), py = yOf(totals.peak_heap_bytes);
      const text = `peak ${fmtBytes(totals.peak_heap_bytes)} at ${fmtSeconds(totals.peak_heap_time_s)}`;
      const anchorEnd = px > margin.left + plotWidth * 0.7;
      plotted.append(
        svg('line', { x1: px, x2: px, y1: py, y2: margin.top + plotHeight, stroke: 'var(--peak)', 'stroke-dasharray': '4 3' }),
        svg('circle', { cx: px, cy: py, r: 5, fill: 'var(--peak)', stroke: '#fff', 'stroke-width': 1.5, class: 'peak-marker' }),
        svg('text', { x: px + (anchorEnd ? -9 : 9), y: Math.max(margin.top + 12, py - 6), 'text-anchor': anchorEnd ? 'end' : 'start', class: 'peak-label' }, text));
    }

    // Interaction: hover, drag to zoom, wheel, double click to reset.
    const cursor = svg('line', { class: 'cursor-line', y1: margin.top, y2: margin.top + plotHeight, visibility: 'hidden' });
    const selection = svg('rect', { class: 'selection', y: margin.top, height: plotHeight, visibility: 'hidden' });
    const overlay = svg('rect', { x: margin.left, y: margin.top, width: plotWidth, height: plotHeight, fill: 'transparent', style: 'cursor: crosshair' });
    root.append(cursor, selection, overlay);
    host.append(root);

    const toLocalX = (event) => {
      const box = root.getBoundingClientRect();
      return ((event.clientX - box.left) / box.width) * width;
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
      const time = tOf(x);
      let lo = 0, hi = t.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (t[mid] < time) lo = mid + 1;
        else hi = mid;
      }
      if (lo > 0 && Math.abs(t[lo - 1] - time) < Math.abs(t[lo] - time)) lo--;
      cursor.setAttribute('x1', x);
      cursor.setAttribute('x2', x);
      cursor.setAttribute('visibility', 'visible');
      if (!t.length) return;
      const st = timeline.stage[lo] !== undefined && timeline.stage[lo] !== null ? timeline.stage[lo] : stageAt(t[lo]);
      const lines = [[fmtSeconds(t[lo]), 't-title'], [`heap ${fmtBytes(heap[lo])}`, ''],
        [`RSS ${fmtBytes(rss[lo])}` + (showTracer ? ` (the tracer's own ${fmtBytes(tracer[lo] || 0)})` : ''), ''], [`stage ${stagePath(st)}`, '']];
      if (device && device.t_s.length) {
        let k = -1;
        while (k + 1 < device.t_s.length && device.t_s[k + 1] <= time) k++;
        lines.splice(3, 0, [`device ${fmtBytes(k >= 0 ? device.bytes[k] : 0)}`, '']);
      }
      showTooltip(event, lines);
    });
    overlay.addEventListener('mouseleave', () => {
      cursor.setAttribute('visibility', 'hidden');
      hideTooltip();
    });
    const finishDrag = (event) => {
      if (dragFrom === null) return;
      const x = toLocalX(event);
      const a = Math.min(x, dragFrom), b = Math.max(x, dragFrom);
      dragFrom = null;
      selection.setAttribute('visibility', 'hidden');
      if (b - a > 4) zoomTimeline(tOf(a), tOf(b));
    };
    overlay.addEventListener('mouseup', finishDrag);
    root.addEventListener('mouseleave', () => {
      dragFrom = null;
      selection.setAttribute('visibility', 'hidden');
    });
    root.addEventListener('wheel', (event) => {
      event.preventDefault();
      const center = tOf(toLocalX(event));
      const factor = event.deltaY < 0 ? 1 / 1.25 : 1.25;
      zoomTimeline(center - (center - timelineView.t0) * factor, center + (timelineView.t1 - center) * factor);
    }, { passive: false });
    root.addEventListener('dblclick', () => zoomTimeline(0, runEnd));
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
    { key: 'retained', title: 'Retained', value: (s) => s.retained_bytes, show: (s) => fmtBytes(s.retained_bytes) },
    // A mode that does not follow blocks (stats) did not measure leaks: '–', never "0 B".
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
    // Siblings sort among themselves; children stay under their parent.
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
    const maxPeak = Math.max(1, ...stages.map((s) => s.figures.peak_heap_bytes));
    const body = el('tbody', {});
    for (const i of order) {
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
      body.append(row);
    }
    table.append(el('thead', {}, head), body);
  }

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

  function stageFilterSet() {
    if (flameState.stage === 'all') return null;
    const chosen = Number(flameState.stage);
    const set = new Set([chosen]);
    if (chosen >= 0) {
      // Nested stages count with their parent.
      stages.forEach((s, i) => {
        for (let a = i, guard = 0; a >= 0 && guard < 1000; a = stages[a].parent, guard++) {
          if (a === chosen) set.add(i);
        }
      });
    }
    return set;
  }
  function computeFlameValues() {
    const values = new Float64Array(nodeCount);
    const column = METRICS[flameState.metric].column;
    const filter = stageFilterSet();
    for (const f of flame.figures) {
      if (filter && !filter.has(f[1])) continue;
      values[f[0]] += f[column];
    }
    for (let n = nodeCount - 1; n > 0; n--) values[flame.parent[n]] += values[n];
    flameValues = values;
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
    select.append(el('option', { value: 'all' }, 'all stages'));
    if (flame.figures.some((f) => f[1] < 0)) select.append(el('option', { value: '-1' }, '(outside any stage)'));
    stages.forEach((s, i) => select.append(el('option', { value: String(i) }, '\u00a0\u00a0'.repeat(s.depth) + s.name)));
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

  function updateFlame() {
    computeFlameValues();
    renderFlame();
  }

  function renderFlame() {
    const host = document.getElementById('flame');
    const note = document.getElementById('flame-note');
    const detail = document.getElementById('flame-detail');
    clear(host);
    clear(note);
    clear(detail);
    document.body.setAttribute('data-flame-zoom', String(flameState.zoom));
    if (nodeCount <= 1 || !flame.figures.length) {
      host.append(el('div', { class: 'empty' }, data.mode === 'stats'
        ? 'This run was traced in stats mode, which records no stacks; trace in full mode to see where memory was allocated.'
        : 'No stacks were recorded.'));
      return;
    }
    const metric = METRICS[flameState.metric];
    const total = flameValues[0];
    const zoom = flameState.zoom;
    const zoomValue = flameValues[zoom];
    const width = Math.max(320, host.clientWidth || 900);
    const rowHeight = 19;
    const minWidth = 0.5;  // narrower frames are not drawn
    const font = '11.5px sans-serif';

    // Ancestors of the zoomed node span the whole width above it.
    const chain = [];
    for (let n = zoom; n > 0; n = flame.parent[n]) chain.unshift(n);
    chain.unshift(0);
    const rects = [];
    chain.forEach((n, i) => {
      if (n !== zoom) rects.push({ n, x: 0, w: width, depth: i, ancestor: true });
    });
    let hidden = 0, hiddenValue = 0, maxDepth = chain.length - 1;
    const scale = zoomValue > 0 ? width / zoomValue : 0;
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
    const height = (maxDepth + 1) * rowHeight + 2;
    const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, height, role: 'img', 'aria-label': 'flame graph' });
    root.append(svg('defs', {}, svg('pattern', { id: 'flame-merged', width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' },
      svg('rect', { width: 6, height: 6, fill: '#eceff3' }), svg('rect', { width: 3, height: 6, fill: '#d7dce3' }))));
    const search = flameState.search;
    let matchValue = 0;
    const matched = new Uint8Array(nodeCount);
    if (search) {
      // A match's value counts once even when it calls itself.
      for (const r of rects) {
        if (r.ancestor || r.n === 0) continue;
        if (nodeLabel(r.n).toLowerCase().includes(search)) {
          matched[r.n] = 1;
          let counted = false;
          for (let a = flame.parent[r.n]; a > 0 && a !== flame.parent[zoom]; a = flame.parent[a]) counted = counted || matched[a] === 1;
          if (!counted) matchValue += flameValues[r.n];
        }
      }
    }
    for (const r of rects) {
      if (r.merged) {
        const g = svg('g', { class: 'merged', 'data-merged-into': r.n, 'data-merged-count': r.merged, 'data-merged-value': r.mergedValue, transform: `translate(${r.x.toFixed(2)},${r.depth * rowHeight})` });
        g.append(svg('rect', { width: Math.max(0.5, r.w - 0.5).toFixed(2), height: rowHeight - 1, rx: 1.5, fill: 'url(#flame-merged)' }));
        const label = fitText(`${fmtExactCount(r.merged)} smaller frames`, r.w - 8, font);
        if (label) g.append(svg('text', { x: 4, y: rowHeight - 6 }, label));
        root.append(g);
        continue;
      }
      const classes = ['frame'];
      if (r.ancestor) classes.push('ancestor');
      if (search) classes.push(matched[r.n] ? 'match' : 'dim');
      const g = svg('g', { class: classes.join(' '), 'data-node': r.n, transform: `translate(${r.x.toFixed(2)},${r.depth * rowHeight})` });
      g.append(svg('rect', { width: Math.max(0.5, r.w - 0.5).toFixed(2), height: rowHeight - 1, rx: 1.5, fill: r.ancestor ? '#d5dae2' : frameColor(r.n, r.depth) }));
      const label = fitText(r.n === 0 ? `all: ${fmtMetric(total)}` : nodeLabel(r.n), r.w - 8, font);
      if (label) g.append(svg('text', { x: 4, y: rowHeight - 6 }, label));
      root.append(g);
    }
    host.append(root);

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
    detail.append('Hover a frame for its details.');

    root.addEventListener('click', (event) => {
      const m = event.target.closest('[data-merged-into]');
      if (m) {
        flameState.zoom = Number(m.getAttribute('data-merged-into'));
        hideTooltip();
        renderFlame();
        return;
      }
      const g = event.target.closest('[data-node]');
      if (!g) return;
      const n = Number(g.getAttribute('data-node'));
      flameState.zoom = n === flameState.zoom ? flame.parent[n] >= 0 ? flame.parent[n] : 0 : n;
      hideTooltip();
      renderFlame();
    });
    root.addEventListener('mousemove', (event) => {
      const m = event.target.closest('[data-merged-into]');
      if (m) {
        const into = Number(m.getAttribute('data-merged-into'));
        const value = Number(m.getAttribute('data-merged-value'));
        showTooltip(event, [[`${fmtExactCount(Number(m.getAttribute('data-merged-count')))} smaller frames`, 't-title'],
          [`called from ${nodeLabel(into)}, each too small to show here`, ''],
          [`${fmtMetric(value)} (${fmtPercent(value, total)} of all)` + (absorbed.has(into) ? `, with ${nodeLabel(into)}'s own` : ''), '']]);
        return;
      }
      const g = event.target.closest('[data-node]');
      if (!g) return;
      const n = Number(g.getAttribute('data-node'));
      const f = nodeFrame(n);
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
      showTooltip(event, lines);
      clear(detail);
      detail.append(`${nodeLabel(n)}  ${fmtMetric(flameValues[n])} (${fmtPercent(flameValues[n], total)})` +
        (f && frameLocation(f) ? `  ${frameLocation(f)}` : '') + (f && f[F_MODULE] ? `  ${basename(f[F_MODULE])}` : ''));
    });
    root.addEventListener('mouseleave', hideTooltip);
  }

  // ---------------------------------------------------------------- where the RSS went

  const RSS_SEGMENTS = [
    { cls: 'seg-live', title: 'live (the program\'s bytes)' },
    { cls: 'seg-overhead', title: 'allocator in use on top (rounding, headers)' },
    { cls: 'seg-free', title: 'allocator resident on top (free blocks, retained pages)' },
    { cls: 'seg-other', title: 'rest of RSS (code, stacks, other mappings)' },
    { cls: 'seg-tracer', title: 'the tracer\'s own memory (apart)' },
  ];
  function rssParts(b) {
    const live = b.live_bytes;
    const inUse = Math.max(b.allocator_in_use_bytes, live);
    const resident = Math.max(b.allocator_resident_bytes, inUse);
    const tracer = b.tracer_bytes || 0;
    const other = Math.max(0, b.rss_bytes - resident - tracer);
    return [live, inUse - live, resident - inUse, other, tracer];
  }
  // What of the resident pages other processes also hold (copy-on-write pages after a
  // fork, libraries): summed RSS counts them in each process, PSS once.
  function sharesText(sh) {
    return `resident pages at ${sh.t_s.toFixed(3)} s: ${fmtBytes(sh.shared_bytes)} shared with other processes, ` +
      `${fmtBytes(sh.private_bytes)} private (PSS ${fmtBytes(sh.pss_bytes)})`;
  }
  function renderRss() {
    const legend = document.getElementById('rss-legend');
    for (const s of RSS_SEGMENTS) legend.append(el('span', { class: 'legend' }, el('span', { class: 'swatch ' + s.cls }), s.title));
    const host = document.getElementById('rss');
    const rows = [{ name: 'whole run', path: 'whole run', figures: totals, depth: 0, index: -1 }]
      .concat(stages.map((s, i) => ({ name: s.name, path: s.path, figures: s.figures, depth: s.depth, index: i })));
    const maxTotal = Math.max(1, ...rows.map((r) => rssParts(r.figures.rss_breakdown || {}).reduce((a, b) => a + b, 0)));
    for (const r of rows) {
      const b = r.figures.rss_breakdown;
      if (!b) continue;
      const parts = rssParts(b);
      const bar = el('div', { class: 'rss-bar' });
      parts.forEach((v, k) => {
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
      host.append(el('div', { class: 'rss-row', 'data-stage': r.index },
        el('div', { class: 'name', title: r.path, style: `padding-left: ${14 * r.depth}px` },
          r.index === -1 ? el('strong', {}, r.name) : r.name,
          b.estimated ? el('span', { class: 'badge estimated', title: 'the allocator gave no figures; derived from RSS' }, 'estimated') : null),
        bar,
        el('div', { class: 'numbers' }, `live ${fmtBytes(b.live_bytes)} · RSS ${fmtBytes(b.rss_bytes)} · fragmentation ${(100 * frag.ratio).toFixed(1)}%` +
          (frag.estimated && !b.estimated ? ' (est.)' : ''))));
      if (r.index === -1 && b.shares) host.append(el('div', { class: 'rss-shares note' }, sharesText(b.shares)));
    }
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
        g.runtime ? el('span', { class: 'badge' }, 'runtime') : null),
      framesTable(g.stack));
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

  // ---------------------------------------------------------------- start

  renderSummary();
  renderJob();
  renderTimeline();
  renderStageTable();
  renderFlameControls();
  updateFlame();
  renderRss();
  renderLeaks();
  renderGrowth();
  renderSites();
  document.getElementById('timeline-reset').addEventListener('click', () => zoomTimeline(0, runEnd));
  if (data.device) document.getElementById('device-legend').hidden = false;
  let resizeTimer = 0;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      renderTimeline();
      if (processes.length > 1) renderJobTimeline();
      renderFlame();
    }, 150);
  });
  document.body.setAttribute('data-rendered', 'true');
})();
