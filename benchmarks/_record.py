"""The scenarios of `benchmarks/`, their saved results, and `RESULTS.md` made from them.

A scenario is a module `benchmarks/speed/NAME.py` (how long something takes) or
`benchmarks/validity/NAME.py` (coverage and power: what the statistics promise) holding

- a docstring whose first line says what it measures;
- `TARGETS = {"figure": ("<=", 0.25), ...}`: the figures it promises, each with an operator
  (`<=`, `>=`, `<`, `>`, `==`) and a limit (`{}` when it promises nothing);
- `def run(argv: list[str]) -> dict` returning `{"figures": {...}, "params": {...}}` (JSON
  values; nested figures are named by their path, `a.b`), and optionally `"details": {...}`
  (tables too long for `RESULTS.md`, kept in the saved JSON);

and optionally `QUICK = [...]` (the arguments `make bench-check` runs it with) and
`LEFT_OUT = "why"` (why `make bench` does not run it). Scenarios are read here without being
imported (`ast`), so listing them runs none of their code.

`run_scenario` runs one, marks each target met or not and saves the figures with the machine's
facts (revision, date, CPUs, Python, load) as `results/NAME/<date>-<rev>.json`; `summary` writes
`RESULTS.md` from the newest JSON of each scenario, and `check` says whether `RESULTS.md` is what
the JSON makes.
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
import json
import math
import operator
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS_DIR = HERE / "results"
RESULTS_MD = HERE / "RESULTS.md"
KINDS = ("speed", "validity")
MAX_LINES = 320
# Rows of figures a scenario's table shows: every target's, then its first other figures up to
# this many rows (a scenario lists its figures most telling first); the rest are in its JSON.
SHOWN_ROWS = 4

OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt, "==": operator.eq}
SHOWN_OP = {"<=": "≤", ">=": "≥", "<": "<", ">": ">", "==": "="}


class ContractError(Exception):
    """A scenario module that does not follow the contract (the message names the file)."""


@dataclass(frozen=True)
class Scenario:
    name: str
    kind: str
    path: Path
    measures: str
    targets: dict[str, tuple[str, Any]]
    quick: list[str] | None
    left_out: str | None

    @property
    def module(self) -> str:
        return f"benchmarks.{self.kind}.{self.name}"


def _literal(tree: ast.Module, name: str, path: Path) -> tuple[bool, Any]:
    """(found, value) of a module-level `name = <literal>`."""
    for node in tree.body:
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, ast.AnnAssign) and node.value else [])
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            assert isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
            try:
                return True, ast.literal_eval(node.value)
            except ValueError:
                raise ContractError(f"{_shown(path)}:{node.lineno}: {name} must be a literal "
                                    "(numbers, strings, lists, dicts, tuples)") from None
    return False, None


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def read_scenario(path: Path) -> Scenario:
    """The scenario in `path`, read without importing it; a ContractError naming the file and
    what to add when it does not follow the contract."""
    where = _shown(path)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    doc = ast.get_docstring(tree)
    if not doc or not doc.strip():
        raise ContractError(f"{where}: no module docstring: its first line says what the "
                            "scenario measures")
    found, targets = _literal(tree, "TARGETS", path)
    if not found:
        raise ContractError(f"{where}: no TARGETS: write TARGETS = {{}} when it promises "
                            'nothing, or TARGETS = {"figure": ("<=", 0.25)}')
    if not isinstance(targets, dict):
        raise ContractError(f"{where}: TARGETS must be a dict of figure -> (operator, limit)")
    for figure, target in targets.items():
        if (not isinstance(figure, str) or not isinstance(target, tuple) or len(target) != 2
                or target[0] not in OPERATORS):
            raise ContractError(
                f"{where}: TARGETS[{figure!r}] = {target!r}: write (operator, limit) with an "
                f"operator among {', '.join(OPERATORS)}")
    runs = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "run"]
    if not runs or len(runs[0].args.args) != 1:
        raise ContractError(f"{where}: no `def run(argv: list[str]) -> dict` (one argument: "
                            "the arguments after the scenario's name)")
    found, quick = _literal(tree, "QUICK", path)
    if found and not (isinstance(quick, list) and all(isinstance(a, str) for a in quick)):
        raise ContractError(f"{where}: QUICK must be a list of strings (arguments)")
    found_left, left_out = _literal(tree, "LEFT_OUT", path)
    if found_left and not (isinstance(left_out, str) and left_out.strip()):
        raise ContractError(f"{where}: LEFT_OUT must say why `make bench` leaves it out")
    return Scenario(name=path.stem, kind=path.parent.name, path=path,
                    measures=" ".join(doc.strip().split("\n\n")[0].split()),
                    targets=dict(targets), quick=quick if found else None,
                    left_out=left_out if found_left else None)


def scenarios() -> list[Scenario]:
    """Every scenario, speed first, each kind by name; a ContractError for a broken one or for
    a name used twice."""
    found: list[Scenario] = []
    for kind in KINDS:
        for path in sorted((HERE / kind).glob("*.py")):
            if not path.name.startswith("_"):
                found.append(read_scenario(path))
    names = [s.name for s in found]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ContractError(f"scenario names used twice: {', '.join(twice)}: `python -m "
                            "benchmarks NAME` must name one")
    return found


def load(chosen: Scenario) -> Any:
    """The scenario's module, imported afresh from its file (as `benchmarks.KIND.NAME`)."""
    for path in (str(ROOT), str(HERE)):  # `benchmarks._x` and, for older scenarios, `_x`
        if path not in sys.path:
            sys.path.insert(0, path)
    spec = importlib.util.spec_from_file_location(chosen.module, chosen.path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[chosen.module] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[chosen.module]
        raise
    return module


def scenario(name: str) -> Scenario:
    for candidate in scenarios():
        if candidate.name == name:
            return candidate
    known = ", ".join(s.name for s in scenarios())
    raise ContractError(f"no scenario named {name!r}; the scenarios: {known}")


# ---- running one ------------------------------------------------------------------------------

def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                              check=False)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _dirty() -> bool | None:
    """Whether the checkout differs from its commit, saved results and RESULTS.md aside."""
    status = _git("status", "--porcelain", "--untracked-files=all")
    if status is None:
        return None
    ignored = ("benchmarks/results/", "benchmarks/RESULTS.md")
    return any(not line[3:].strip('"').startswith(ignored) for line in status.splitlines())


def machine() -> dict[str, Any]:
    """The facts saved beside every figure: revision, date, CPUs, Python, load."""
    now = round(time.time(), 3)
    return {"revision": _git("rev-parse", "--short", "HEAD") or "unknown",
            "commit": _git("rev-parse", "HEAD"), "dirty": _dirty(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)), "timestamp": now,
            "cpu_count": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "load": [round(x, 2) for x in os.getloadavg()]}


def flat(figures: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Figures by name, nested dicts named by their path (`a.b`)."""
    out: dict[str, Any] = {}
    for key, value in figures.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flat(value, name + "."))
        else:
            out[name] = value
    return out


def judge_targets(targets: dict[str, tuple[str, Any]], figures: dict[str, Any]
                  ) -> dict[str, dict[str, Any]]:
    """Each target with the figure's value and whether it is met (a missing, None or NaN
    figure meets nothing)."""
    values = flat(figures)
    judged = {}
    for name, (op, limit) in targets.items():
        value = values.get(name)
        met = (value is not None and not (isinstance(value, float) and math.isnan(value))
               and not isinstance(value, dict | list) and bool(OPERATORS[op](value, limit)))
        judged[name] = {"op": op, "limit": limit, "value": value, "met": met}
    return judged


def _checked(returned: Any, where: str) -> dict[str, Any]:
    if not isinstance(returned, dict) or not isinstance(returned.get("figures"), dict) \
            or not isinstance(returned.get("params"), dict):
        raise ContractError(f"{where}: run() must return {{'figures': {{...}}, 'params': "
                            f"{{...}}}}, not {type(returned).__name__}")
    extra = set(returned) - {"figures", "params", "details"}
    if extra:
        raise ContractError(f"{where}: run() returned keys {sorted(extra)}: only figures, "
                            "params and details are kept")
    try:
        json.dumps(returned, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ContractError(f"{where}: run() returned what JSON cannot hold: {exc}") from None
    return returned


def run_scenario(chosen: Scenario, argv: list[str], save: bool = True
                 ) -> tuple[dict[str, Any], Path | None]:
    """Run one scenario with `argv`; its record (figures, params, targets met, the machine's
    facts) and where it was saved (None when not saved)."""
    module = load(chosen)
    before = machine()
    started = time.perf_counter()
    returned = _checked(module.run(list(argv)), _shown(chosen.path))
    seconds = time.perf_counter() - started
    targets = judge_targets(chosen.targets, returned["figures"])
    record: dict[str, Any] = {
        "scenario": chosen.name, "kind": chosen.kind, "measures": chosen.measures,
        "argv": list(argv), "params": returned["params"], "figures": returned["figures"],
        "targets": targets, "met": all(t["met"] for t in targets.values()),
        **before, "load_after": [round(x, 2) for x in os.getloadavg()],
        "seconds": round(seconds, 1),
        **({"details": returned["details"]} if "details" in returned else {}),
    }
    if not save:
        return record, None
    stamp = before["date"].replace("-", "").replace(":", "")  # 20261206T123639Z
    stamp = f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:]}"  # 2026-12-06T123639Z
    out = RESULTS_DIR / chosen.name / f"{stamp}-{before['revision']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    again = 1
    while out.exists():  # (two runs in one second)
        again += 1
        out = out.with_name(f"{stamp}-{before['revision']}-{again}.json")
    out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return record, out


# ---- RESULTS.md -------------------------------------------------------------------------------

def newest(name: str) -> tuple[Path, dict[str, Any]] | None:
    """The newest saved record of scenario `name` (by its date), or None."""
    best: tuple[tuple[str, float], Path, dict[str, Any]] | None = None
    for path in sorted((RESULTS_DIR / name).glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        key = (record.get("date") or "", record.get("timestamp") or 0.0)
        if best is None or key > best[0]:
            best = (key, path, record)
    return None if best is None else (best[1], best[2])


def shown(value: Any) -> str:
    """A figure as a table cell."""
    if value is None:
        text = "—"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, int):
        text = f"{value:,}" if abs(value) >= 10_000 else str(value)
    elif isinstance(value, float):
        text = f"{value:,.0f}" if abs(value) >= 100_000 else f"{value:.6g}"
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False)
    return text.replace("|", "\\|").replace("\n", " ")


def _target_cell(target: dict[str, Any]) -> str:
    mark = "✓" if target["met"] else "✗"
    return f"{SHOWN_OP[target['op']]} {shown(target['limit'])} {mark}"


def _facts(record: dict[str, Any], path: Path) -> str:
    link = path.relative_to(HERE).as_posix()
    dirty = " (uncommitted changes)" if record.get("dirty") else ""
    load = " ".join(f"{x:.2f}" for x in record.get("load", []))
    after = " ".join(f"{x:.2f}" for x in record.get("load_after", []))
    params = ", ".join(f"{k} {shown(v)}" for k, v in record.get("params", {}).items()
                       if v not in (None, [], {}, ""))
    return (f"[{record['date'][:16].replace('T', ' ')} UTC, {record['revision']}{dirty}]({link})"
            f" · {record.get('cpu_count')} CPUs · Python {record.get('python')} · load {load}"
            f" → {after} · {record.get('seconds')} s" + (f" · {params}" if params else ""))


HEADER = """# Benchmark results

Generated by `python -m benchmarks --summary` from the newest saved JSON of each scenario
(`benchmarks/results/NAME/`); never edited by hand (`python -m benchmarks --check`, run by the
tests, fails when this file is not what the JSON makes). How to run, save and add scenarios:
[README.md](README.md). Dated notes of earlier rounds and investigations:
[history/](history/README.md). Each table's first row is the run: its JSON (date and
revision), the machine's CPUs and Python, the load average at the run's start → end (the
machine is shared), how long it took and its parameters; then every target's figure, ✓ met or
✗ not in that run, and the scenario's first other figures.
"""


def summary(chosen: list[Scenario] | None = None) -> str:
    """The text of RESULTS.md: one table per scenario with its newest figures."""
    lines = [HEADER.rstrip("\n")]
    for kind in KINDS:
        lines += ["", f"## {kind.capitalize()}"]
        for one in chosen if chosen is not None else scenarios():
            if one.kind != kind:
                continue
            found = newest(one.name)
            if found is None:
                lines += [f"### {one.name} — {one.measures}",
                          f"No result saved yet: `python -m benchmarks {one.name}`."]
                continue
            path, record = found
            targets = record.get("targets", {})
            values = flat(record.get("figures", {}))
            others = [n for n in values if n not in targets]
            room = max(0, SHOWN_ROWS - len(targets))
            more = len(others) - room
            facts = _facts(record, path) + (
                f" · {more} more figure{'s' * (more > 1)} in the JSON" if more > 0 else "")
            lines += [f"### {one.name} — {record.get('measures', one.measures)}",
                      f"| {facts} | value | target |", "|---|---|---|"]
            for name in [*targets, *others[:room]]:
                cell = _target_cell(targets[name]) if name in targets else ""
                lines.append(f"| {shown(name)} | {shown(values.get(name))} | {cell} |")
    return "\n".join(lines) + "\n"


def check() -> list[str]:
    """What differs between RESULTS.md and what the saved JSON makes (a unified diff, empty
    when they agree), and a line when it is over MAX_LINES."""
    made = summary()
    problems = []
    current = RESULTS_MD.read_text(encoding="utf-8") if RESULTS_MD.exists() else ""
    if current != made:
        problems += list(difflib.unified_diff(current.splitlines(), made.splitlines(),
                                              "benchmarks/RESULTS.md",
                                              "what the saved JSON makes", lineterm=""))
    if made.count("\n") > MAX_LINES:
        problems.append(f"RESULTS.md would be {made.count(chr(10))} lines, over {MAX_LINES}: "
                        "keep each scenario's figures to the few that matter (the rest go in "
                        "its `details`)")
    return problems
