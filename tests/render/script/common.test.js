// The page script's pure helpers (reports/render/html/script/common.js) under node's own
// test runner: `node --test tests/render/script/*.test.js` (ctest: render.page_script_helpers).
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const common = require(path.join(__dirname, '..', '..', '..', 'reports', 'render', 'html', 'script', 'common.js'));

test('byteUnit steps up at each power of 1024 and stops at PiB', () => {
  assert.equal(common.byteUnit(0), 0);
  assert.equal(common.byteUnit(1023), 0);
  assert.equal(common.byteUnit(1024), 1);
  assert.equal(common.byteUnit(-1024 * 1024), 2);
  assert.equal(common.byteUnit(1024 ** 7), 5);
});

test('fmtBytes: whole bytes, then three significant digits at most', () => {
  assert.equal(common.fmtBytes(0), '0 B');
  assert.equal(common.fmtBytes(1023), '1023 B');
  assert.equal(common.fmtBytes(1024), '1.00 KiB');
  assert.equal(common.fmtBytes(1536 * 1024), '1.50 MiB');
  assert.equal(common.fmtBytes(10.25 * 1024 ** 3), '10.3 GiB');
  assert.equal(common.fmtBytes(100 * 1024 ** 2), '100 MiB');
  assert.equal(common.fmtBytes(-2048), '-2.00 KiB');
});

test('fmtBytes: no figure is a dash, never "0 B"', () => {
  for (const missing of [null, undefined, NaN, Infinity]) assert.equal(common.fmtBytes(missing), '–');
});

test('fmtCount: exact below 10,000, then k, M, G, T', () => {
  assert.equal(common.fmtCount(9999), '9999');
  assert.equal(common.fmtCount(10000), '10.0k');
  assert.equal(common.fmtCount(123456), '123k');
  assert.equal(common.fmtCount(1.5e6), '1.5M');
  assert.equal(common.fmtCount(2e12), '2.0T');
  assert.equal(common.fmtCount(null), '–');
});

test('fmtExactCount groups thousands', () => {
  assert.equal(common.fmtExactCount(1234567), '1,234,567');
  assert.equal(common.fmtExactCount(0), '0');
});

test('fmtSeconds picks µs, ms, s or minutes', () => {
  assert.equal(common.fmtSeconds(0), '0 s');
  assert.equal(common.fmtSeconds(0.0000125), '13 µs');
  assert.equal(common.fmtSeconds(0.005), '5.00 ms');
  assert.equal(common.fmtSeconds(0.25), '250.0 ms');
  assert.equal(common.fmtSeconds(2.5), '2.50 s');
  assert.equal(common.fmtSeconds(90), '90.0 s');
  assert.equal(common.fmtSeconds(125), '2 min 5 s');
  assert.equal(common.fmtSeconds(undefined), '–');
});

test('fmtPercent: more digits for small shares, a dash for no whole', () => {
  assert.equal(common.fmtPercent(1, 4), '25%');
  assert.equal(common.fmtPercent(1, 40), '2.5%');
  assert.equal(common.fmtPercent(1, 400), '0.25%');
  assert.equal(common.fmtPercent(0, 5), '0%');
  assert.equal(common.fmtPercent(1, 0), '–');
});

test('hashString is 32-bit FNV-1a', () => {
  // The published FNV-1a test vectors.
  assert.equal(common.hashString(''), 0x811c9dc5);
  assert.equal(common.hashString('a'), 0xe40c292c);
  assert.equal(common.hashString('foobar'), 0xbf9cf968);
});

test('basename keeps what follows the last slash', () => {
  assert.equal(common.basename('/usr/lib/libc.so.6'), 'libc.so.6');
  assert.equal(common.basename('python3'), 'python3');
  assert.equal(common.basename('dir/'), '');
});

test('niceStep rounds to 1, 2 or 5 times a power of ten', () => {
  assert.equal(common.niceStep(10, 10), 1);
  assert.equal(common.niceStep(100, 5), 20);
  assert.equal(common.niceStep(40, 1), 50);
  assert.equal(common.niceStep(7.5, 1), 10);
  assert.equal(common.niceStep(0, 5), 1);
  assert.equal(common.niceStep(5, 0), 5);
});

test('visibleRange: the samples inside the span and one beyond each end', () => {
  const t = [0, 1, 2, 3, 4, 5];
  assert.deepEqual(common.visibleRange(t, 0, 5), { from: 0, to: 5 });
  assert.deepEqual(common.visibleRange(t, 2, 3), { from: 1, to: 4 });
  assert.deepEqual(common.visibleRange(t, 2.5, 2.6), { from: 2, to: 3 });
  assert.deepEqual(common.visibleRange(t, 10, 20), { from: 5, to: 5 });
  const none = common.visibleRange([], 0, 1);
  assert.ok(none.to < none.from);
});

test('nearestIndex: the nearest sample, the later on a tie, 0 for none', () => {
  const t = [0, 1, 2, 4];
  assert.equal(common.nearestIndex(t, -3), 0);
  assert.equal(common.nearestIndex(t, 0.4), 0);
  assert.equal(common.nearestIndex(t, 0.5), 1);
  assert.equal(common.nearestIndex(t, 2.9), 2);
  assert.equal(common.nearestIndex(t, 3.1), 3);
  assert.equal(common.nearestIndex(t, 99), 3);
  assert.equal(common.nearestIndex([], 1), 0);
});

test('rssParts: five segments bottom up, each at least the one below, summing to RSS', () => {
  const b = { live_bytes: 100, allocator_in_use_bytes: 120, allocator_resident_bytes: 200, rss_bytes: 1000, tracer_bytes: 50 };
  assert.deepEqual(common.rssParts(b), [100, 20, 80, 750, 50]);
  // Figures sampled at other moments can disagree: no segment goes negative.
  const odd = { live_bytes: 300, allocator_in_use_bytes: 120, allocator_resident_bytes: 200, rss_bytes: 250 };
  assert.deepEqual(common.rssParts(odd), [300, 0, 0, 0, 0]);
});

test('stageSubtree: a stage with every stage nested in it, at any depth', () => {
  const stages = [{ parent: -1 }, { parent: 0 }, { parent: 1 }, { parent: -1 }, { parent: 3 }];
  assert.deepEqual([...common.stageSubtree(stages, 0)].sort(), [0, 1, 2]);
  assert.deepEqual([...common.stageSubtree(stages, 1)].sort(), [1, 2]);
  assert.deepEqual([...common.stageSubtree(stages, 4)], [4]);
  assert.deepEqual([...common.stageSubtree(stages, -1)], [-1]);
});

test('flameValuesOf: figures summed per node, then rolled up into the parents', () => {
  // root 0 -> 1 -> 2, root 0 -> 3; figures [node, stage, bytes, blocks].
  const parent = [-1, 0, 1, 0];
  const figures = [[2, 0, 100, 1], [1, 1, 10, 2], [3, 0, 5, 3], [2, 1, 1, 4]];
  assert.deepEqual([...common.flameValuesOf(parent, figures, 2, null)], [116, 111, 101, 5]);
  assert.deepEqual([...common.flameValuesOf(parent, figures, 3, null)], [10, 7, 5, 3]);
  assert.deepEqual([...common.flameValuesOf(parent, figures, 2, new Set([1]))], [11, 11, 1, 0]);
});

test('rowsOf makes a column table\'s objects again, absent objects null and nothing under them', () => {
  const table = {
    keys: [['name'], ['device'], ['figures', 'peak'], ['figures', 'split', 'a'], ['device', 'peak'], ['empty'], ['list']],
    rows: [
      ['a', null, 1, 2, null, {}, [1, 2]],
      ['b', null, 3, null, 7, {}, []],
      ['c', null, null, null, null, null, null],
    ],
  };
  assert.deepEqual(common.rowsOf(table), [
    { name: 'a', device: null, figures: { peak: 1, split: { a: 2 } }, empty: {}, list: [1, 2] },
    { name: 'b', device: { peak: 7 }, figures: { peak: 3, split: { a: null } }, empty: {}, list: [] },
    { name: 'c', device: null, figures: { peak: null, split: { a: null } }, empty: null, list: null },
  ]);
  assert.deepEqual(common.rowsOf([{ name: 'x' }]), [{ name: 'x' }]);
});
