"""pip-installs profiler/python into a fresh venv, offline, and checks the installed module.

    /usr/bin/python3 check_pip_install.py PROFILER_PYTHON_DIR

Installs a copy of the folder (so the build leaves nothing in the source tree) with
`pip install --no-build-isolation --no-index`, as a Debian 12 machine without network
would, then runs the venv's python outside the repository: `import memstage` must find the
installed file, report the tracer absent, and its stage markers (with-block, decorator,
nested, through an exception) must be no-ops that change nothing.
Exit 0: passed; 77: skipped (no venv/ensurepip in this python); anything else: failed.
"""
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77

CHECK = r'''
import os, sys
import memstage
here = os.path.realpath(os.path.dirname(os.path.dirname(memstage.__file__)))
assert here == os.path.realpath(sys.argv[1]), ("memstage imported from the wrong place", here, sys.argv[1])
assert not memstage.enabled(), "the tracer should not be loaded here"
assert memstage._begin is None and memstage._end is None

with memstage.stage("load") as marker:
    assert isinstance(marker, memstage.stage) and marker.name == "load"
    with memstage.stage("inner"):
        inside = [1, 2, 3]
assert inside == [1, 2, 3]

@memstage.stage("train")
def train(a, b=2, *rest, **named):
    """docstring kept"""
    return (a, b, rest, named)

assert train(1) == (1, 2, (), {})
assert train(1, 3, 4, k=5) == (1, 3, (4,), {"k": 5})
assert train.__name__ == "train" and train.__doc__ == "docstring kept"

class Boom(Exception):
    pass

try:
    with memstage.stage("fails"):
        raise Boom()
except Boom:
    pass
else:
    raise AssertionError("stage() swallowed an exception")

@memstage.stage("decorated_fails")
def fails():
    raise Boom()

try:
    fails()
except Boom:
    pass
else:
    raise AssertionError("a decorated function's exception was swallowed")

memstage.stage_begin("manual")
memstage.stage_end()
memstage.stage_begin(42)  # any name, converted with str()
memstage.stage_end()
print("memstage", memstage.__name__, "no-op:", not memstage.enabled())
'''


def run(command, **kwargs):
    shown = ["CHECK" if "\n" in word else word for word in command]
    print("+", " ".join(shown), flush=True)
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)
    print(result.stdout, end="", flush=True)
    return result


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    source = os.path.abspath(sys.argv[1])
    for name in ("pyproject.toml", "memstage/__init__.py", "memstage/pytest_plugin.py"):
        if not os.path.isfile(os.path.join(source, name)):
            print("missing %s in %s" % (name, source))
            return 1
    try:
        import ensurepip  # noqa: F401  (Debian ships it in python3-venv)
        import venv  # noqa: F401
    except ImportError as error:
        print("SKIP: this python has no venv/ensurepip (%s); install python3-venv" % error)
        return SKIP

    with tempfile.TemporaryDirectory(prefix="memstage-pip-") as tmp:
        env_dir = os.path.join(tmp, "venv")
        made = run([sys.executable, "-m", "venv", "--system-site-packages", env_dir])
        if made.returncode != 0:
            if "ensurepip" in made.stdout:
                print("SKIP: python -m venv cannot bootstrap pip (ensurepip missing)")
                return SKIP
            print("FAIL: python -m venv exited %d" % made.returncode)
            return 1
        python = os.path.join(env_dir, "bin", "python")

        package = os.path.join(tmp, "package")
        shutil.copytree(source, package, ignore=shutil.ignore_patterns(
            "build", "dist", "*.egg-info", "__pycache__", "*.pyc"))
        env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONNOUSERSITE="1")
        env.pop("PYTHONPATH", None)  # the installed copy must be what gets imported
        env.pop("LD_PRELOAD", None)  # and the tracer must not be loaded
        env.pop("PIP_REQUIRE_VIRTUALENV", None)
        installed = run([python, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                         "--no-cache-dir", package], env=env, cwd=tmp)
        if installed.returncode != 0:
            print("FAIL: pip install exited %d" % installed.returncode)
            return 1

        shown = run([python, "-m", "pip", "show", "memstage"], env=env, cwd=tmp)
        if shown.returncode != 0 or "Version: 0.1.0" not in shown.stdout:
            print("FAIL: pip show memstage does not report version 0.1.0")
            return 1

        site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              stdout=subprocess.PIPE, text=True, env=env, cwd=tmp, check=True).stdout.strip()
        checked = run([python, "-c", CHECK, site], env=env, cwd=tmp)
        if checked.returncode != 0:
            print("FAIL: the installed memstage module did not behave as a no-op stage API")
            return 1
        if "no-op: True" not in checked.stdout:
            print("FAIL: the check did not finish")
            return 1
    print("python install: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
