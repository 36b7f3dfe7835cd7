#!/usr/bin/env bash
# The command line on bad input: one line "memstage-trainer: ..." and a non-zero exit;
# on good input with bad rows and --skip-bad-rows: success and the count.
#
# usage: cli_errors.sh TRAINER CORPUS_GEN
set -uo pipefail
trainer=$1
corpus_gen=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# expect_error REGEX ARGS...: exit status non-zero, stderr exactly one line matching REGEX.
expect_error() {
  local regex=$1
  shift
  local status=0
  "$trainer" --quiet "$@" >"$work/out" 2>"$work/err" || status=$?
  local lines
  lines=$(wc -l <"$work/err")
  if [ "$status" -eq 0 ] || [ "$lines" -ne 1 ] || ! grep -Eq "^memstage-trainer: .*$regex" "$work/err"; then
    echo "FAIL: $* -> status $status, stderr:" >&2
    cat "$work/err" >&2
    failures=$((failures + 1))
  else
    echo "ok: $(cat "$work/err")"
  fi
}

"$corpus_gen" --lines 300 --classes 3 --vocabulary 2000 --seed 1 -o "$work/train.csv"
"$corpus_gen" --lines 100 --classes 3 --vocabulary 2000 --seed 2 -o "$work/test.csv"
: >"$work/empty.csv"
printf 'text,label\nsome words,c0\nmore words,c9\n' >"$work/unknown.csv"
{ head -n 10 "$work/train.csv"; echo '"unterminated,c1'; tail -n +11 "$work/train.csv"; } >"$work/bad.csv"
{ head -n 20 "$work/train.csv"; echo 'a,b,c'; tail -n +21 "$work/train.csv"; } >"$work/extra.csv"

expect_error "missing.csv: No such file" --data "$work/missing.csv" --test "$work/test.csv"
expect_error "empty.csv: empty file" --data "$work/empty.csv" --test "$work/test.csv"
expect_error "empty.csv: empty file" --data "$work/train.csv" --test "$work/empty.csv"
expect_error "unknown.csv:3: label 'c9' does not occur" --data "$work/train.csv" --test "$work/unknown.csv"
expect_error "unknown.csv:3: label 'c9' does not occur" --pipeline naive --data "$work/train.csv" --test "$work/unknown.csv"
expect_error "extra.csv:21: malformed row: too many fields" --data "$work/extra.csv" --test "$work/test.csv"
expect_error "bad.csv:11: malformed row: unterminated quoted field: the quote opened on this line is never closed" --data "$work/bad.csv" --test "$work/test.csv"
expect_error "cannot tell the format" --data "$work/train.json" --test "$work/test.csv"
expect_error "--split must be between" --data "$work/train.csv" --split 1.5
expect_error "--hash-bits is an optimized-pipeline option" --pipeline naive --data "$work/train.csv" --hash-bits 10
expect_error "not a memstage-trainer model" --load "$work/train.csv" --test "$work/test.csv"
expect_error "epochs" --data "$work/train.csv" --epochs nope

# Skipped and counted instead.
if out=$("$trainer" --quiet --skip-bad-rows --data "$work/extra.csv" --test "$work/test.csv" --epochs 2 2>&1) &&
    grep -q "^bad_rows_skipped: 1$" <<<"$out" && grep -q "^accuracy: " <<<"$out"; then
  echo "ok: --skip-bad-rows counts the bad row"
else
  echo "FAIL: --skip-bad-rows: $out" >&2
  failures=$((failures + 1))
fi

# Save, then load (int8) and evaluate: same accuracy line.
if trained=$("$trainer" --quiet --data "$work/train.csv" --test "$work/test.csv" --quantize --save "$work/m.bin") &&
    loaded=$("$trainer" --quiet --load "$work/m.bin" --test "$work/test.csv") &&
    [ "$(grep '^accuracy' <<<"$trained")" = "$(grep '^accuracy' <<<"$loaded")" ]; then
  echo "ok: saved and loaded model agree ($(grep '^accuracy' <<<"$loaded"))"
else
  echo "FAIL: save/load: $trained / $loaded" >&2
  failures=$((failures + 1))
fi

# gzip input through zlib.
gzip -c "$work/train.csv" >"$work/train.csv.gz"
if "$trainer" --quiet --data "$work/train.csv.gz" --test "$work/test.csv" --epochs 1 >/dev/null; then
  echo "ok: reads .csv.gz"
else
  echo "FAIL: .csv.gz input" >&2
  failures=$((failures + 1))
fi

[ "$failures" -eq 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
echo "all CLI checks passed"
