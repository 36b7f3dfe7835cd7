"""How the Python front doors (the pytest plugin, the notebook magic) write report figures:
bytes in binary units, and a stack as the report page shows it."""
import os


def format_bytes(n):
    """1536 -> "1.5 KiB"; None (a figure the mode did not measure) -> "not measured"."""
    if n is None:
        return "not measured"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0


def frame_text(frame):
    where = frame.get("file") or os.path.basename(frame.get("module") or "?")
    line = frame.get("line")
    return "%s  %s%s" % (frame.get("function"), where, ":%d" % line if line else "")


def stack_lines(stack, frames_shown):
    """A report.json stack's frames, innermost first: allocator plumbing folded, a run of
    unnamed frames of one module (an interpreter without symbols) as one line, at most
    `frames_shown` lines."""
    lines, unnamed, module = [], 0, None
    for frame in [f for f in stack["stack"] if not f.get("allocator")] + [None]:
        if frame is not None and not frame.get("function"):
            this = os.path.basename(frame.get("module") or "?")
            if unnamed and this != module:
                lines.append("[%d frame(s) in %s]" % (unnamed, module))
                unnamed = 0
            unnamed, module = unnamed + 1, this
            continue
        if unnamed:
            lines.append("[%d frame(s) in %s]" % (unnamed, module))
            unnamed = 0
        if frame is not None:
            lines.append(frame_text(frame))
    if len(lines) > frames_shown:
        return lines[:frames_shown] + ["... %d more" % (len(lines) - frames_shown)]
    return lines
