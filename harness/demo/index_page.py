"""Writes OUT/index.html linking every report of the demo, and prints a one-screen summary.

Reads what the demo's commands wrote: compare.json of the pipelines and allocators
comparisons, scale.json, and each run's report.json.
"""
import html
import json
import os
import sys


def mib(n):
    return f"{n / 2**20:,.1f} MiB"


def load(path):
    with open(path) as f:
        return json.load(f)


def reports_under(folder):
    for root, _, files in os.walk(folder):
        if "report.json" in files:
            yield os.path.join(root, "report.json")


def compared_runs(out, section):
    """(variant, report.json path, report) of each full-mode run `memstage compare` wrote
    under out/section (section/VARIANT/full/report.json)."""
    folder = os.path.join(out, section)
    for path in sorted(reports_under(folder)):
        if path.endswith(os.path.join("full", "report.json")):
            yield os.path.relpath(path, folder).split(os.sep)[0], path, load(path)


def report_page(path, out):
    return os.path.relpath(path[:-4] + "html", out)


def main(out):
    lines = []  # the one-screen summary
    links = []  # (section, title, relative href)

    pipelines = {}
    for variant, path, report in compared_runs(out, "pipelines"):
        pipelines[variant] = report
        links.append(("pipelines", f"{variant} pipeline: report", report_page(path, out)))
    links.append(("pipelines", "naive vs optimized, side by side", "pipelines/compare.html"))
    lines.append("naive vs optimized (traced, full mode):")
    for variant, r in pipelines.items():
        t = r["totals"]
        worst = max(r["stages"], key=lambda s: s["peak_heap_bytes"], default=None)
        lines.append(f"  {variant:<10} peak heap {mib(t['peak_heap_bytes']):>12}  peak RSS {mib(t['peak_rss_bytes']):>12}"
                     f"  worst stage {worst['path'] if worst else '-'}")
    if "naive" in pipelines and "optimized" in pipelines:
        ratio = pipelines["naive"]["totals"]["peak_heap_bytes"] / max(1, pipelines["optimized"]["totals"]["peak_heap_bytes"])
        lines.append(f"  the naive pipeline holds {ratio:,.0f} x the optimized one's heap at its peak")

    scale_path = os.path.join(out, "scale", "scale.json")
    if os.path.exists(scale_path):
        s = load(scale_path)
        links.append(("scale", "naive pipeline: growth and the 16 GiB prediction", "scale/scale.html"))
        lines.append("")
        lines.append("scale (naive pipeline):")
        for line in summarize_scale(s):
            lines.append("  " + line)
        for path in sorted(reports_under(os.path.join(out, "scale"))):
            links.append(("scale", f"run {os.path.basename(os.path.dirname(path))}", report_page(path, out)))

    python_runs = {}
    for variant, path, report in compared_runs(out, "python"):
        python_runs[variant] = report
        links.append(("python", f"Python {variant} pipeline: report", report_page(path, out)))
    if python_runs:
        links.append(("python", "Python naive vs streaming, side by side", "python/compare.html"))
        lines.append("Python pipeline (scikit-learn, torch; Python frames):")
        for variant, r in python_runs.items():
            lines.append(f"  {variant:<10} peak heap {mib(r['totals']['peak_heap_bytes'])}, "
                         f"peak RSS {mib(r['totals']['peak_rss_bytes'])}")

    models_path = os.path.join(out, "models", "report.json")
    if os.path.exists(models_path):
        r = load(models_path)
        links.append(("models", "three torch models, fp32 and int8: report", report_page(models_path, out)))
        doc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "models.md")
        links.append(("models", "the walkthrough: docs/models.md", os.path.relpath(doc, out)))
        stages = {s["path"]: s for s in r["stages"]}
        lines.append("")
        lines.append("several models (retained by each stage; docs/models.md):")
        for model in ("mlp", "transformer", "textbag"):
            fp32, int8 = stages.get(model + "/fp32"), stages.get(model + "/int8")
            if fp32 and int8:
                lines.append(f"  {model:<12} fp32 {mib(fp32['retained_bytes']):>10}  int8 {mib(int8['retained_bytes']):>10}"
                             f"  ({int8['retained_bytes'] / max(1, fp32['retained_bytes']):.2f} x)")

    allocators = {}
    for name, path, report in compared_runs(out, "allocators"):
        allocators[name] = report
        links.append(("allocators", f"{name}: report", report_page(path, out)))
    links.append(("allocators", "allocators side by side", "allocators/compare.html"))
    if allocators:
        lines.append("")
        lines.append("allocators (optimized pipeline):")
        for name, r in allocators.items():
            t = r["totals"]
            frag = t["fragmentation"]
            lines.append(f"  {name:<10} peak RSS {mib(t['peak_rss_bytes']):>12}  fragmentation "
                         f"{100 * frag['ratio']:5.1f}%{' (estimated)' if frag['estimated'] else ''}")

    write_index(out, links, lines)
    print("\n".join(lines))
    print(f"\nopen {os.path.join(out, 'index.html')}")


def summarize_scale(s):
    """scale.json's prediction and flags: the figures people ask for first."""
    out = []
    crossing = s.get("crossing") or {}
    ram_gib = s.get("ram_bytes", 0) / 2**30
    if crossing.get("n"):
        low, high = crossing.get("n_range", [None, None])
        spread = f" (leave-one-out refits: {low:,.0f} to {high:,.0f})" if low and high else ""
        out.append(f"total peak {crossing.get('metric', 'rss').upper()} passes {ram_gib:.0f} GiB at about "
                   f"{crossing['n']:,.0f} rows{spread}")
        if crossing.get("first_stage"):
            out.append(f"first stage to pass it: {crossing['first_stage']}")
    else:
        out.append(f"never passes {ram_gib:.0f} GiB by the fitted models")
    for flag in s.get("flags", []):
        out.append(f"flag {flag.get('stage')}: {flag.get('reason')}")
    return out


def write_index(out, links, lines):
    sections = {"pipelines": "Naive vs optimized", "scale": "Scaling: where it stops fitting",
                "python": "Python pipeline", "models": "Several torch models in one process",
                "allocators": "Allocators compared"}
    body = [f"<h1>memstage demo</h1><pre>{html.escape(chr(10).join(lines))}</pre>"]
    for key, title in sections.items():
        items = [f'<li><a href="{html.escape(href)}">{html.escape(text)}</a></li>'
                 for section, text, href in links if section == key and os.path.exists(os.path.join(out, href))]
        if items:
            body.append(f"<h2>{html.escape(title)}</h2><ul>{''.join(items)}</ul>")
    page = ("<!doctype html><html><head><meta charset='utf-8'><title>memstage demo</title>"
            "<style>body{font:15px system-ui,sans-serif;max-width:60em;margin:2em auto;color:#222}"
            "pre{background:#f4f4f6;padding:1em;overflow:auto}a{color:#2458b3}</style></head><body>"
            + "".join(body) + "</body></html>\n")
    with open(os.path.join(out, "index.html"), "w") as f:
        f.write(page)


if __name__ == "__main__":
    main(sys.argv[1])
