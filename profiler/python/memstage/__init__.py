"""memstage stage markers for Python programs.

    import memstage
    with memstage.stage("vectorize"):
        ...

    @memstage.stage("train")
    def train(): ...

The functions come from the tracer that `memstage run` preloads into the process; without
it every marker is a no-op, so scripts keep their markers in.
"""
import contextlib
import ctypes
import sys

_begin = _end = _device_cache = _flush = None
try:
    _self = ctypes.CDLL(None)
    _begin = _self.memstage_tracer_stage_begin
    _begin.argtypes = [ctypes.c_char_p]
    _begin.restype = None
    _end = _self.memstage_tracer_stage_end
    _end.argtypes = []
    _end.restype = None
    _device_cache = getattr(_self, "memstage_tracer_device_cache", None)
    _flush = getattr(_self, "memstage_tracer_flush", None)
    if _flush is not None:
        _flush.argtypes = []
        _flush.restype = None
    if _device_cache is not None:
        _device_cache.argtypes = [ctypes.c_ulonglong, ctypes.c_ulonglong]
        _device_cache.restype = None
except (AttributeError, OSError):
    _begin = _end = _device_cache = _flush = None


def _record_device_cache():
    """PyTorch's caching allocator, once the program has initialised torch.cuda: device
    memory reserved from the driver and the part tensors use, summed over devices. Never
    imports torch or initialises CUDA itself."""
    torch = sys.modules.get("torch")
    if _device_cache is None or torch is None:
        return
    try:
        cuda = torch.cuda
        if not cuda.is_initialized():
            return
        reserved = allocated = 0
        for device in range(cuda.device_count()):
            stats = cuda.memory_stats(device)
            reserved += int(stats.get("reserved_bytes.all.current", 0))
            allocated += int(stats.get("allocated_bytes.all.current", 0))
    except Exception:  # a torch without CUDA, or one whose statistics differ: no figures
        return
    _device_cache(reserved, allocated)


def enabled():
    """True when the memstage tracer is loaded into this process."""
    return _begin is not None


def flush():
    """Has the tracer write everything it recorded so far to its trace (a report of the
    trace read while the program runs then sees it all)."""
    if _flush is not None:
        _flush()


def program():
    """The memstage program: MEMSTAGE, else `memstage` on PATH; None when neither."""
    import os
    import shutil
    return os.environ.get("MEMSTAGE") or shutil.which("memstage")


def trace_path(pid=None, folder=None):
    """The trace of process `pid` (this one by default) in `folder` (this run's, from
    MEMSTAGE_OUTPUT): trace.PID.mst, or after an exec the image's trace.PID.N.mst with the
    highest N; None when there is none."""
    import glob
    import os
    import re
    pid = os.getpid() if pid is None else pid
    folder = os.environ.get("MEMSTAGE_OUTPUT", "") if folder is None else folder
    found = []
    for path in glob.glob(os.path.join(glob.escape(folder), "trace.%d.*mst" % pid)):
        match = re.fullmatch(r"trace\.%d(?:\.(\d+))?\.mst" % pid, os.path.basename(path))
        if match:
            found.append((int(match.group(1) or 0), path))
    return max(found)[1] if found else None


def load_ipython_extension(ipython):
    """`%load_ext memstage`: the %%memstage cell magic and %memstage_report (notebook.py)."""
    from memstage import notebook
    notebook.load(ipython)


def last_cell():
    """The figures of the last `%%memstage` cell (notebook.py): a dict keyed as report.json's
    stage rows; None before the first."""
    from memstage import notebook
    return notebook.last_cell()


def stage_begin(name):
    if _begin is not None:
        _begin(str(name).encode("utf-8", "replace"))
        _record_device_cache()


def stage_end():
    if _end is not None:
        _record_device_cache()
        _end()


class stage(contextlib.ContextDecorator):
    """`with stage("load"):` or `@stage("load")`: marks a stage for its duration."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        stage_begin(self.name)
        return self

    def __exit__(self, *exc):
        stage_end()
        return False
