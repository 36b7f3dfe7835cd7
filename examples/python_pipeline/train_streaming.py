#!/usr/bin/env python3
"""The same classifier, streamed: its memory does not grow with the number of rows.

What changed against train_naive.py:
- the CSV is read in batches of --batch-rows rows and never kept;
- HashingVectorizer replaces TfidfVectorizer: it needs no vocabulary (so no pass that
  remembers every word) and its output stays sparse;
- the held-out rows are chosen per batch by a seeded rule, not by copying a matrix;
- a linear SGD classifier learns with partial_fit, one sparse batch at a time.
The model (classes x 2**18 float64 weights, about 92 MiB for 44 classes) is the largest
object, and it is the same size at 1,000 rows or 60,000.

Stages (memstage), in the naive script's order: load (one pass that collects the labels),
vectorize (the stateless hasher), split (the held-out rule), train (epochs over the file,
each batch hashed as it is read, then the held-out accuracy).

    /usr/bin/python3 examples/python_pipeline/train_streaming.py --rows 3000
"""
import json
import os
import sys
import time

import numpy as np
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.linear_model import SGDClassifier

try:
    import memstage
except ImportError:  # not pip-installed: use the copy in this repository
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "profiler", "python"))
    import memstage

import common


def extra_args(parser):
    parser.add_argument("--batch-rows", type=int, default=1000, help="rows read and hashed at a time (default 1000)")
    parser.add_argument("--n-features", type=int, default=2**18, help="hashed feature space (default 2**18)")
    parser.add_argument("--jobs", type=int, default=2,
                        help="threads that fit the per-class problems of a batch (default 2)")


def scan_labels(args):
    """One streamed pass: the sorted label names and the row count; no text is kept."""
    labels, rows = set(), 0
    for text, label in common.iter_rows(args.data, args.rows):
        labels.add(label)
        rows += 1
    if rows == 0:
        raise SystemExit("%s: no rows" % args.data)
    return np.array(sorted(labels)), rows


class HeldOut:
    """Which rows of a batch are held out: a seeded draw per batch number, the same in every pass."""

    def __init__(self, seed, fraction):
        self.seed, self.fraction = seed, fraction

    def mask(self, batch_number, size):
        return np.random.default_rng([self.seed, batch_number]).random(size) < self.fraction


def hashed_batches(args, vectorizer, classes):
    """Yields (X sparse, y, batch number) for each batch of the file, reading it as it goes."""
    for number, batch in enumerate(common.iter_batches(args.data, args.rows, args.batch_rows)):
        texts = [text for text, _ in batch]
        y = np.searchsorted(classes, [label for _, label in batch])
        yield vectorizer.transform(texts), y, number


def predict(model, X):
    """model.predict(X) without its copy of the model: predict computes X @ coef_.T, and
    scipy first makes the transposed (Fortran-ordered) coef_ C-contiguous, a second 92 MiB.
    One sparse matrix-vector product per class reads each contiguous row of coef_ in place."""
    scores = np.empty((X.shape[0], model.coef_.shape[0]))
    for k, weights in enumerate(model.coef_):
        scores[:, k] = X @ weights
    scores += model.intercept_
    return model.classes_[scores.argmax(axis=1)]


@memstage.stage("train")
def train(args, vectorizer, held_out, classes):
    model = SGDClassifier(alpha=1e-5, random_state=args.seed, n_jobs=args.jobs)
    for epoch in range(args.epochs):
        seen = 0
        for X, y, number in hashed_batches(args, vectorizer, classes):
            keep = ~held_out.mask(number, X.shape[0])
            if keep.any():
                model.partial_fit(X[keep], y[keep], classes=np.arange(len(classes)))
                seen += int(keep.sum())
        print("epoch %d: trained on %d rows" % (epoch + 1, seen), flush=True)
    correct = total = 0
    for X, y, number in hashed_batches(args, vectorizer, classes):
        val = held_out.mask(number, X.shape[0])
        if val.any():
            correct += int((predict(model, X[val]) == y[val]).sum())
            total += int(val.sum())
    accuracy = correct / max(1, total)
    print("val_accuracy=%.3f on %d held-out rows" % (accuracy, total), flush=True)
    return accuracy


def main(argv=None):
    args = common.parse_args("Streaming pipeline: hashed sparse batches and partial_fit.", argv, extra_args)
    if args.batch_rows < 1 or args.n_features < 2:
        raise SystemExit("--batch-rows must be >= 1 and --n-features >= 2")
    started = time.monotonic()
    with memstage.stage("load"):
        classes, rows = scan_labels(args)
    with memstage.stage("vectorize"):
        vectorizer = HashingVectorizer(n_features=args.n_features, alternate_sign=False, norm="l2")
    with memstage.stage("split"):
        held_out = HeldOut(args.seed, args.val_fraction)
    if args.shape_out:
        with open(args.shape_out, "w", encoding="utf-8") as f:
            json.dump({"variant": "streaming", "rows": rows, "n_features": args.n_features,
                       "classes": len(classes), "batch_rows": args.batch_rows,
                       "model_float64_bytes": len(classes) * args.n_features * 8,
                       "script": os.path.abspath(__file__)}, f, indent=2)
            f.write("\n")
    print("rows=%d classes=%d hashed features=%d" % (rows, len(classes), args.n_features), flush=True)
    accuracy = train(args, vectorizer, held_out, classes)
    print("seconds=%.1f" % (time.monotonic() - started), flush=True)
    print("accuracy=%.3f rows=%d" % (accuracy, rows), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
