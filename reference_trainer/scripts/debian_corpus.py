#!/usr/bin/env python3
"""Builds a real text-classification corpus on any Debian machine from what apt already has.

Text = a package's short description, plus its long description when the apt lists hold
English translations (Translation-en, matched on package and Description-md5); label =
its Section without a `contrib/`, `non-free/` or `non-free-firmware/` prefix, sections
with fewer than --min-section packages merged into `other`. One row per package name.

Rows are ordered by sha256 of the package name; the first tenth is the test set. Writes
NAME.train.csv, NAME.test.csv (header text,label) and NAME.train.ft, NAME.test.ft.

    python3 debian_corpus.py --out DIR [--name debian_local] [--min-section 200]

Needs only python3 and apt (`apt-cache dumpavail`; `apt-helper cat-file` to read the
compressed Translation-en lists, when there are any). No network.
"""
import argparse
import collections
import csv
import glob
import hashlib
import os
import re
import subprocess
import sys

PREFIXES = ("contrib/", "non-free/", "non-free-firmware/")
APT_HELPER = "/usr/lib/apt/apt-helper"


def stanzas(text):
    """Yields one dict per RFC 822 stanza; continuation lines are joined with newlines."""
    fields, key = {}, None
    for line in text.splitlines():
        if not line.strip():
            if fields:
                yield fields
            fields, key = {}, None
        elif line[0] in " \t" and key:
            fields[key] += "\n" + line[1:]
        elif ":" in line:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    if fields:
        yield fields


def long_descriptions(lists_dir):
    """(package, md5) -> long description, from every Translation-en index apt holds."""
    found = {}
    for path in sorted(glob.glob(os.path.join(lists_dir, "*_i18n_Translation-en*"))):
        try:
            text = subprocess.run([APT_HELPER, "cat-file", path], check=True,
                                  capture_output=True, text=True).stdout
        except (OSError, subprocess.CalledProcessError) as error:
            print(f"debian_corpus: skipping {path}: {error}", file=sys.stderr)
            continue
        for s in stanzas(text):
            body = s.get("Description-en", "")
            if "Package" in s and "Description-md5" in s:
                # drop the short line (repeated from Packages) and the " ." paragraph marks
                lines = [l for l in body.split("\n")[1:] if l.strip() != "."]
                found[(s["Package"], s["Description-md5"])] = " ".join(lines)
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--name", default="debian_local", help="file name prefix")
    parser.add_argument("--min-section", type=int, default=200,
                        help="sections with fewer packages become 'other'")
    parser.add_argument("--lists", default="/var/lib/apt/lists", help="apt lists folder")
    args = parser.parse_args()

    dump = subprocess.run(["apt-cache", "dumpavail"], check=True, capture_output=True, text=True).stdout
    translations = long_descriptions(args.lists)
    rows = {}
    for s in stanzas(dump):
        name, section = s.get("Package"), s.get("Section")
        short = s.get("Description", "").split("\n")[0]
        if not name or not section or not short or name in rows:
            continue
        for prefix in PREFIXES:
            if section.startswith(prefix):
                section = section[len(prefix):]
        text = short + " " + translations.get((name, s.get("Description-md5", "")), "")
        text = re.sub(r"\s+", " ", text).strip()
        rows[name] = (text, section)
    if not rows:
        sys.exit("debian_corpus: apt-cache dumpavail listed no packages (run apt-get update?)")

    sizes = collections.Counter(label for _, label in rows.values())
    ordered = sorted(rows, key=lambda n: hashlib.sha256(n.encode()).hexdigest())
    test_count = len(ordered) // 10
    os.makedirs(args.out, exist_ok=True)
    for part, names in (("test", ordered[:test_count]), ("train", ordered[test_count:])):
        base = os.path.join(args.out, f"{args.name}.{part}")
        with open(base + ".csv", "w", newline="", encoding="utf-8") as c, \
                open(base + ".ft", "w", encoding="utf-8") as f:
            writer = csv.writer(c)
            writer.writerow(["text", "label"])
            for name in names:
                text, label = rows[name]
                if sizes[label] < args.min_section:
                    label = "other"
                writer.writerow([text, label])
                f.write(f"__label__{label} {text}\n")
    labels = {l if sizes[l] >= args.min_section else "other" for l in sizes}
    print(f"debian_corpus: {len(ordered)} packages ({len(translations)} long descriptions), "
          f"{len(labels)} labels, {test_count} test rows -> {args.out}/{args.name}.*")


if __name__ == "__main__":
    main()
