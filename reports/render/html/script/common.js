// The page's pure helpers: numbers and sizes as text, a hash, paths, axis steps, sample
// ranges, the RSS segments, stage subtrees and flame values. No DOM:
// node's test runner loads this file as it is (tests/render/script/common.test.js).
'use strict';

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

function niceStep(range, count) {
  const raw = range / Math.max(1, count);
  if (!(raw > 0)) return 1;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const norm = raw / mag;
  return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
}

// The indices [from, to] of the sorted times `t` drawn for the span t0..t1: those inside and
// one beyond each end, so lines reach the edges; to < from when there is none.
function visibleRange(t, t0, t1) {
  let first = 0;
  while (first < t.length && t[first] < t0) first++;
  let last = t.length - 1;
  while (last >= 0 && t[last] > t1) last--;
  return { from: Math.max(0, first - 1), to: Math.min(t.length - 1, last + 1) };
}

// The index of the sorted times `t` nearest `time`, the later on a tie; 0 when there is none.
function nearestIndex(t, time) {
  let lo = 0, hi = t.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (t[mid] < time) lo = mid + 1;
    else hi = mid;
  }
  if (lo > 0 && Math.abs(t[lo - 1] - time) < Math.abs(t[lo] - time)) lo--;
  return lo;
}

// An RSS breakdown as the page's five segments, bottom up: live bytes, the allocator's
// in-use bytes on top, its resident free bytes on top, the rest of RSS, the tracer's own.
function rssParts(b) {
  const live = b.live_bytes;
  const inUse = Math.max(b.allocator_in_use_bytes, live);
  const resident = Math.max(b.allocator_resident_bytes, inUse);
  const tracer = b.tracer_bytes || 0;
  const other = Math.max(0, b.rss_bytes - resident - tracer);
  return [live, inUse - live, resident - inUse, other, tracer];
}

// The stage `chosen` and every stage nested in it, as a Set of indices; a negative `chosen`
// (outside any stage) is itself alone.
function stageSubtree(stages, chosen) {
  const set = new Set([chosen]);
  if (chosen >= 0) {
    stages.forEach((s, i) => {
      for (let a = i, guard = 0; a >= 0 && guard < 1000; a = stages[a].parent, guard++) {
        if (a === chosen) set.add(i);
      }
    });
  }
  return set;
}

// Each flame node's value: the figures' `column` summed per node (only the stages in
// `stageSet` when there is one), then each node's added to its parent's. Nodes are
// numbered after their parents, node 0 the root.
function flameValuesOf(parent, figures, column, stageSet) {
  const values = new Float64Array(parent.length);
  for (const f of figures) {
    if (stageSet && !stageSet.has(f[1])) continue;
    values[f[0]] += f[column];
  }
  for (let n = parent.length - 1; n > 0; n--) values[parent[n]] += values[n];
  return values;
}

// The objects of a column table (reports/render/html/column_table.h): each row's leaves set
// at their paths; a null sets its leaf only where no shorter path of the row was null (an
// object absent from the row leaves nothing under it).
function rowsOf(table) {
  if (Array.isArray(table)) return table;
  const { keys, rows } = table;
  const byLength = keys.map((_, k) => k).sort((a, b) => keys[a].length - keys[b].length);
  return rows.map((values) => {
    const row = {};
    keys.forEach((path, k) => {
      if (values[k] !== null) setAtPath(row, path, values[k]);
    });
    for (const k of byLength) if (values[k] === null) nullAtPath(row, keys[k]);
    return row;
  });
}
function setAtPath(row, path, value) {
  let o = row;
  for (let i = 0; i < path.length - 1; i++) o = o[path[i]] || (o[path[i]] = {});
  o[path[path.length - 1]] = value;
}
function nullAtPath(row, path) {
  let o = row;
  for (let i = 0; i < path.length - 1; i++) {
    if (o[path[i]] === null) return;
    o = o[path[i]] || (o[path[i]] = {});
  }
  if (!(path[path.length - 1] in o)) o[path[path.length - 1]] = null;
}

// Node's test runner requires this file; the page has no `module` (an element's id could name one,
// never with `exports`).
if (typeof module === 'object' && module && module.exports) {
  module.exports = { byteUnit, fmtBytes, fmtCount, fmtExactCount, fmtSeconds, fmtPercent, hashString, basename, niceStep,
    visibleRange, nearestIndex, rssParts, stageSubtree, flameValuesOf, rowsOf };
}
