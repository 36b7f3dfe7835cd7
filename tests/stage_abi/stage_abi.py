"""Marks a stage through ctypes and the documented C names alone, without memstage's
Python module: `memstage_stage_begin` / `memstage_stage_end` looked up in the process.

The stage "hold" keeps an 8,000,000-byte bytearray. Exit status 3 when the names are
not found."""
import ctypes
import sys

process = ctypes.CDLL(None)
try:
    begin = process.memstage_stage_begin
    end = process.memstage_stage_end
except AttributeError:
    print("stage_abi.py: memstage_stage_begin/end not found", file=sys.stderr)
    sys.exit(3)
begin.argtypes = [ctypes.c_char_p]
begin.restype = None
end.restype = None

begin(b"hold")
held = bytearray(8_000_000)
end()
print("stage_abi.py:", len(held))
