"""Every combination of `system.variants` in one run (docs/board.md#running-every-variant):
`oloproof run` / `oloproof.run()` on a suite with variants and no `--variant` makes a run per
combination, in the file's order, each stored with its variant, over one load of the suite and
one start of its workers — the system module imported once per worker, counted here on the
local and the processes executors. What `run()` returns (`VariantRuns`), what the command
prints and exits with, a run that breaks part-way keeping the runs before it, and a variant's
run rescored."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from variant_suite import MATRIX
from variant_suite import SUITE as VARIANTS

import oloproof
from oloproof.errors import RunStopped, UsageError

SUITE = VARIANTS.format(variants=MATRIX)
ORDER = ["model=small,prompt=v1", "model=small,prompt=v2", "model=large,prompt=v1",
         "model=large,prompt=v2", "model=open,prompt=v1", "model=open,prompt=v2"]


def _project(root: Path) -> Path:
    # The system writes its process id to imports.log each time its module is imported, and
    # its variant to calls.log at each call; it answers with its variant's model.
    (root / "app.py").write_text(
        "import os\n"
        "from oloproof import current_case\n"
        "HERE = os.path.dirname(os.path.abspath(__file__))\n"
        "with open(os.path.join(HERE, 'imports.log'), 'a') as f:\n"
        "    f.write(f'{os.getpid()}\\n')\n"
        "def run(input):\n"
        "    variant = current_case().variant\n"
        "    with open(os.path.join(HERE, 'calls.log'), 'a') as f:\n"
        "        f.write(','.join(f'{k}={v}' for k, v in variant.items()) + '\\n')\n"
        "    if variant['model'] == 'open':  # (right on half the cases)\n"
        "        return {'answer': 'large' if input['n'] % 2 else 'open'}\n"
        "    return {'answer': variant['model']}\n", encoding="utf-8")
    (root / "cases.jsonl").write_text("".join(
        f'{{"id": "c{i}", "input": {{"n": {i}}}, "expected": {{"answer": "large"}}}}\n'
        for i in range(1, 11)), encoding="utf-8")
    (root / "release.yaml").write_text(
        "version: 1\nrules:\n  - id: answers\n    metric: answer_correct\n    min: 0.5\n",
        encoding="utf-8")
    config = root / "oloproof.yaml"
    config.write_text(SUITE, encoding="utf-8")
    return config


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split() if path.exists() else []


def _stored(store: Path) -> list[tuple[str, str | None, str]]:
    with sqlite3.connect(store) as conn:
        return [(str(r), v, str(s)) for r, v, s in conn.execute(
            "SELECT run_id, variant, status FROM runs ORDER BY started_at, run_id")]


def test_every_combination_runs_in_one_run_each_stored_with_its_variant(
        tmp_path: Path) -> None:
    config = _project(tmp_path)
    store = tmp_path / "store.sqlite"
    loaded: list[tuple[Any, str]] = []
    runs = oloproof.run(config, store=store,
                        on_start=lambda suite, run_id: loaded.append((suite, run_id)))
    assert isinstance(runs, oloproof.VariantRuns)
    assert runs.variants == ORDER
    # One load of the suite: every run started with the same loaded suite.
    assert [r for _, r in loaded] == runs.run_ids
    assert all(suite is loaded[0][0] for suite, _ in loaded)
    assert _stored(store) == [(r.run_id, v, "complete") for r, v in zip(runs, ORDER, strict=True)]
    # Each run is its variant's: the large model answers "large", the open one half the time.
    assert [r.metric("answer_correct").passed for r in runs] == [0, 0, 10, 10, 5, 5]
    assert runs.of("prompt=v2,model=large").document.system.variant == "model=large,prompt=v2"
    with pytest.raises(KeyError, match="no run of the variant 'model=huge,prompt=v1'"):
        runs.of("model=huge,prompt=v1")
    # The system module was imported once (in this process), and each call read its own run's
    # variant, in the file's order.
    assert _lines(tmp_path / "imports.log") == [str(os.getpid())]
    calls = _lines(tmp_path / "calls.log")
    assert calls == [v for v in ORDER for _ in range(10)]
    # At `min: 0.5` the small model FAILs (exit 1), the large ALLOWs (0), and the open one's
    # 5 of 10 decide nothing (3); the matrix's is the worst, a FAIL, not the highest code.
    assert [int(r.gate.exit_code) for r in runs] == [1, 1, 0, 0, 3, 3]
    assert runs.exit_code == 1
    # Each is named by `variant:` and is its variant's newest run.
    assert oloproof.load_run("variant:prompt=v1,model=open", config, store).run_id \
        == runs[4].run_id
    # Run again, every combination comes from the cache: no call.
    again = oloproof.run(config, store=store)
    assert isinstance(again, oloproof.VariantRuns)
    assert [(r.document.cache.execution.hit, r.document.cache.execution.miss) for r in again] \
        == [(10, 0)] * 6
    assert len(_lines(tmp_path / "calls.log")) == 60


def test_one_variant_still_returns_one_run_result(tmp_path: Path) -> None:
    config = _project(tmp_path)
    one = oloproof.run(config, store=tmp_path / "store.sqlite", variant="model=large,prompt=v1")
    assert isinstance(one, oloproof.RunResult)
    assert _stored(tmp_path / "store.sqlite") == [(one.run_id, "model=large,prompt=v1",
                                                   "complete")]


def test_run_async_runs_every_combination_too(tmp_path: Path) -> None:
    config = _project(tmp_path)
    runs = asyncio.run(oloproof.run_async(config, store=tmp_path / "store.sqlite"))
    assert isinstance(runs, oloproof.VariantRuns)
    assert runs.variants == ORDER


@pytest.mark.slow
def test_worker_processes_start_once_for_every_combination(tmp_path: Path) -> None:
    config = _project(tmp_path)
    runs = oloproof.run(config, store=tmp_path / "store.sqlite", executor="processes",
                        workers=2)
    assert isinstance(runs, oloproof.VariantRuns)
    assert [r.metric("answer_correct").passed for r in runs] == [0, 0, 10, 10, 5, 5]
    imports = _lines(tmp_path / "imports.log")
    # Once here (the suite is checked before the workers start), once in each of the two
    # worker processes — not once per combination.
    workers = [pid for pid in imports if pid != str(os.getpid())]
    assert imports.count(str(os.getpid())) == 1
    assert len(workers) == 2 and len(set(workers)) == 2, imports
    assert sorted(_lines(tmp_path / "calls.log")) == sorted(v for v in ORDER for _ in range(10))


def _stopping_at(third: BaseException) -> tuple[list[str], Any]:
    started: list[str] = []

    def on_start(suite: Any, run_id: str) -> None:
        started.append(run_id)
        if len(started) == 3:
            raise third
    return started, on_start


def test_a_run_that_fails_part_way_keeps_the_runs_before_it(tmp_path: Path) -> None:
    config = _project(tmp_path)
    store = tmp_path / "store.sqlite"
    started, on_start = _stopping_at(RuntimeError("the host broke"))
    with pytest.raises(RuntimeError, match="the host broke") as raised:
        oloproof.run(config, store=store, on_start=on_start)
    stored = _stored(store)
    # The first two are complete, the third failed, no other was begun.
    assert [(v, s) for _, v, s in stored] == [
        (ORDER[0], "complete"), (ORDER[1], "complete"), (ORDER[2], "failed")]
    assert [r for r, _, _ in stored] == started
    notes = " ".join(raised.value.__notes__)
    assert f"{started[0]} (model=small,prompt=v1, complete)" in notes
    assert f"{started[1]} (model=small,prompt=v2, complete)" in notes
    # The complete ones are runs as any other.
    assert oloproof.load_run("variant:model=small,prompt=v2", config, store).run_id \
        == started[1]


def test_a_stopped_matrix_says_which_runs_are_stored(tmp_path: Path) -> None:
    config = _project(tmp_path)
    store = tmp_path / "store.sqlite"
    started, on_start = _stopping_at(KeyboardInterrupt())
    with pytest.raises(RunStopped) as raised:
        oloproof.run(config, store=store, on_start=on_start)
    assert f"run {started[2]} stopped" in str(raised.value)
    assert f"the runs made before it are stored: {started[0]} (model=small,prompt=v1, " \
        "complete)" in str(raised.value)
    assert [s for _, _, s in _stored(store)] == ["complete", "complete", "stopped"]


def test_a_variant_s_run_is_rescored_as_that_variant(tmp_path: Path) -> None:
    config = _project(tmp_path)
    store = tmp_path / "store.sqlite"
    runs = oloproof.run(config, store=store)
    assert isinstance(runs, oloproof.VariantRuns)
    calls = len(_lines(tmp_path / "calls.log"))
    rescored = oloproof.rescore("variant:model=large,prompt=v2", config, store=store)
    assert rescored.document.rescored_from == runs.of("model=large,prompt=v2").run_id
    assert rescored.document.system.variant == "model=large,prompt=v2"
    assert rescored.metric("answer_correct").passed == 10  # every case taken, none left out
    assert not rescored.document.not_rescored
    assert len(_lines(tmp_path / "calls.log")) == calls  # no system call
    assert _stored(store)[-1] == (rescored.run_id, "model=large,prompt=v2", "complete")
    # A variant the suite no longer lists cannot be rescored: said before anything runs.
    config.write_text(SUITE.replace("[small, large, open]", "[small, large]"))
    with pytest.raises(UsageError, match=r"run run_\w+ is of the variant model=open,prompt=v1, "
                       r"which the suite no longer runs: model=open is not a variant"):
        oloproof.rescore(runs[4].run_id, config, store=store)


def test_the_command_prints_a_line_per_run_and_exits_with_the_worst(
        tmp_path: Path, cli: Any) -> None:
    _project(tmp_path)
    code, out, err = cli("run", "--store", "store.sqlite", "--junit", "runs.xml",
                         "--markdown", "runs.md", cwd=tmp_path)
    stored = _stored(tmp_path / "store.sqlite")
    assert [v for _, v, _ in stored] == ORDER
    lines = out.splitlines()
    assert lines[0] == "6 runs of desk 2.1, one per variant of system.variants:", out
    for line, (run_id, variant, _) in zip(lines[1:7], stored, strict=True):
        assert line.split()[:3] == [variant, run_id, "complete"], out
    assert [line.split()[3:] for line in lines[1:7]] == [
        ["BLOCK", "(exit", "1)"]] * 2 + [["ALLOW", "(exit", "0)"]] * 2 + [
        ["BLOCK", "(exit", "3)"]] * 2, out
    assert code == 1, err
    assert "Exit 1: the worst of the runs' gates." in out
    assert "oloproof inspect variant:model=small,prompt=v1" in out
    # The CI files hold every run, each named by its variant.
    xml = (tmp_path / "runs.xml").read_text()
    for variant in ORDER:
        assert f'name="oloproof.rules[{variant}]"' in xml
        assert f'name="oloproof.cases[{variant}]"' in xml
    markdown = (tmp_path / "runs.md").read_text()
    assert markdown.count("## Oloproof: ") == 6
    assert r"(model\=open\,prompt\=v2)" in markdown
    # --json: every run's document, in the runs' order.
    code, out, err = cli("run", "--store", "store.sqlite", "--json", cwd=tmp_path)
    assert code == 1, err
    printed = json.loads(out)
    assert [d["system"]["variant"] for d in printed["runs"]] == ORDER
    assert [d["cache"]["execution"]["hit"] for d in printed["runs"]] == [10] * 6


def test_a_combination_whose_every_case_errors_fails_and_the_others_go_on(
        tmp_path: Path) -> None:
    config = _project(tmp_path)
    app = tmp_path / "app.py"
    app.write_text(app.read_text().replace(
        "    if variant['model'] == 'open':",
        "    if variant == {'model': 'small', 'prompt': 'v2'}:\n"
        "        raise RuntimeError('no such model')\n"
        "    if variant['model'] == 'open':"))
    runs = oloproof.run(config, store=tmp_path / "store.sqlite")
    assert isinstance(runs, oloproof.VariantRuns)
    assert [r.status for r in runs] == ["complete", "failed"] + ["complete"] * 4
    assert [int(r.gate.exit_code) for r in runs] == [1, 5, 0, 0, 3, 3]
    assert runs.exit_code == 5


def test_progress_is_counted_per_run_and_says_which(tmp_path: Path) -> None:
    from rich.console import Console

    from oloproof.report.progress import LiveProgress

    config = _project(tmp_path)
    seen: list[tuple[str, int, int]] = []
    console = Console(record=True, force_terminal=True, width=120)
    with LiveProgress(console) as live:
        def on_progress(progress: Any) -> None:
            seen.append((progress.run, progress.done, progress.total))
            live.update(progress)
        oloproof.run(config, store=tmp_path / "store.sqlite", on_progress=on_progress)
    assert [s for s in seen if s[1] == s[2]] == [
        (f"{v}, {n} of 6", 10, 10) for n, v in enumerate(ORDER, 1)]
    assert seen[0] == ("model=small,prompt=v1, 1 of 6", 1, 10)  # (each run counted from 0)
    assert seen[10] == ("model=small,prompt=v2, 2 of 6", 1, 10)
    assert "running model=open,prompt=v2, 6 of 6" in console.export_text()


def test_every_combination_is_paired_with_the_one_baseline_named(tmp_path: Path) -> None:
    """The baseline is resolved once, before the first run: every combination's rule compares
    with the same run (here the large model's earlier run), and each run's cases are stored
    before it is paired (the store's writer is stopped for that, and started again for the
    next run)."""
    config = _project(tmp_path)
    store = tmp_path / "store.sqlite"
    first = oloproof.run(config, store=store, variant="model=large,prompt=v1")
    (tmp_path / "release.yaml").write_text(
        "version: 1\nrules:\n  - {id: no-regression, metric: answer_correct, "
        "kind: non_inferiority, margin: 0.1}\n", encoding="utf-8")
    runs = oloproof.run(config, store=store, baseline="variant:model=large,prompt=v1")
    assert isinstance(runs, oloproof.VariantRuns)
    assert [r.document.baseline.baseline if r.document.baseline else None for r in runs] \
        == [first.run_id] * 6
    # Paired case by case: the small model broke all ten, the large none, the open five.
    assert [r.document.baseline.criteria[0].broken for r in runs
            if r.document.baseline is not None] == [10, 10, 0, 0, 5, 5]
    assert [str(r.decisions[0].state) for r in runs][:2] == ["FAIL", "FAIL"]


def test_the_command_rescores_a_variant_s_run(tmp_path: Path, cli: Any) -> None:
    config = _project(tmp_path)
    runs = oloproof.run(config, store=tmp_path / "store.sqlite")
    assert isinstance(runs, oloproof.VariantRuns)
    code, out, err = cli("rescore", "variant:model=large,prompt=v2", "--store", "store.sqlite",
                         "--json", cwd=tmp_path)
    assert code == 0, err  # (the large model ALLOWs)
    document = json.loads(out)
    assert document["system"]["variant"] == "model=large,prompt=v2"
    assert document["rescored_from"] == runs.of("model=large,prompt=v2").run_id
