#!/usr/bin/env bash
# Remakes the data samples in this folder from the full data sets (the folder that
# shared/data/README.md describes; by default ../shared/data beside the repository).
# The samples are the first rows of each file, in the files' own (hashed, shuffled) order,
# gzipped with no name or time in the header so a rebuild is byte-identical.
#
# usage: tests/data/make_samples.sh [FULL_DATA_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
full=${1:-$here/../../../shared/data}

# sample NAME ROWS: the header (CSV) plus the first ROWS rows of NAME, gzipped.
sample() {
  local name=$1 rows=$2 source="$full/$1"
  local header=0
  case "$name" in *.csv) header=1 ;; esac
  if [ ! -f "$source" ] && [ -f "$source.gz" ]; then source="$source.gz"; fi
  if [ ! -f "$source" ]; then
    echo "make_samples: $full has no $name (or $name.gz)" >&2
    exit 1
  fi
  # `|| true`: head closing the pipe early makes zcat exit with SIGPIPE.
  { zcat -f "$source" || true; } | head -n $((rows + header)) | gzip -n -9 >"$here/$name.gz"
}

sample spam_assassin.train.csv 800
sample spam_assassin.test.csv 300
sample debian_descriptions.train.csv 6000
sample debian_descriptions.train.ft 6000
sample debian_descriptions.test.csv 1000
sample debian_descriptions.test.ft 1000
ls -l "$here"/*.gz
