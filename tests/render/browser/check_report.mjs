#!/usr/bin/env node
// Loads a memstage HTML report from file:// in Debian's chromium (driven by playwright-core)
// and checks that it works offline and safely:
//   node check_report.mjs REPORT.html SCREENSHOT.png [--expect-text FILE] [--expect-job] [--expect-device]
// - no console errors, no page errors, no network requests, no dialogs;
// - timeline, stage table and flame graph drawn with a non-zero size; a long stage table
//   drawn a slice at a time as it is scrolled, the flame graph one canvas;
// - clicking a flame-graph frame zooms into it; dragging across the timeline zooms it;
// - a chart per growing stack (growth over time), or a note saying why there is none;
// - top allocation sites are program frames (no malloc, operator new, std:: plumbing), each
//   once per list;
// - every stage name is shown as text, and the page holds no <img> and no inline event
//   handler attribute (names from the traced program never become markup);
// - with --expect-text, FILE's contents appear on the page as text;
// - a report of several processes (required with --expect-job) shows the job: one tree
//   entry per pid, nested under its parent's, whose shares of the job's peak add up to it;
//   one stacked band per process that held heap; the job's peak marked, and the pointer
//   over it reads the job's peak; when the report finds summed RSS well over summed PSS, a note says so;
// - a report with device memory (required with --expect-device) shows a "Peak device" figure
//   and a "Peak device" column in the stage table, whose highest cell reads as that figure.
// Writes a full-page screenshot. Exits 0 when every check passes, 1 otherwise.
// playwright-core comes from `npm ci` next to this script, or from the node_modules folder
// named by MEMSTAGE_NODE_MODULES; the browser from MEMSTAGE_CHROMIUM or /usr/bin/chromium.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

function usage() {
  console.error('usage: check_report.mjs REPORT.html SCREENSHOT.png [--expect-text FILE] [--expect-job] [--expect-device]');
  process.exit(2);
}

const args = process.argv.slice(2);
const positional = [];
let expectText = null;
let expectJob = false;
let expectDevice = false;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--expect-text' && i + 1 < args.length) expectText = fs.readFileSync(args[++i], 'utf8');
  else if (args[i] === '--expect-job') expectJob = true;
  else if (args[i] === '--expect-device') expectDevice = true;
  else positional.push(args[i]);
}
if (positional.length !== 2) usage();
const [reportPath, screenshotPath] = positional.map((p) => path.resolve(p));
if (!fs.existsSync(reportPath)) {
  console.error(`check_report: no such file: ${reportPath}`);
  process.exit(2);
}

const require = process.env.MEMSTAGE_NODE_MODULES
  ? createRequire(path.join(path.resolve(process.env.MEMSTAGE_NODE_MODULES), '..', 'resolve-from-here.js'))
  : createRequire(import.meta.url);
const { chromium } = require('playwright-core');
// The page's own reader of its stage rows (a column table), to read its data as it does.
const { rowsOf } = createRequire(import.meta.url)(path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../../reports/render/html/script/common.js'));

const failures = [];
const fail = (message) => failures.push(message);
const consoleErrors = [];
const pageErrors = [];
const dialogs = [];
const requests = [];

const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstage-chromium-'));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: process.env.MEMSTAGE_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1400, height: 900 },
  offline: true,
});
try {
  // Anything but the report itself is a request the page must not make.
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('file:') || url.startsWith('data:')) return route.continue();
    requests.push(url);
    return route.abort();
  });
  const page = context.pages()[0] || (await context.newPage());
  page.on('console', (msg) => {
    if (msg.type() === 'error') consoleErrors.push(msg.text());
  });
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  page.on('dialog', (dialog) => {
    dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    dialog.dismiss().catch(() => {});
  });

  const started = Date.now();
  await page.goto(pathToFileURL(reportPath).href, { waitUntil: 'load' });
  await page.waitForSelector('body[data-rendered="true"]', { timeout: 30000 }).catch(() => fail('the page never finished drawing (body[data-rendered])'));
  const loadMs = Date.now() - started;

  const box = async (selector) => page.evaluate((s) => {
    const e = document.querySelector(s);
    if (!e) return null;
    const r = e.getBoundingClientRect();
    return { width: r.width, height: r.height };
  }, selector);
  const hasStacks = await page.evaluate(() => {
    const data = JSON.parse(document.getElementById('memstage-data').textContent);
    return Boolean(data.flame && data.flame.figures && data.flame.figures.length);
  });
  const required = ['#summary', '#timeline svg', '#stage-table', '#flame-section', hasStacks ? '#flame canvas' : '#flame'];
  for (const selector of required) {
    const b = await box(selector);
    if (!b) fail(`missing: ${selector}`);
    else if (!(b.width > 0 && b.height > 0)) fail(`zero size: ${selector} (${b.width}x${b.height})`);
  }

  const pageStages = rowsOf(await page.evaluate(() => JSON.parse(document.getElementById('memstage-data').textContent).stages));
  // The stage table draws its rows a slice at a time as the reader scrolls: at first a
  // slice or two of a long table, every row once scrolled to its end.
  const tableRows = () => page.evaluate(() => {
    const body = document.querySelector('#stage-table tbody');
    return body && body.hasAttribute('data-rows')
      ? { drawn: Number(body.getAttribute('data-rows-drawn')), rows: Number(body.getAttribute('data-rows')) } : null;
  });
  let rows = await tableRows();
  if (rows && rows.rows > 300 && rows.drawn > 300) fail(`the stage table drew ${rows.drawn} of ${rows.rows} rows before any scrolling`);
  // Scrolled past the table (to the flame graph below it), no more rows are drawn.
  await page.evaluate(() => document.getElementById('flame-section').scrollIntoView({ block: 'start' }));
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  const past = await tableRows();
  if (past && past.rows > 300 && past.drawn > 300) fail(`scrolled past the stage table, it drew ${past.drawn} of ${past.rows} rows`);
  for (let i = 0; rows && rows.drawn < rows.rows && i < rows.rows / 100 + 10; i++) {
    await page.evaluate(() => document.querySelector('#stage-table tbody tr:last-child').scrollIntoView({ block: 'end' }));
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    rows = await tableRows();
  }
  if (rows && rows.drawn !== rows.rows) fail(`the stage table drew ${rows.drawn} of ${rows.rows} rows scrolled to its end`);
  await page.evaluate(() => window.scrollTo(0, 0));
  // Stage names appear as text in the stage table, exactly.
  const stageCheck = await page.evaluate(() => {
    const shown = [...document.querySelectorAll('#stage-table .stage-label')].map((e) => e.textContent);
    return shown;
  }).then((shownNames) => {
    const shown = new Set(shownNames);
    return pageStages.filter((s) => !shown.has(s.name)).map((s) => s.name);
  });
  for (const name of stageCheck) fail(`stage name not shown as text in the stage table: ${JSON.stringify(name)}`);
  // Device memory: the figure and the stage table's column, read off the same data.
  const device = await page.evaluate((stages) => {
    const data = JSON.parse(document.getElementById('memstage-data').textContent);
    data.stages = stages;
    const figure = [...document.querySelectorAll('#summary .figure')].find((f) => f.querySelector('.label').textContent === 'Peak device');
    const headers = [...document.querySelectorAll('#stage-table thead th')].map((th) => th.textContent);
    const column = headers.indexOf('Peak device');
    let highestCell = null, highest = -1;
    for (const row of document.querySelectorAll('#stage-table tbody tr')) {
      const s = data.stages[Number(row.dataset.stage)];
      if (column >= 0 && s && s.device && s.device.peak_bytes > highest) {
        highest = s.device.peak_bytes;
        highestCell = row.children[column].textContent;
      }
    }
    return { used: Boolean(data.device), figure: figure ? figure.querySelector('.value').textContent : null,
      column, highestCell, runPeak: data.device ? data.device.peak_bytes : 0, highest };
  }, pageStages);
  if (expectDevice && !device.used) fail('--expect-device: the report has no device memory');
  if (device.used) {
    if (device.figure === null) fail('device: no "Peak device" figure');
    if (device.column < 0) fail('device: no "Peak device" column in the stage table');
    else if (device.highest === device.runPeak && device.highestCell !== device.figure) {
      fail(`device: the stage table's highest device peak reads ${device.highestCell}, the figure ${device.figure}`);
    }
  } else if (device.figure !== null || device.column >= 0) {
    fail('device: a device figure or column on a report without device memory');
  }
  if (expectText !== null) {
    const found = await page.evaluate((text) => document.body.innerText.includes(text), expectText);
    if (!found) fail(`text not shown on the page: ${JSON.stringify(expectText)}`);
  }
  // Top allocation sites are named by the program's frame that asked for memory: never an
  // allocator or C++ library frame, and each site once per list.
  if (hasStacks) {
    const sites = await page.evaluate(() =>
      [...document.querySelectorAll('#sites .site-list')].map((list) =>
        [...list.querySelectorAll('.site .frame-name')].map((e) => e.textContent)));
    if (!sites.length || !sites[0].length) fail('no top allocation sites shown');
    for (const names of sites) {
      for (const name of names) {
        if (/^(malloc|calloc|realloc|operator new|std::|__gnu_cxx::)|^void std::|::_M_construct|__new_allocator/.test(name)) {
          fail(`allocator plumbing shown as an allocation site: ${name}`);
        }
      }
      const repeated = names.filter((n, i) => names.indexOf(n) !== i);
      if (repeated.length) fail(`allocation sites listed twice: ${[...new Set(repeated)].join(', ')}`);
    }
  }
  // Growth over time: a chart per growing stack (series and fitted line), or a note
  // saying why none is listed.
  const growth = await page.evaluate(() => {
    const data = JSON.parse(document.getElementById('memstage-data').textContent);
    const charts = [...document.querySelectorAll('#growth svg.growth-chart')].map((c) => {
      const r = c.getBoundingClientRect();
      return { width: r.width, height: r.height, paths: c.querySelectorAll('path').length, fits: c.querySelectorAll('.growth-fit').length };
    });
    return { expected: data.growth ? data.growth.stacks.length : 0, charts, note: document.getElementById('growth-note').textContent };
  });
  if (growth.charts.length !== growth.expected) fail(`growth: ${growth.charts.length} charts for ${growth.expected} growing stacks`);
  for (const c of growth.charts) {
    if (!(c.width > 0 && c.height > 0) || c.paths !== 1 || c.fits !== 1) fail(`growth chart not drawn: ${JSON.stringify(c)}`);
  }
  if (!growth.note) fail('growth: no note above the growing stacks');
  const markup = await page.evaluate(() => {
    const handlers = [];
    for (const e of document.querySelectorAll('*')) {
      for (const a of e.attributes) if (a.name.toLowerCase().startsWith('on')) handlers.push(`<${e.tagName.toLowerCase()} ${a.name}>`);
    }
    return { images: document.querySelectorAll('img, iframe, object, embed').length, handlers, scripts: document.scripts.length };
  });
  if (markup.images) fail(`the page holds ${markup.images} <img>/<iframe>/<object>/<embed> elements`);
  if (markup.handlers.length) fail(`inline event handlers on the page: ${markup.handlers.slice(0, 5).join(', ')}`);
  if (markup.scripts !== 2) fail(`expected 2 script elements (data, code), found ${markup.scripts}`);

  // Clicking a flame-graph frame zooms into it: the frame widens to the full width. The
  // graph is one canvas whatever the number of frames drawn; its frames are found by
  // pointing at them (the detail line names the frame under the pointer).
  if (hasStacks) {
    const flameDom = await page.evaluate(() => ({ elements: document.querySelectorAll('#flame *').length,
      drawn: Number(document.querySelector('#flame canvas').getAttribute('data-frames-drawn')) }));
    if (flameDom.elements !== 1) fail(`the flame graph holds ${flameDom.elements} elements, not one canvas`);
    if (!(flameDom.drawn > 0)) fail('the flame graph drew no frames');
    await page.evaluate(() => document.getElementById('flame-section').scrollIntoView({ block: 'start' }));
    const frames = await flameFrames(page);
    const canvasWidth = await page.evaluate(() => document.querySelector('#flame canvas').getBoundingClientRect().width);
    const target = frames.filter((f) => f.node !== '0' && f.width > 12 && f.width < canvasWidth * 0.6)
      .sort((a, b) => b.width - a.width)[0];
    if (!target) {
      console.log('check_report: no flame-graph frame narrow enough to zoom into; skipping the zoom check');
    } else {
      await page.mouse.click(target.clientX, target.clientY);
      const zoom = await page.evaluate(() => document.body.getAttribute('data-flame-zoom'));
      const after = (await flameFrames(page)).find((f) => f.node === target.node);
      if (zoom !== target.node) fail(`flame graph zoom is ${zoom} after clicking node ${target.node}`);
      if (!after || !(after.width > target.width * 1.2)) fail(`flame frame did not widen on click: ${target.width} -> ${after ? after.width : 'gone'}`);
      await page.screenshot({ path: screenshotPath.replace(/\.png$/, '') + '-flame-zoomed.png', fullPage: false,
        clip: await page.evaluate(() => { const r = document.getElementById('flame-section').getBoundingClientRect(); return { x: 0, y: r.top + window.scrollY, width: window.innerWidth, height: Math.min(700, r.height) }; }) }).catch(() => {});
      await page.click('#flame-reset');
    }
  }

  // The job view, drawn from the data and checked against it.
  const jobData = await page.evaluate(() => {
    const data = JSON.parse(document.getElementById('memstage-data').textContent);
    return { processes: data.processes || [], job: data.job };
  });
  if (expectJob && !(jobData.processes.length > 1 && jobData.job)) fail('--expect-job: the report holds no job');
  if (jobData.processes.length > 1 && jobData.job) await checkJob(page, jobData);

  // Where the run's RSS breakdown knows what other processes share, the page says it, in bytes.
  const residentShares = await page.evaluate(() => {
    const data = JSON.parse(document.getElementById('memstage-data').textContent);
    const sh = data.totals && data.totals.rss_breakdown && data.totals.rss_breakdown.shares;
    const n = document.querySelector('#rss .rss-shares');
    return sh ? { bytes: sh.shared_bytes, text: n ? n.textContent : '' } : null;
  });
  if (residentShares && !residentShares.text.includes(`${fmtBytes(residentShares.bytes)} shared with other processes`)) {
    fail(`RSS breakdown: the run's shared pages (${fmtBytes(residentShares.bytes)}) are not said: ${JSON.stringify(residentShares.text)}`);
  }

  // Dragging across the timeline zooms it: its time axis changes.
  const axisText = () => page.evaluate(() => [...document.querySelectorAll('#timeline .axis text')].map((t) => t.textContent).join('|'));
  const before = await axisText();
  const plot = await page.evaluate(() => {
    document.getElementById('timeline').scrollIntoView({ block: 'center' });
    const rects = [...document.querySelectorAll('#timeline svg rect')];
    const overlay = rects[rects.length - 1].getBoundingClientRect();
    return { x: overlay.left, y: overlay.top, width: overlay.width, height: overlay.height };
  });
  await page.mouse.move(plot.x + plot.width * 0.3, plot.y + plot.height / 2);
  await page.mouse.down();
  await page.mouse.move(plot.x + plot.width * 0.5, plot.y + plot.height / 2, { steps: 5 });
  await page.mouse.up();
  const zoomed = await axisText();
  if (zoomed === before) fail('dragging across the timeline did not zoom it');
  await page.mouse.dblclick(plot.x + plot.width / 2, plot.y + plot.height / 2);
  if ((await axisText()) !== before) fail('double click did not reset the timeline zoom');
  await page.mouse.move(0, 0);

  await page.screenshot({ path: screenshotPath, fullPage: true });
  console.log(`check_report: drawn in ${loadMs} ms; screenshot ${screenshotPath}`);
} catch (error) {
  fail(`check_report: ${error && error.stack ? error.stack : error}`);
} finally {
  await context.close().catch(() => {});
  fs.rmSync(userDataDir, { recursive: true, force: true });
}

// As the page writes sizes (report.js fmtBytes).
function fmtBytes(bytes) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let unit = 0;
  while (unit < units.length - 1 && Math.abs(bytes) >= 1024 ** (unit + 1)) unit++;
  const value = bytes / 1024 ** unit;
  const digits = unit === 0 ? 0 : Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2;
  return value.toFixed(digits) + ' ' + units[unit];
}

async function checkJob(page, { processes, job }) {
  const section = await page.evaluate(() => {
    const s = document.getElementById('job-section');
    const chart = document.querySelector('#job-timeline svg');
    const r = chart ? chart.getBoundingClientRect() : null;
    return { hidden: !s || s.hidden, chart: r ? { width: r.width, height: r.height } : null };
  });
  if (section.hidden) fail('job: the job section is hidden for a report of several processes');
  // A report made without the job's timeline (the renderers' fixture) still shows the tree.
  const hasTimeline = Boolean(job.timeline && job.timeline.t_s && job.timeline.t_s.length);
  if (!hasTimeline && expectJob) fail('job: --expect-job and the report has no job timeline');
  if (hasTimeline && !(section.chart && section.chart.width > 0 && section.chart.height > 0)) fail('job: no stacked timeline drawn');
  const tree = await page.evaluate(() => [...document.querySelectorAll('#job-tree li.job-process')].map((li) => {
    const up = li.parentElement.closest('li.job-process');
    return { pid: Number(li.getAttribute('data-pid')), parent: up ? Number(up.getAttribute('data-pid')) : null,
      heapAtPeak: Number(li.getAttribute('data-heap-at-job-peak')), text: li.querySelector('.job-process-head').textContent };
  }));
  const pids = [...new Set(processes.map((p) => p.pid))];
  if (tree.length !== pids.length) fail(`job: ${tree.length} processes in the tree, ${pids.length} pids in the data`);
  for (const p of processes) {
    const node = tree.find((n) => n.pid === p.pid);
    if (!node) { fail(`job: pid ${p.pid} missing from the process tree`); continue; }
    if (!node.text.includes(`pid ${p.pid}`)) fail(`job: the tree entry of pid ${p.pid} does not name it`);
    if (p.rank !== null && p.rank !== undefined && !node.text.includes(`rank ${p.rank}`)) fail(`job: pid ${p.pid} not named by its rank ${p.rank}`);
    const parentTraced = p.parent_pid !== p.pid && pids.includes(p.parent_pid);
    if (parentTraced && node.parent !== p.parent_pid) fail(`job: pid ${p.pid} is not under its parent ${p.parent_pid} (${node.parent})`);
    if (!parentTraced && node.parent !== null) fail(`job: pid ${p.pid}, whose parent is not traced, is nested under ${node.parent}`);
  }
  const shares = tree.reduce((sum, n) => sum + n.heapAtPeak, 0);
  if (shares !== job.peak_heap_bytes) fail(`job: the processes' shares of the job's peak add up to ${shares}, not ${job.peak_heap_bytes}`);
  if (!hasTimeline) return;
  const bands = await page.evaluate(() => document.querySelectorAll('#job-timeline .job-band').length);
  const holding = processes.filter((p, i) => (job.timeline.process_heap_bytes[i] || []).some((v) => v > 0)).length;
  if (bands !== holding) fail(`job: ${bands} stacked bands, ${holding} processes held heap`);
  const marker = await page.evaluate(() => {
    const m = document.querySelector('#job-timeline .job-peak-marker');
    if (!m) return null;
    m.scrollIntoView({ block: 'center' });
    const r = m.getBoundingClientRect();
    return { bytes: Number(m.getAttribute('data-bytes')), x: r.left + r.width / 2, y: r.top + r.height / 2 };
  });
  if (!marker) {
    fail('job: the job\'s peak is not marked');
  } else {
    if (marker.bytes !== job.peak_heap_bytes) fail(`job: the marked peak is ${marker.bytes}, the job's ${job.peak_heap_bytes}`);
    await page.mouse.move(marker.x, marker.y + 20);
    const tip = await page.evaluate(() => document.getElementById('tooltip').innerText);
    const want = `job heap ${fmtBytes(job.peak_heap_bytes)}`;
    if (!tip.includes(want)) fail(`job: the pointer at the peak reads ${JSON.stringify(tip)}, not ${want}`);
    await page.mouse.move(0, 0);
  }
  if (job.rss_overstates) {
    const note = await page.evaluate(() => { const n = document.getElementById('job-shared-note'); return n && !n.hidden ? n.textContent : ''; });
    if (!note.includes('overstates')) fail('job: summed RSS is well over summed PSS and the page does not say so');
  }
}

// The flame graph's frames in its first rows, found by moving the pointer over the canvas
// every 3 px: each frame's node, its x and width on the canvas and a point inside it.
async function flameFrames(page) {
  return page.evaluate(() => {
    const canvas = document.querySelector('#flame canvas');
    const detail = document.getElementById('flame-detail');
    const box = canvas.getBoundingClientRect();
    const found = new Map();
    for (let depth = 0; depth < 6 && depth * 19 < box.height; depth++) {
      for (let x = 1; x < box.width; x += 3) {
        const clientX = box.left + x, clientY = box.top + depth * 19 + 9;
        detail.removeAttribute('data-node');
        canvas.dispatchEvent(new MouseEvent('mousemove', { clientX, clientY, bubbles: true }));
        const node = detail.getAttribute('data-node');
        if (node === null || found.has(node)) continue;
        found.set(node, { node, depth, x: Number(detail.getAttribute('data-x')), width: Number(detail.getAttribute('data-width')), clientX, clientY });
      }
    }
    document.getElementById('tooltip').hidden = true;
    return [...found.values()];
  });
}

for (const e of consoleErrors) fail(`console error: ${e}`);
for (const e of pageErrors) fail(`page error: ${e}`);
for (const d of dialogs) fail(`dialog opened: ${d}`);
for (const r of requests) fail(`network request: ${r}`);
if (failures.length) {
  for (const f of failures) console.error(`FAIL ${f}`);
  process.exit(1);
}
console.log(`check_report: ${reportPath} passed`);
