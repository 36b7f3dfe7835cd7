#!/usr/bin/env node
// How fast a report's page opens and how smoothly its flame graph moves, in headless
// Chromium (a benchmark, not a test; page_open.sh makes its inputs and runs it):
//   node page_open.mjs REPORT.html [ROUNDS]
// Per round, a fresh page: the time from navigation to the page's drawing done
// (body[data-rendered]) and to the first frame painted after it, the longest task while
// loading; then scripted flame-graph moves (zoom into the widest frame, four levels deep,
// then out; the wheel over it; a drag across it), with every animation frame's time and
// the longest task. Prints one JSON line: the medians over rounds of each figure.
// playwright-core as tests/render/browser's (MEMSTAGE_NODE_MODULES, default
// build/tests/render/browser/node_modules); the browser MEMSTAGE_CHROMIUM or /usr/bin/chromium.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';

const [reportArg, roundsArg] = process.argv.slice(2);
if (!reportArg) {
  console.error('usage: page_open.mjs REPORT.html [ROUNDS]');
  process.exit(2);
}
const reportPath = path.resolve(reportArg);
const rounds = Number(roundsArg || 5);
const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.env.MEMSTAGE_NODE_MODULES || path.join(here, '../../build/tests/render/browser/node_modules');
const { chromium } = createRequire(path.join(path.resolve(modules), '..', 'x.js'))('playwright-core');

// Installed before the page's own script: records when it says it has drawn, the first
// frame after that, every long task, and (once armed) every animation frame's time.
function instrument() {
  // paused: the benchmark's own probing, whose tasks and frames are not the page's.
  const m = { rendered: null, painted: null, longTasks: [], frames: [], arm: false, paused: [], skip: 0 };
  window.__pageOpen = m;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) m.longTasks.push({ start: e.startTime, duration: e.duration });
  }).observe({ type: 'longtask', buffered: true });
  new MutationObserver(() => {
    if (m.rendered === null && document.body && document.body.getAttribute('data-rendered') === 'true') {
      m.rendered = performance.now();
      requestAnimationFrame(() => setTimeout(() => { m.painted = performance.now(); }, 0));
    }
  }).observe(document, { attributes: true, subtree: true, attributeFilter: ['data-rendered'] });
  // A frame's time: between the starts of two frames' callbacks, read by the clock (a
  // frame's own timestamp may be set before a long task that delays its callbacks).
  let last = 0;
  const tick = () => {
    const t = performance.now();
    if (m.arm && last && m.skip === 0) m.frames.push(t - last);
    m.skip = Math.max(0, m.skip - 1);
    last = t;
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}

const quantile = (xs, q) => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};
const median = (xs) => quantile(xs, 0.5);
const round1 = (x) => (x === null ? null : Math.round(x * 10) / 10);

// The widest frame that zooming into would widen, or null: on the canvas graph found by
// pointing along its first rows (the detail line names the frame under the pointer), on
// the SVG graph of pages made before it by its elements.
async function zoomTarget(page) {
  return page.evaluate(`(() => {
    ${findTarget.toString()}
    const m = window.__pageOpen;
    const from = performance.now();
    try {
      return findTarget();
    } finally {
      m.paused.push([from, performance.now()]);
      m.skip = 2;
    }
  })()`);
}

// Runs in the page: the frame to click, as zoomTarget says.
function findTarget() {
  const host = document.querySelector('#flame canvas, #flame svg');
  if (!host) return null;
  const box = host.getBoundingClientRect();
  const frames = [];
  if (host.tagName === 'CANVAS') {
    const detail = document.getElementById('flame-detail');
    for (let depth = 0; depth < 8 && depth * 19 < box.height; depth++) {
      for (let x = 1; x < box.width; x += 3) {
        const clientX = box.left + x, clientY = box.top + depth * 19 + 9;
        detail.removeAttribute('data-node');
        host.dispatchEvent(new MouseEvent('mousemove', { clientX, clientY, bubbles: true }));
        const node = detail.getAttribute('data-node');
        if (node !== null) frames.push({ node, width: Number(detail.getAttribute('data-width')), x: clientX, y: clientY });
      }
    }
  } else {
    for (const g of document.querySelectorAll('#flame g.frame:not(.ancestor)')) {
      const r = g.querySelector('rect').getBoundingClientRect();
      frames.push({ node: g.getAttribute('data-node'), width: r.width, x: r.left + Math.min(6, r.width / 2), y: r.top + r.height / 2 });
    }
  }
  const zoom = document.body.getAttribute('data-flame-zoom');
  const fit = frames.filter((c) => c.node !== '0' && c.node !== zoom && c.width > 12 && c.width < box.width * 0.6);
  fit.sort((a, b) => b.width - a.width);
  return fit[0] || null;
}

// Zooms in four levels and back out, twice; then wheels and drags over the graph.
async function moveFlame(page) {
  await page.evaluate(() => document.getElementById('flame-section').scrollIntoView({ block: 'start' }));
  for (let cycle = 0; cycle < 2; cycle++) {
    for (let level = 0; level < 4; level++) {
      const t = await zoomTarget(page);
      if (!t) break;
      await page.mouse.click(t.x, t.y);
      await page.waitForTimeout(50);
    }
    await page.click('#flame-reset');
    await page.waitForTimeout(50);
  }
  const box = await page.evaluate(() => {
    const r = document.getElementById('flame').getBoundingClientRect();
    return { x: r.left + r.width / 2, y: Math.max(r.top, 0) + 40, width: r.width };
  });
  await page.mouse.move(box.x, box.y);
  for (let i = 0; i < 10; i++) await page.mouse.wheel(0, i < 5 ? -120 : 120);
  await page.mouse.down();
  await page.mouse.move(box.x - box.width / 4, box.y, { steps: 20 });
  await page.mouse.up();
  await page.waitForTimeout(100);
}

async function oneRound(context) {
  const page = await context.newPage();
  await page.addInitScript(instrument);
  await page.goto(pathToFileURL(reportPath).href, { waitUntil: 'load', timeout: 300000 });
  await page.waitForFunction(() => window.__pageOpen.painted !== null, null, { timeout: 300000 });
  const load = await page.evaluate(() => {
    const m = window.__pageOpen;
    const loading = m.longTasks.filter((t) => t.start <= m.painted);
    return { rendered: m.rendered, painted: m.painted, longest: Math.max(0, ...loading.map((t) => t.duration)),
      drawn: document.querySelectorAll('#flame *').length, dom: document.getElementsByTagName('*').length };
  });
  await page.evaluate(() => { const m = window.__pageOpen; m.longTasks = []; m.arm = true; });
  await moveFlame(page);
  const move = await page.evaluate(() => {
    const m = window.__pageOpen;
    m.arm = false;
    const mine = (t) => m.paused.some(([from, to]) => t.start < to && t.start + t.duration > from);
    return { frames: m.frames, longest: Math.max(0, ...m.longTasks.filter((t) => !mine(t)).map((t) => t.duration)) };
  });
  await page.close();
  return { load, move };
}

const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstage-page-open-'));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: process.env.MEMSTAGE_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--no-first-run', '--disable-background-networking'],
  viewport: { width: 1400, height: 900 },
  offline: true,
});
const results = [];
try {
  for (let i = 0; i < rounds; i++) results.push(await oneRound(context));
} finally {
  await context.close();
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
const frames = results.map((r) => r.move.frames);
console.log(JSON.stringify({
  report: reportPath,
  bytes: fs.statSync(reportPath).size,
  rounds,
  rendered_ms: round1(median(results.map((r) => r.load.rendered))),
  painted_ms: round1(median(results.map((r) => r.load.painted))),
  load_longest_task_ms: round1(median(results.map((r) => r.load.longest))),
  dom_elements: median(results.map((r) => r.load.dom)),
  flame_elements: median(results.map((r) => r.load.drawn)),
  frame_ms_median: round1(median(frames.map((f) => median(f)))),
  frame_ms_p95: round1(median(frames.map((f) => quantile(f, 0.95)))),
  frame_ms_max: round1(median(frames.map((f) => Math.max(...f)))),
  move_longest_task_ms: round1(median(results.map((r) => r.move.longest))),
}));
