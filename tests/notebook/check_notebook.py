"""A notebook run headless on the kernel `memstage jupyter install` makes (nbclient, Debian's
ipykernel): a %%memstage cell holding a 100,000,000-byte numpy array shows its figures, and
they equal that truth within 2 %; the cell's HTML renders in Chromium, and the report page it
links opens on the flame graph of the cell's stage; %memstage_report writes
the session's page; a kernel not under memstage says in one line how to switch.

    /usr/bin/python3 check_notebook.py MEMSTAGE PROFILER_PYTHON_DIR WORK_DIR
Exit 0: passed; 77: skipped (nbclient, ipykernel or numpy missing); anything else: failed.
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys

SKIP = 77
TRUTH_BYTES = 100_000_000


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def cell_outputs(cell):
    """A code cell's outputs as {mime type or "stream": text}."""
    found = {}
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            found["stream"] = found.get("stream", "") + out["text"]
        for mime, data in out.get("data", {}).items():
            found[mime] = found.get(mime, "") + (data if isinstance(data, str) else "".join(data))
        if out.get("output_type") == "error":
            found["error"] = "%s: %s" % (out["ename"], out["evalue"])
    return found


def run_notebook(sources, kernel, work):
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    NotebookClient(nb, kernel_name=kernel, timeout=180, resources={"metadata": {"path": work}}).execute()
    return [cell_outputs(c) for c in nb.cells]


def install_kernel(memstage, work):
    installed = subprocess.run([memstage, "jupyter", "install", "--user", "--python", sys.executable],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(installed.stdout, end="")
    both = subprocess.run([memstage, "jupyter", "install", "--user", "--prefix", work], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    if both.returncode != 2 or "exclude each other" not in both.stderr:
        fail("jupyter install --user --prefix: exit %d, %r" % (both.returncode, both.stderr))
    bare = subprocess.run([memstage, "jupyter"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if bare.returncode != 2 or "memstage jupyter install" not in bare.stderr:
        fail("memstage jupyter alone: exit %d, %r" % (bare.returncode, bare.stderr))
    spec_path = os.path.join(os.environ["JUPYTER_DATA_DIR"], "kernels", "memstage", "kernel.json")
    if installed.returncode != 0 or not os.path.isfile(spec_path):
        fail("memstage jupyter install --user made no %s" % spec_path)
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    if spec["argv"][:2] != [os.path.realpath(memstage), "run"] or "{connection_file}" not in spec["argv"]:
        fail("the kernel spec does not start ipykernel under memstage run: %s" % spec["argv"])


def check_cell_figures(outputs):
    figures = json.loads(outputs[2].get("stream", "null") or "null")
    if not figures:
        fail("memstage.last_cell() gave nothing: %s" % outputs[2])
    for key in ("peak_heap_increase_bytes", "retained_bytes"):
        if abs(figures[key] - TRUTH_BYTES) > 0.02 * TRUTH_BYTES:
            fail("%s is %d, not within 2%% of the array's %d bytes" % (key, figures[key], TRUTH_BYTES))
    shown = outputs[1]
    if "error" in shown or "memstage: numpy array" not in shown.get("text/html", ""):
        fail("the %%%%memstage cell showed no figures: %s" % shown)
    if "heap rise" not in shown.get("text/plain", ""):
        fail("the cell's plain-text figures are missing: %s" % shown.get("text/plain"))
    print("cell figures:", figures)
    return shown["text/html"]


def rendered_dom(url):
    chromium = shutil.which("chromium")
    return subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", url],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=120).stdout


def check_renders(html_text, work):
    """The cell's HTML in Chromium, and the page it links, opened on the flame graph of the
    cell's stage."""
    if not shutil.which("chromium"):
        print("no chromium: the cell's HTML is not rendered")
        return
    link = re.search(r"<a href='([^']+)'", html_text)
    if not link or "#flame-stage=" not in link.group(1):
        fail("the cell links no flame graph of its stage: %s" % html_text[-600:])
    page = os.path.join(work, html.unescape(link.group(1)))
    cell = os.path.join(work, "cell.html")
    with open(cell, "w", encoding="utf-8") as f:
        f.write("<!doctype html><meta charset=utf-8><body>%s</body>" % html_text)
    dom = rendered_dom("file://" + cell)
    if "heap rise" not in dom or "<table>" not in dom:
        fail("Chromium did not render the cell's table: %s" % dom[:400])
    dom = rendered_dom("file://" + page)
    if "in numpy array and the stages nested in it" not in dom:
        fail("the linked page does not open on the cell's stage's flame graph (%s)" % page)


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    memstage, python_dir, work = (os.path.abspath(a) for a in sys.argv[1:])
    try:
        import nbclient  # noqa: F401
        import ipykernel  # noqa: F401
        import numpy  # noqa: F401
    except ImportError as error:
        print("SKIP: %s (Debian: python3-nbclient, python3-ipykernel, python3-numpy)" % error)
        return SKIP
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.environ["JUPYTER_DATA_DIR"] = os.path.join(work, "jupyter")
    os.environ.pop("LD_PRELOAD", None)
    install_kernel(memstage, work)
    session = os.path.join(work, "session.html")
    outputs = run_notebook([
        "%load_ext memstage\nimport numpy as np",
        "%%memstage numpy array\nkeep = np.ones(" + str(TRUTH_BYTES) + " // 8)",
        "import json, memstage\nf = memstage.last_cell()\n"
        "print(json.dumps({k: f[k] for k in ('peak_heap_increase_bytes', 'retained_bytes', 'peak_rss_bytes')}))",
        "%%memstage_report %s" % session,
    ], "memstage", work)
    check_renders(check_cell_figures(outputs), work)
    if not os.path.isfile(session) or os.path.getsize(session) < 10000:
        fail("%%memstage_report wrote no page at %s: %s" % (session, outputs[3]))
    # A kernel not under memstage: the magic says how to switch, and the cell still runs.
    os.environ["PYTHONPATH"] = python_dir
    plain = run_notebook(["%load_ext memstage", "%%memstage\nx = 6 * 7\nprint(x)"], "python3", work)
    if ("Python 3 (memstage)" not in plain[1].get("stream", "") or "42" not in plain[1].get("stream", "")
            or "text/plain" in plain[1]):
        fail("a kernel without the tracer: %s" % plain[1])
    print("notebook: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
