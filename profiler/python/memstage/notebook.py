"""memstage in Jupyter: `%load_ext memstage`, then `%%memstage [NAME]` on a cell.

The kernel must run under memstage (`memstage jupyter install --user`, then the kernel
"Python 3 (memstage)"). A `%%memstage` cell is a stage ("cell N", or NAME); when it ends the
tracer writes what it recorded, `memstage report` reads this process's trace so far, and the
cell's figures are shown: how far the heap and the RSS rose above where they stood when the
cell began, the process's peaks while it ran, what the cell allocated and still holds, and
the stacks holding most of the heap at the cell's peak, and the report page of the session so
far opened on the flame graph of what the cell still holds. `memstage.last_cell()` returns the
figures as a dict. `%memstage_report` writes the report page of the session so far.
"""
import html
import os
import subprocess
import tempfile

import memstage
from memstage import report_file, report_text
from memstage.report_text import format_bytes

_last_cell = None
FIGURES = (
    ("peak_heap_increase_bytes", "heap rise", "how far the heap rose above its level when the cell began"),
    ("peak_heap_bytes", "peak heap", "the process's heap at its highest while the cell ran"),
    ("peak_rss_increase_bytes", "RSS rise", "how far the RSS rose (sampled every 10 ms)"),
    ("peak_rss_bytes", "peak RSS", "the process's RSS at its highest while the cell ran"),
    ("retained_bytes", "retained", "allocated by the cell and still live when it ended"),
    ("leaked_bytes", "leaked", "allocated by the cell and still live now"),
)
STACKS_SHOWN = 3
FRAMES_SHOWN = 8
SWITCH_HINT = ("memstage: this kernel runs without memstage's tracer, so %%memstage measures nothing. "
               "Install its kernel with `memstage jupyter install --user` and pick \"Python 3 (memstage)\".")


def last_cell():
    """The figures of the last `%%memstage` cell: a dict keyed as report.json's stage rows
    (peak_heap_bytes, peak_heap_increase_bytes, ...), with "stage" and "top_stacks_at_peak"."""
    return None if _last_cell is None else dict(_last_cell)


def _memstage_program():
    path = memstage.program()
    if not path:
        raise RuntimeError("memstage: no memstage program (put it on PATH or in MEMSTAGE)")
    return path


def _report_so_far(fmt, out_path):
    """`memstage report` of this process's trace as written so far."""
    memstage.flush()
    trace = memstage.trace_path()
    if trace is None:
        raise RuntimeError("memstage: no trace of this process in %s" % os.environ.get("MEMSTAGE_OUTPUT"))
    made = subprocess.run([_memstage_program(), "report", trace, "--format", fmt, "-o", out_path],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if made.returncode != 0:
        raise RuntimeError("memstage report: " + (made.stderr.strip() or "exit %d" % made.returncode))


def cell_figures(stage_name):
    """The figures of the last stage named `stage_name` in this process's trace so far."""
    with tempfile.TemporaryDirectory(prefix="memstage-cell-") as tmp:
        path = os.path.join(tmp, "report.json")
        _report_so_far("json", path)
        report = report_file.read_report(path)
    rows = [s for s in report.get("stages", []) if s.get("path") == stage_name]
    if not rows:
        raise RuntimeError("memstage: the report has no stage %r" % stage_name)
    row = rows[-1]
    figures = {key: row.get(key) for key, _, _ in FIGURES}
    figures["stage"] = stage_name
    figures["stage_index"] = report["stages"].index(row)
    figures["top_stacks_at_peak"] = row.get("top_stacks_at_peak", [])[:STACKS_SHOWN]
    return figures


def cell_page(figures, execution_count):
    """The report page of the session so far, opened on the flame graph of what the cell
    still holds (its stage, bytes not yet freed): its path relative to the notebook's folder
    (the kernel's), where the notebook server finds it."""
    page = os.path.join(os.environ.get("MEMSTAGE_OUTPUT", "."), "cell-%d.html" % execution_count)
    _report_so_far("html", page)
    return "%s#flame-stage=%d&flame-metric=leaked" % (os.path.relpath(page), figures["stage_index"])


def figures_text(figures):
    out = ["memstage: %s" % figures["stage"]]
    out += ["  %-10s %12s  (%s)" % (label, format_bytes(figures[key]), why) for key, label, why in FIGURES]
    if figures.get("page"):
        out.append("  the flame graph of what the cell holds: %s" % figures["page"])
    for stack in figures["top_stacks_at_peak"]:
        out.append("  %s in %d block(s) at the cell's peak" % (format_bytes(stack["bytes"]), stack["blocks"]))
        out += ["      " + line for line in report_text.stack_lines(stack, FRAMES_SHOWN)]
    return "\n".join(out)


def figures_html(figures):
    rows = "".join("<tr><th style='text-align:left'>%s</th><td style='text-align:right'>%s</td><td>%s</td></tr>" % (
        label, format_bytes(figures[key]), html.escape(why)) for key, label, why in FIGURES)
    stacks = "".join(
        "<details><summary>%s in %d block(s) at the cell's peak</summary><pre>%s</pre></details>" % (
            format_bytes(s["bytes"]), s["blocks"], html.escape("\n".join(report_text.stack_lines(s, FRAMES_SHOWN))))
        for s in figures["top_stacks_at_peak"])
    page = figures.get("page")
    flame = ("<p><a href='%s' target='_blank'>the flame graph of what the cell holds</a> (the report page of the "
             "session so far)</p><iframe src='%s' style='width:100%%;height:520px;border:0'></iframe>"
             % (html.escape(page, quote=True), html.escape(page, quote=True))) if page else ""
    return ("<div class='memstage-cell'><b>memstage: %s</b><table>%s</table>%s%s</div>"
            % (html.escape(figures["stage"]), rows, stacks, flame))


class _Figures:
    """Shown by IPython as HTML where the front end can, as text elsewhere."""

    def __init__(self, figures):
        self.figures = figures

    def _repr_html_(self):
        return figures_html(self.figures)

    def __repr__(self):
        return figures_text(self.figures)


def load(ipython):
    from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
    from IPython.display import display

    @magics_class
    class MemstageMagics(Magics):
        @cell_magic
        def memstage(self, line, cell):
            global _last_cell
            if not memstage.enabled():
                print(SWITCH_HINT)
                self.shell.run_cell(cell)
                return None
            name = line.strip() or "cell %d" % self.shell.execution_count
            memstage.stage_begin(name)
            try:
                self.shell.run_cell(cell)
            finally:
                memstage.stage_end()
            _last_cell = cell_figures(name)
            _last_cell["page"] = cell_page(_last_cell, self.shell.execution_count)
            display(_Figures(_last_cell))
            return None

        @line_magic
        def memstage_report(self, line):
            if not memstage.enabled():
                print(SWITCH_HINT)
                return
            path = os.path.abspath(line.strip() or os.path.join(os.environ["MEMSTAGE_OUTPUT"], "session.html"))
            _report_so_far("html", path)
            print("memstage: the report of the session so far is in %s" % path)

    ipython.register_magics(MemstageMagics)
