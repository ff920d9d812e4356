"""The benchmarks' entry point (benchmarks/README.md): every scenario follows the contract and is
listed, `benchmarks/RESULTS.md` is what the saved JSON makes, and a run saves its figures and
fails on a missed target.

Nothing here times anything: the scenarios that run are toys written into a temporary folder.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import __main__ as entry  # noqa: E402
from benchmarks import _record  # noqa: E402

TOY = '''"""A toy: {measures}

More prose, not shown in the list.
"""

TARGETS = {targets}
QUICK = ["--fast"]


def run(argv: list[str]) -> dict:
    return {{"figures": {{"seconds": {seconds}, "nested": {{"ratio": 0.5}}, "ok": True}},
            "params": {{"argv": argv}}, "details": {{"rows": [1, 2, 3]}}}}
'''


def _benchmarks(python: str = sys.executable, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, "-m", "benchmarks", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)


def test_every_scenario_follows_the_contract() -> None:
    found = _record.scenarios()
    assert len(found) >= 28
    assert {s.kind for s in found} == {"speed", "validity"}
    assert {"startup", "dataset_scan", "compare_scale", "plan"} <= {
        s.name for s in found if s.quick is not None}
    for one in found:
        module = _record.load(one)
        assert (module.__doc__ or "").strip(), one.path
        assert one.targets == module.TARGETS, one.path
        parameters = list(inspect.signature(module.run).parameters)
        assert len(parameters) == 1, f"{one.path}: run(argv) takes one argument"
        for op, limit in one.targets.values():
            assert op in _record.OPERATORS and isinstance(limit, int | float | bool), one.path
        assert not (one.path.parent / f"{one.name}.json").exists()
    # Nothing else sits in the scenarios' folders: a helper belongs at the top of benchmarks/.
    for kind in _record.KINDS:
        names = {p.stem for p in (_record.HERE / kind).glob("*.py")} - {"__init__"}
        assert names == {s.name for s in found if s.kind == kind}


def test_the_listing_names_every_scenario_with_what_it_measures_and_its_targets() -> None:
    done = _benchmarks()
    assert done.returncode == 0, done.stderr
    for one in _record.scenarios():
        assert f"{one.name}  ({one.kind})" in done.stdout
        assert " ".join(one.measures.split()[:6]) in " ".join(done.stdout.split())
    assert "help_s ≤ 0.25" in done.stdout and "left out of make bench:" in done.stdout


def test_results_md_is_what_the_saved_json_makes() -> None:
    """`python -m benchmarks --check`, as CI runs it: RESULTS.md was generated, not edited, from
    the newest saved JSON of every scenario, and stays within MAX_LINES (320) lines."""
    done = _benchmarks(sys.executable, "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    text = _record.RESULTS_MD.read_text(encoding="utf-8")
    assert text.count("\n") <= _record.MAX_LINES
    for one in _record.scenarios():
        assert f"### {one.name} — " in text


@pytest.fixture
def toys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A benchmarks folder of its own with two toy scenarios, one meeting its targets and one
    missing them; `_record` reads and writes only there."""
    here = tmp_path / "benchmarks"
    for kind in _record.KINDS:
        (here / kind).mkdir(parents=True)
    (here / "speed" / "toy_fast.py").write_text(TOY.format(
        measures="how fast a toy is.", seconds=0.2,
        targets='{"seconds": ("<=", 0.25), "nested.ratio": ("<", 1), "ok": ("==", True)}'))
    (here / "validity" / "toy_slow.py").write_text(TOY.format(
        measures="a toy that misses its target.", seconds=0.3,
        targets='{"seconds": ("<=", 0.25), "absent": (">=", 1)}'))
    monkeypatch.setattr(_record, "HERE", here)
    monkeypatch.setattr(_record, "RESULTS_DIR", here / "results")
    monkeypatch.setattr(_record, "RESULTS_MD", here / "RESULTS.md")
    return here


def test_a_run_saves_its_figures_with_the_machine_and_each_target_met(toys: Path,
                                                                      capsys) -> None:
    assert entry.main(["toy_fast", "--fast"]) == 0
    saved = list((toys / "results" / "toy_fast").glob("*.json"))
    assert len(saved) == 1
    record = json.loads(saved[0].read_text())
    assert saved[0].name.endswith(f"-{record['revision']}.json")
    assert saved[0].name.startswith(record["date"][:10])
    assert record["figures"]["seconds"] == 0.2 and record["params"] == {"argv": ["--fast"]}
    assert record["details"] == {"rows": [1, 2, 3]} and record["kind"] == "speed"
    assert record["measures"] == "A toy: how fast a toy is."
    assert record["targets"]["nested.ratio"] == {"op": "<", "limit": 1, "value": 0.5,
                                                 "met": True}
    assert record["met"] is True
    for fact in ("revision", "dirty", "date", "cpu_count", "python", "load", "load_after"):
        assert fact in record
    assert len(record["load"]) == 3
    assert "target ≤ 0.25: met" in capsys.readouterr().out


def test_a_missed_target_exits_1_and_is_marked_in_results_md(toys: Path, capsys) -> None:
    assert entry.main(["toy_slow"]) == 1
    out = capsys.readouterr().out
    assert "seconds: 0.3   target ≤ 0.25: MISSED" in out
    assert "absent: no such figure: target MISSED" in out
    assert entry.main(["--no-save", "toy_fast"]) == 0
    assert not (toys / "results" / "toy_fast").exists()
    # --quick runs each scenario with QUICK at its QUICK arguments, saving nothing
    assert entry.main(["--quick", "toy_fast"]) == 0
    assert entry.main(["--quick"]) == 1
    assert len(list((toys / "results" / "toy_slow").glob("*.json"))) == 1

    assert entry.main(["--summary"]) == 0
    text = (toys / "RESULTS.md").read_text()
    assert "| seconds | 0.3 | ≤ 0.25 ✗ |" in text
    assert "| absent | — | ≥ 1 ✗ |" in text
    assert "### toy_fast — A toy: how fast a toy is.\nNo result saved yet" in text
    assert "](results/toy_slow/" in text and " CPUs · Python " in text


def test_the_check_fails_when_results_md_is_not_what_the_json_makes(toys: Path,
                                                                    capsys) -> None:
    assert entry.main(["toy_fast"]) == 0
    assert entry.main(["--check"]) == 1  # no RESULTS.md yet
    assert entry.main(["--summary"]) == 0
    assert entry.main(["--check"]) == 0
    results = toys / "RESULTS.md"
    results.write_text(results.read_text().replace("0.2", "0.1"))  # edited by hand
    capsys.readouterr()
    assert entry.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "-| seconds | 0.1 |" in out and "+| seconds | 0.2 |" in out
    assert "python -m benchmarks --summary" in out
    assert entry.main(["--summary"]) == 0
    toy = toys / "speed" / "toy_fast.py"
    toy.write_text(toy.read_text().replace('"seconds": 0.2', '"seconds": 0.15'))
    assert entry.main(["toy_fast"]) == 0  # a newer result makes the summary stale again
    assert len(list((toys / "results" / "toy_fast").glob("*.json"))) == 2
    assert entry.main(["--check"]) == 1
    assert entry.main(["--summary"]) == 0
    assert "| seconds | 0.15 | ≤ 0.25 ✓ |" in results.read_text()


@pytest.mark.parametrize(("source", "says"), [
    ("TARGETS = {}\ndef run(argv): return {}\n", "no module docstring"),
    ('"""Toy."""\ndef run(argv): return {}\n', "no TARGETS"),
    ('"""Toy."""\nTARGETS = {"x": ("=<", 1)}\ndef run(argv): return {}\n', "operator among"),
    ('"""Toy."""\nTARGETS = {}\ndef run(): return {}\n', "def run(argv: list[str])"),
    ('"""Toy."""\nTARGETS = dict(x=1)\ndef run(argv): return {}\n', "must be a literal"),
])
def test_a_scenario_off_the_contract_is_refused_naming_its_file(toys: Path, source: str,
                                                                says: str, capsys) -> None:
    (toys / "speed" / "broken.py").write_text(source)
    assert entry.main([]) == 2
    err = capsys.readouterr().err
    assert "broken.py" in err and says in err


def test_what_run_returns_is_checked(toys: Path, capsys) -> None:
    (toys / "speed" / "toy_fast.py").write_text(
        '"""Toy."""\nTARGETS = {}\ndef run(argv):\n    return {"figures": {"x": float("nan")},'
        ' "params": {}}\n')
    assert entry.main(["toy_fast"]) == 2
    assert "JSON cannot hold" in capsys.readouterr().err
    assert not (toys / "results").exists()
    assert entry.main(["no_such_scenario"]) == 2
    assert "no scenario named 'no_such_scenario'" in capsys.readouterr().err


def test_a_table_shows_every_target_and_the_first_figures_the_rest_stay_in_the_json(
        toys: Path) -> None:
    (toys / "speed" / "toy_fast.py").write_text(
        '"""A toy of many figures."""\nTARGETS = {"f9": ("<", 10)}\n'
        "def run(argv):\n"
        '    return {"figures": {f"f{i}": i for i in range(10)}, "params": {}}\n')
    assert entry.main(["toy_fast"]) == 0
    assert entry.main(["--summary"]) == 0
    text = (toys / "RESULTS.md").read_text()
    shown = [line.split(" | ")[0][2:] for line in text.splitlines()
             if line.startswith("| f") and not line.startswith("| figure")]
    assert shown == ["f9", "f0", "f1", "f2"]  # the target's, then the first others: four rows
    assert "· 6 more figures in the JSON | value | target |" in text
