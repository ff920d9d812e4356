"""Start-up imports no engine: `oloproof --help`, `--version` and `import oloproof` stay quick.

Timings are measured by benchmarks/startup.py; these tests check the reason they are quick —
what is imported — and that the public names still import as documented.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("numpy", "scipy", "pydantic", "rich", "yaml", "jsonschema", "sqlite3", "asyncio",
         "oloproof.api", "oloproof.view", "starlette", "uvicorn")

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
            "assert callable(run) and run.__module__ == 'oloproof.api.running'\n"
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


# What `oloproof run` needs only after its cases: none of it is imported when the first call
# starts (the run imports it in a thread beside its cases, `api/run_job.py`'s `_AFTER_THE_RUN`).
AFTER_THE_RUN = ("numpy", "scipy", "rich", "oloproof.document", "oloproof.decisions",
                 "oloproof.report.terminal", "oloproof.report.limits", "oloproof.comparison",
                 "oloproof.stats")

_FIRST_CALL_APP = """
import asyncio, json, sys
from oloproof import system

seen = []


@system(name="probe", version="v1")
async def run(case_input):
    if not seen:
        seen.append(sorted(m for m in {after!r} if m in sys.modules))
        with open("first_call.json", "w") as out:
            json.dump(seen[0], out)
    await asyncio.sleep(0.01)
    return {{"answer": case_input["q"]}}
"""


@pytest.mark.slow
def test_a_run_starts_its_first_call_before_the_report_and_the_statistics(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "app.py").write_text(_FIRST_CALL_APP.format(after=AFTER_THE_RUN))
    (tmp_path / "oloproof.yaml").write_text(
        "version: 1\ndataset: data/cases.jsonl\n"
        "system: {name: probe, version: v1, callable: 'app:run', concurrency: 4}\n"
        "evaluators:\n  - {type: exact_match, field: answer}\n")
    (tmp_path / "release.yaml").write_text(
        "version: 1\nrules:\n  - {id: exact, metric: exact_match, min: 0.5}\n")
    (tmp_path / "data" / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": {"q": str(i)}, "expected": {"answer": str(i)}})
        + "\n" for i in range(8)))
    env = {k: v for k, v in os.environ.items() if k != "OLOPROOF_STORE"}
    done = subprocess.run([sys.executable, "-m", "oloproof.cli.main", "run"], cwd=tmp_path,
                          capture_output=True, text=True, env={**env, "CI": "1"}, timeout=120)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "Gate: ALLOW" in done.stdout  # the report was printed all the same
    assert json.loads((tmp_path / "first_call.json").read_text()) == []
