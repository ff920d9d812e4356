"""Start-up imports no engine: `oloproof --help`, `--version` and `import oloproof` stay quick.

Timings are measured by benchmarks/startup.py; these tests check the reason they are quick —
what is imported — and that the public names still import as documented.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("numpy", "scipy", "pydantic", "rich", "yaml", "jsonschema", "sqlite3", "asyncio",
         "oloproof.api")

_IMPORTED_AFTER = """
import json, sys
sys.argv = ["oloproof", *sys.argv[1:]]
if sys.argv[1:] == ["import"]:
    import oloproof
else:
    from oloproof.cli.main import main
    try:
        main()
    except SystemExit:
        pass
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)), file=sys.stderr)
"""


@pytest.mark.slow
@pytest.mark.parametrize("what", ["--help", "--version", "import", "init --help"])
def test_start_up_imports_no_engine(what):
    done = subprocess.run([sys.executable, "-c", _IMPORTED_AFTER.format(heavy=HEAVY),
                           *what.split()], capture_output=True, text=True, check=True,
                          timeout=60)

    assert json.loads(done.stderr.strip().splitlines()[-1]) == []


@pytest.mark.slow
def test_every_public_name_imports_from_the_package():
    code = ("import oloproof\n"
            "from oloproof import *\n"
            "names = oloproof.__all__\n"
            "missing = [n for n in names if n not in globals()]\n"
            "assert not missing, missing\n"
            "assert set(names) <= set(dir(oloproof))\n"
            "from oloproof import run, system, current_case, AgentTrajectory, evaluator\n"
            "assert callable(run) and run.__module__ == 'oloproof.api'\n"
            "try:\n"
            "    oloproof.no_such_name\n"
            "except AttributeError as e:\n"
            "    assert 'no_such_name' in str(e)\n"
            "else:\n"
            "    raise SystemExit('no AttributeError')\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_version_is_the_packages():
    from importlib.metadata import version

    import oloproof

    assert version("oloproof") == oloproof.__version__
