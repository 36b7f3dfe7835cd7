#!/usr/bin/env python3
"""The text classifier as a small library first wrote it, and why it needed more than 16 GiB.

It reads the whole corpus into lists, turns it into a dense float64 TF-IDF matrix
(rows x vocabulary x 8 bytes), converts that to float32 (both exist at once), splits it
into train and validation copies by fancy indexing while keeping the original, and then
trains a small torch model on it. On 25,000 Debian package descriptions the dense float64
matrix alone is 25,000 x ~48,000 x 8 B, about 9.6 GB, and the float32 copy adds half of that.

train_streaming.py is the fix. Stages (memstage): load, vectorize, split, train.

    /usr/bin/python3 examples/python_pipeline/train_naive.py --rows 3000
"""
import json
import os
import sys
import time

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

try:
    import memstage
except ImportError:  # not pip-installed: use the copy in this repository
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "profiler", "python"))
    import memstage

import common

BATCH_SIZE = 256
HIDDEN = 32


def extra_args(parser):
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="torch intra-op threads (default: the number of CPUs)")


def load(args):
    texts, labels = [], []
    for text, label in common.iter_rows(args.data, args.rows):
        texts.append(text)
        labels.append(label)
    if not texts:
        raise SystemExit("%s: no rows" % args.data)
    return texts, labels


def vectorize(texts):
    # Dense float64, rows x vocabulary x 8 bytes; then a float32 copy while the float64
    # one is still alive: 12 bytes per cell at the peak. Almost every cell is zero.
    X = TfidfVectorizer().fit_transform(texts).toarray()
    X = X.astype(np.float32)
    return X


def source_line(code):
    """Line number in this file of the statement `code` (there must be exactly one)."""
    with open(os.path.abspath(__file__), encoding="utf-8") as f:
        found = [number for number, line in enumerate(f, 1) if line.strip() == code]
    if len(found) != 1:
        raise RuntimeError("expected one line %r in %s, found %s" % (code, __file__, found))
    return found[0]


def write_shape(path, X):
    rows, vocabulary = X.shape
    facts = {
        "variant": "naive",
        "rows": rows,
        "vocabulary": vocabulary,
        "dense_float64_bytes": rows * vocabulary * 8,
        "dense_float32_bytes": rows * vocabulary * 4,
        "toarray_line": source_line("X = TfidfVectorizer().fit_transform(texts).toarray()"),
        "astype_line": source_line("X = X.astype(np.float32)"),
        "script": os.path.abspath(__file__),
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(facts, f, indent=2)
        f.write("\n")


@memstage.stage("train")
def train(X_train, y_train, X_val, y_val, n_classes, args):
    """Returns the validation accuracy. Imports torch here, so its import-time memory is the train stage's."""
    try:
        import torch
    except ImportError:
        return train_sklearn(X_train, y_train, X_val, y_val, n_classes, args)
    torch.manual_seed(args.seed)
    features = torch.from_numpy(X_train)  # shares X_train's memory: no copy
    targets = torch.from_numpy(y_train)
    val_features = torch.from_numpy(X_val)
    val_targets = torch.from_numpy(y_val)
    torch.set_num_threads(args.threads)
    model = torch.nn.Sequential(torch.nn.Linear(X_train.shape[1], HIDDEN), torch.nn.ReLU(),
                                torch.nn.Linear(HIDDEN, n_classes))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-2)
    loss_fn = torch.nn.CrossEntropyLoss()
    accuracy = 0.0
    for epoch in range(args.epochs):
        model.train()
        order = torch.randperm(features.shape[0])
        total = 0.0
        for start in range(0, features.shape[0], BATCH_SIZE):
            batch = order[start:start + BATCH_SIZE]
            optimizer.zero_grad()
            loss = loss_fn(model(features[batch]), targets[batch])
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch)
        model.eval()
        with torch.no_grad():
            correct = 0
            for start in range(0, val_features.shape[0], BATCH_SIZE):
                predicted = model(val_features[start:start + BATCH_SIZE]).argmax(dim=1)
                correct += int((predicted == val_targets[start:start + BATCH_SIZE]).sum())
        accuracy = correct / max(1, val_features.shape[0])
        print("epoch %d: loss=%.4f val_accuracy=%.3f" % (epoch + 1, total / features.shape[0], accuracy),
              flush=True)
    return accuracy


def train_sklearn(X_train, y_train, X_val, y_val, n_classes, args):
    """Without torch: a linear SGD classifier, fed minibatches so that only 256 rows at a time become float64."""
    from sklearn.linear_model import SGDClassifier
    model = SGDClassifier(alpha=1e-5, random_state=args.seed)
    classes = np.arange(n_classes)
    rng = np.random.default_rng(args.seed)
    accuracy = 0.0
    for epoch in range(args.epochs):
        order = rng.permutation(X_train.shape[0])
        for start in range(0, X_train.shape[0], BATCH_SIZE):
            batch = order[start:start + BATCH_SIZE]
            model.partial_fit(X_train[batch], y_train[batch], classes=classes)
        correct = sum(int((model.predict(X_val[s:s + BATCH_SIZE]) == y_val[s:s + BATCH_SIZE]).sum())
                      for s in range(0, X_val.shape[0], BATCH_SIZE))
        accuracy = correct / max(1, X_val.shape[0])
        print("epoch %d: val_accuracy=%.3f (sklearn SGDClassifier; torch not installed)" % (epoch + 1, accuracy),
              flush=True)
    return accuracy


def main(argv=None):
    args = common.parse_args("Naive TF-IDF pipeline: everything dense and in memory.", argv, extra_args)
    started = time.monotonic()
    with memstage.stage("load"):
        texts, labels = load(args)
    with memstage.stage("vectorize"):
        X = vectorize(texts)
    if args.shape_out:
        write_shape(args.shape_out, X)
    print("rows=%d vocabulary=%d dense float64 would be %.1f MiB" % (X.shape[0], X.shape[1], X.nbytes * 2 / 2**20),
          flush=True)
    with memstage.stage("split"):
        names, y = np.unique(labels, return_inverse=True)
        y = y.astype(np.int64)
        order = np.random.default_rng(args.seed).permutation(X.shape[0])
        n_val = max(1, int(round(X.shape[0] * args.val_fraction)))
        val_idx, train_idx = order[:n_val], order[n_val:]
        X_train = X[train_idx]
        X_val = X[val_idx]
        y_train, y_val = y[train_idx], y[val_idx]
    accuracy = train(X_train, y_train, X_val, y_val, len(names), args)
    print("seconds=%.1f" % (time.monotonic() - started), flush=True)
    print("accuracy=%.3f rows=%d" % (accuracy, X.shape[0]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
