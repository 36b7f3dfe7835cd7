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

_begin = _end = None
try:
    _self = ctypes.CDLL(None)
    _begin = _self.memstage_tracer_stage_begin
    _begin.argtypes = [ctypes.c_char_p]
    _begin.restype = None
    _end = _self.memstage_tracer_stage_end
    _end.argtypes = []
    _end.restype = None
except (AttributeError, OSError):
    _begin = _end = None


def enabled():
    """True when the memstage tracer is loaded into this process."""
    return _begin is not None


def stage_begin(name):
    if _begin is not None:
        _begin(str(name).encode("utf-8", "replace"))


def stage_end():
    if _end is not None:
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
