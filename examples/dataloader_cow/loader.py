"""A DataLoader-style job: a parent holds a dataset, forked workers read it in shuffled
batches. Held as a list of Python objects, every read writes the object's reference count,
so each worker copies every page of the dataset it touches (copy-on-write): the job's
memory grows by about one dataset per worker. Held as a numpy array, the workers read the
parent's pages without writing them: one copy for the whole job.

usage: loader.py --layout objects|numpy [--items N] [--workers W] [--loader fork|torch]
                 [--truth FILE]

--loader fork (the default) forks W worker processes itself, DataLoader-style: each takes
every W-th batch of a shuffled order, and all of them wait at a barrier when done, so that
the instant where every worker holds what it copied exists (tests/jobs uses it: no torch
needed). --loader torch runs the same dataset through torch.utils.data.DataLoader with
num_workers=W. --truth FILE writes the parent's and workers' pids and the dataset's bytes.
"""
import argparse
import json
import multiprocessing
import os
import sys

try:
    import memstage
except ImportError:  # not pip-installed: use the copy in this repository
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "profiler", "python"))
    import memstage

BATCH_ITEMS = 1000


def build_dataset(layout, items):
    """The dataset and its bytes: for objects, the list and every float object it holds."""
    if layout == "objects":
        data = [float(i) for i in range(items)]
        return data, sys.getsizeof(data) + items * sys.getsizeof(1.0)
    import numpy as np
    data = np.arange(items, dtype=np.float64)
    return data, data.nbytes


# A shuffled order without a list of every index: position k reads item k * STRIDE mod N,
# a permutation (STRIDE is a prime above any N here) that lands every batch all over the
# dataset, as a shuffling sampler does.
STRIDE = 1_000_000_007


def read_batch(data, items, batch):
    # What a Dataset's __getitem__ and the collate step do: read each item by index.
    total = 0.0
    for k in range(batch * BATCH_ITEMS, min(items, (batch + 1) * BATCH_ITEMS)):
        total += data[k * STRIDE % items]
    return total


def fork_worker(data, items, worker, workers, done, release):
    with memstage.stage("read_batches"):
        total = 0.0
        batches = (items + BATCH_ITEMS - 1) // BATCH_ITEMS
        for b in range(worker, batches, workers):
            total += read_batch(data, items, b)
    done.wait()     # every worker holds what it copied from here ...
    release.wait()  # ... to here
    os._exit(0 if total >= 0 else 1)


def run_fork(data, items, workers):
    ctx = multiprocessing.get_context("fork")
    done, release = ctx.Barrier(workers + 1), ctx.Barrier(workers + 1)
    procs = [ctx.Process(target=fork_worker, args=(data, items, w, workers, done, release)) for w in range(workers)]
    for p in procs:
        p.start()
    done.wait()
    # A stage edge: the tracer samples the parent's PSS now that the workers share or copied its pages.
    with memstage.stage("workers_done"):
        pass
    release.wait()
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise SystemExit("worker %d exited with %s" % (p.pid, p.exitcode))
    return [p.pid for p in procs]


def run_torch(data, items, workers):
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Items(Dataset):
        def __len__(self):
            return items

        def __getitem__(self, i):
            return data[i]

    loader = DataLoader(Items(), batch_size=BATCH_ITEMS, shuffle=True, num_workers=workers,
                        generator=torch.Generator().manual_seed(0))
    total = 0.0
    for batch in loader:
        total += float(batch.sum())
    if not total >= 0:
        raise SystemExit("bad sum")
    return []  # torch keeps its workers' pids to itself: the report lists them


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layout", choices=["objects", "numpy"], required=True)
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--loader", choices=["fork", "torch"], default="fork")
    parser.add_argument("--truth")
    args = parser.parse_args()
    with memstage.stage("build_dataset"):
        data, data_bytes = build_dataset(args.layout, args.items)
    with memstage.stage("epoch"):
        worker_pids = (run_fork if args.loader == "fork" else run_torch)(data, args.items, args.workers)
    print("layout=%s items=%d workers=%d dataset=%.1f MiB" % (args.layout, args.items, args.workers,
                                                              data_bytes / (1 << 20)))
    if args.truth:
        with open(args.truth, "w") as f:
            json.dump({"parent_pid": os.getpid(), "worker_pids": worker_pids, "dataset_bytes": data_bytes,
                       "layout": args.layout, "workers": args.workers}, f)


if __name__ == "__main__":
    main()
