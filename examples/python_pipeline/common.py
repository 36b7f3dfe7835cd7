"""What train_naive.py and train_streaming.py share: the command line and CSV reading.

Nothing here keeps rows: `iter_rows` and `iter_batches` are generators, so whether the
corpus ends up in memory is each script's own choice (the naive one keeps it all).
"""
import argparse
import csv
import gzip
import os

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DATA_NAME = "debian_descriptions.train.csv.gz"


def default_data():
    """The full Debian descriptions set where it sits (<repo>/../shared/data, or
    <repo>/shared/data), else the 6,000-row sample the repository ships (tests/data)."""
    candidates = [os.path.join(os.path.dirname(REPO), "shared", "data", DATA_NAME),
                  os.path.join(REPO, "shared", "data", DATA_NAME),
                  os.path.join(REPO, "tests", "data", DATA_NAME)]
    return next((path for path in candidates if os.path.exists(path)), candidates[-1])


def parse_args(description, argv=None, extra=None):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", default=default_data(),
                        help="CSV with header text,label; gzipped when the name ends in .gz "
                             "(default: %(default)s)")
    parser.add_argument("--rows", type=int, default=0, help="use the first N rows (0 = all)")
    parser.add_argument("--epochs", type=int, default=2, help="passes over the training rows (default 2)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split and the model (default 0)")
    parser.add_argument("--val-fraction", type=float, default=0.1,
                        help="share of rows held out for the accuracy (default 0.1)")
    parser.add_argument("--shape-out", metavar="FILE", help="write the run's shape facts as JSON to FILE")
    if extra is not None:
        extra(parser)
    args = parser.parse_args(argv)
    if args.rows < 0:
        parser.error("--rows must be 0 (all) or positive")
    if args.epochs < 1:
        parser.error("--epochs must be at least 1")
    if not 0.0 < args.val_fraction < 1.0:
        parser.error("--val-fraction must be between 0 and 1")
    if not os.path.exists(args.data):
        parser.error("no such data file: %s" % args.data)
    return args


def open_csv(path):
    """Opens a text,label CSV for csv.reader, through gzip when the name ends in .gz."""
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return open(path, "r", encoding="utf-8", newline="")


def iter_rows(path, rows=0):
    """Yields (text, label) for the first `rows` rows of the CSV (all when 0), one at a time."""
    with open_csv(path) as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None or [h.strip().lower() for h in header[:2]] != ["text", "label"]:
            raise SystemExit("%s: expected a header 'text,label', got %r" % (path, header))
        for index, row in enumerate(reader):
            if rows and index >= rows:
                break
            if len(row) < 2:
                continue
            yield row[0], row[1]


def iter_batches(path, rows=0, batch_size=1000):
    """Yields lists of at most batch_size (text, label) pairs, reading the file as it goes."""
    batch = []
    for pair in iter_rows(path, rows):
        batch.append(pair)
        if len(batch) == batch_size:
            yield batch
            batch = []
    if batch:
        yield batch
