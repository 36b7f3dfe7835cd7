"""How Python reads a report.json (the pytest plugin, the notebook magic, the project's
tests): a stack the report names by its index in "stacks" (memstage.report/2) is given
back as its frames, as memstage.report/1 wrote it in place, so that a reader takes
`entry["stack"]` as a list of frames, innermost first, whichever version it reads."""
import json


def read_report(path):
    """report.json at `path`, its stacks resolved (resolve_stacks)."""
    with open(path, encoding="utf-8") as f:
        return resolve_stacks(json.load(f))


def resolve_stacks(report):
    """Replaces, in place, every "stack" index of `report` with that stack's frames (a null
    index, a stack the analysis could not name, with no frames); returns `report`. A
    memstage.report/1 report, whose stacks are in place already, is returned as it is."""
    stacks = report.get("stacks")
    if stacks is None:
        return report
    frames = report.get("frames", [])
    whole = [[frames[i] for i in stack] for stack in stacks]

    def resolve(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "stack" and (value is None or (isinstance(value, int) and not isinstance(value, bool))):
                    node[key] = whole[value] if value is not None else []
                else:
                    resolve(value)
        elif isinstance(node, list):
            for value in node:
                resolve(value)

    for key, value in report.items():
        if key not in ("frames", "stacks"):
            resolve(value)
    return report
