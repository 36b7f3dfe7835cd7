#!/usr/bin/env node
// Opens the demo's index.html and every page it links in Debian's chromium, offline from
// file://, and checks each: no console errors, no page errors, no network request, a
// non-empty body. Keeps a screenshot of each in SCREENSHOT_DIR.
//   node check_pages.mjs INDEX.html SCREENSHOT_DIR
// playwright-core from MEMSTAGE_NODE_MODULES (the browser test's npm ci), chromium from
// MEMSTAGE_CHROMIUM or /usr/bin/chromium.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [indexArg, shotsArg] = process.argv.slice(2);
if (!indexArg || !shotsArg) {
  console.error('usage: check_pages.mjs INDEX.html SCREENSHOT_DIR');
  process.exit(2);
}
const index = path.resolve(indexArg);
const shots = path.resolve(shotsArg);
fs.mkdirSync(shots, { recursive: true });
const require = createRequire(path.join(path.resolve(process.env.MEMSTAGE_NODE_MODULES || 'node_modules'), '..', 'x.js'));
const { chromium } = require('playwright-core');

const context = await chromium.launchPersistentContext(fs.mkdtempSync(path.join(os.tmpdir(), 'memstage-demo-')), {
  executablePath: process.env.MEMSTAGE_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1400, height: 900 },
  offline: true,
});
const failures = [];
try {
  const page = await context.newPage();
  await page.goto(pathToFileURL(index).href);
  const links = await page.$$eval('a[href]', (as) => as.map((a) => a.href));
  if (links.length < 3) failures.push(`index.html links only ${links.length} pages`);
  await page.close();
  for (const url of [pathToFileURL(index).href, ...links]) {
    const p = await context.newPage();
    const errors = [];
    p.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
    p.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
    p.on('request', (r) => { if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) errors.push(`request: ${r.url()}`); });
    const response = await p.goto(url);
    if (!response || !response.ok()) errors.push('did not load');
    await p.waitForTimeout(300);
    const textLength = await p.evaluate(() => document.body.innerText.trim().length);
    if (textLength < 20) errors.push('page is empty');
    const name = path.relative(path.dirname(index), new URL(url).pathname).replaceAll('/', '_');
    await p.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
    for (const e of errors) failures.push(`${name}: ${e}`);
    await p.close();
  }
  console.log(`check_pages: ${links.length + 1} pages opened`);
} finally {
  await context.close();
}
if (failures.length) {
  for (const f of failures) console.error(`check_pages: ${f}`);
  process.exit(1);
}
