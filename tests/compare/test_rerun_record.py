"""Re-running is on the record (issue 40 point 3, docs/limits.md#re-runs-and-re-drawn-samples):
complete runs of one suite, system version and variant are counted and a run says which it is
(`run 3 of desk v1`); a run that stopped or failed is not counted; a --no-cache run after
earlier ones is a re-sample, marked in every report; a baseline among several runs of its
version says which it is and why; schema 6 migrates a store of schema 5, counting the runs it
already held, and a read-only reader never migrates."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from compare_desk import Desk
from old_stores import as_of_schema

import oloproof
from oloproof.store.schema import SCHEMA_VERSION


def _run(cli: Any, desk: Desk, *args: str) -> dict[str, Any]:
    code, out, err = cli("run", "--json", *args, cwd=desk.root)
    assert code == 0, err
    document: dict[str, Any] = json.loads(out)
    return document


def _said(cli: Any, desk: Desk, *args: str) -> str:
    code, out, err = cli(*args, cwd=desk.root, env={"COLUMNS": "200"})
    assert code == 0, err
    return out


class _Stop(Exception):
    pass


def _stop_after(done: int, how: type[BaseException]) -> Any:
    def on_progress(progress: Any) -> None:
        if progress.done >= done:
            raise how("stopped by the test")
    return on_progress


@pytest.fixture
def desk(tmp_path: Path) -> Desk:
    desk = Desk(tmp_path / "desk", n=6)
    desk.policy = {"version": 1, "rules": [{"id": "answers", "metric": "answer_correct",
                                            "min": 0.3}]}
    desk.write()
    return desk


def test_complete_runs_are_counted_and_said(cli: Any, desk: Desk) -> None:
    first = _run(cli, desk)
    assert "record" not in first  # the only run of its version: nothing to say
    # A run stopped part-way (Ctrl-C) and one that failed are not counted.
    with pytest.raises(oloproof.RunStopped):
        oloproof.run(desk.config, no_cache=True, on_progress=_stop_after(2, KeyboardInterrupt))
    with pytest.raises(_Stop):
        oloproof.run(desk.config, no_cache=True, on_progress=_stop_after(2, _Stop))
    assert [r["status"] for r in oloproof.list_runs(config=desk.config)][:2] == [
        "failed", "stopped"]
    out = _said(cli, desk, "run")
    assert "Record: run 2 of desk v1\n" in out
    assert f"complete runs of this suite and version, oldest first: {first['run_id']}, " \
        "this run\n" in out
    assert "re-sample" not in out  # from the cache: the same cases, nothing drawn again

    again = oloproof.run(desk.config, no_cache=True)
    record = again.document.record
    assert record is not None and (record.run, record.runs) == (3, 3)
    assert record.no_cache and record.resample and record.resampled == [again.run_id]
    assert record.earlier[0] == first["run_id"] and record.later == []
    out = _said(cli, desk, "run", "--no-cache", "--markdown", "run.md")
    assert "Record: run 4 of desk v1, re-sample 2 (made with --no-cache: its cases drawn " \
        "again)" in out
    assert f"re-sampled with --no-cache (2): {again.run_id}, this run" in out
    assert "passes a rule more often than its confidence level says" in out
    markdown = (desk.root / "run.md").read_text(encoding="utf-8")
    assert "**Record: run 4 of desk v1, re-sample 2 (made with --no-cache" in markdown

    # A gate of an earlier run says which it is, of how many now.
    out = _said(cli, desk, "gate", again.run_id)
    assert "Record: run 3 of desk v1, of 4 complete runs so far, re-sample 1" in out
    gated = json.loads(_said(cli, desk, "gate", again.run_id, "--json"))["record"]
    assert (gated["run"], gated["runs"], gated["no_cache"]) == (3, 4, True)
    assert len(gated["earlier"]) == 2 and len(gated["later"]) == 1
    # The HTML report shows the record it stored.
    _said(cli, desk, "report", again.run_id, "--html", "run.html")
    assert "re-sample 1 (made with --no-cache" in (desk.root / "run.html").read_text()


def test_another_version_or_suite_starts_its_own_count(cli: Any, desk: Desk) -> None:
    _run(cli, desk)
    assert _run(cli, desk)["record"]["run"] == 2
    # More trials re-measure the same cases by the same criteria: the same suite.
    assert _run(cli, desk, "--trials", "2")["record"]["run"] == 3
    desk.version("v2")
    assert "record" not in _run(cli, desk)  # run 1 of v2
    desk.cases.append(desk.case("c7"))  # another dataset: another suite
    desk.write()
    assert "record" not in _run(cli, desk)
    desk.suite["evaluators"].pop()  # another set of evaluators: another suite
    desk.write()
    assert "record" not in _run(cli, desk)
    # The evaluators' order in the file makes no other suite.
    desk.suite["evaluators"].append({"type": "agent_tool_called", "tool_name": "lookup"})
    desk.write()
    third = _run(cli, desk)
    desk.suite["evaluators"].reverse()
    desk.write()
    assert _run(cli, desk)["record"]["earlier"][-1] == third["run_id"]


def test_a_baseline_among_runs_of_its_version_says_which_and_why(cli: Any,
                                                                 desk: Desk) -> None:
    v1 = [_run(cli, desk)["run_id"] for _ in range(3)]
    desk.version("v2")
    candidate = _run(cli, desk)["run_id"]
    latest = oloproof.compare("version:v1", "latest", desk.config)
    assert latest.baseline == v1[-1]
    taken = latest.baseline_taken
    assert taken is not None and (taken.run, taken.runs, taken.why) == (3, 3, "latest")
    named = oloproof.compare(v1[0], "latest", desk.config).to_json()["baseline_taken"]
    assert named == {"run": 1, "runs": 3, "latest": v1[-1], "why": "named",
                     "reference": v1[0]}
    out = " ".join(_said(cli, desk, "compare", "latest~3", "latest").split())
    assert f"Baseline {v1[0]} is run 1 of 3 complete runs of desk v1 (this suite): named " \
        f"(latest~3); the latest is {v1[-1]}" in out
    out = " ".join(_said(cli, desk, "compare", "version:v1", "latest", "--markdown",
                         "cmp.md").split())
    assert "the latest of them (version:v1 takes the latest)" in out
    assert "the latest of them (version\\:v1 takes the latest)" in (
        desk.root / "cmp.md").read_text(encoding="utf-8")
    # A run decided against a pinned version says it in its report, as compare does.
    desk.write_policy("ni.yaml", {"version": 1, "baseline": {"version": "v1"}, "rules": [
        {"id": "ni", "metric": "answer_correct", "kind": "non_inferiority", "margin": 0.5}]})
    out = " ".join(_said(cli, desk, "gate", candidate, "--policy", "ni.yaml").split())
    assert f"Baseline {v1[-1]} is run 3 of 3 complete runs of its version (this suite): " \
        "the latest of them (version:v1 takes the latest)" in out
    assert oloproof.compare("latest~1", "latest", desk.config).baseline_taken is not None
    # One complete run of the baseline's version: nothing to say.
    assert "baseline_taken" not in oloproof.compare(
        candidate, v1[0], desk.config).to_json()  # v2 has one run
    # A run made against one of several runs says which and why too, the baseline pinned by
    # its policy or named on the command line, in its report and its JSON document.
    desk.version("v3")
    out = " ".join(_said(cli, desk, "run", "--policy", "ni.yaml").split())
    assert f"Baseline {v1[-1]} is run 3 of 3 complete runs of its version (this suite): " \
        "the latest of them (version:v1 takes the latest)" in out
    made = _run(cli, desk, "--baseline", v1[1], "--policy", "ni.yaml")
    assert made["baseline"]["baseline_taken"] == {
        "run": 2, "runs": 3, "latest": v1[-1], "why": "named", "reference": v1[1]}


def test_a_store_of_schema_5_migrates_and_counts_the_runs_it_held(cli: Any,
                                                                  desk: Desk) -> None:
    before = [_run(cli, desk)["run_id"] for _ in range(2)]
    store = desk.root / ".oloproof" / "store.sqlite"
    with sqlite3.connect(store) as conn:  # as the Oloproof before the record left it
        as_of_schema(conn, 5)
    # A reader that never writes (`oloproof view`) never migrates it.
    from oloproof.errors import StoreError
    from oloproof.store.viewing import read_store

    with pytest.raises(StoreError, match="older Oloproof"):
        read_store(store, lambda db: db.list_runs())
    with sqlite3.connect(store) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 5
    # A command that can write migrates it: the runs it held are counted.
    assert before[0] in _said(cli, desk, "runs")
    with sqlite3.connect(store) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        digests = {d for (d,) in conn.execute("SELECT suite_digest FROM runs")}
    assert len(digests) == 1 and None not in digests
    third = _run(cli, desk, "--no-cache")["record"]
    assert third["earlier"] == before and third["run"] == 3 and third["resampled"]


def test_subset_and_rescored_runs_are_not_counted(cli: Any, desk: Desk) -> None:
    first = _run(cli, desk)["run_id"]
    code, out, err = cli("run", "--json", "--case", "c1", cwd=desk.root)
    assert code == 3, err  # a subset never allows a release
    subset = json.loads(out)
    assert subset["subset"]["cases"] == 1 and "record" not in subset
    code, out, err = cli("rescore", first, "--json", cwd=desk.root)
    assert code == 0, err
    rescored = json.loads(out)
    assert rescored["rescored_from"] == first and "record" not in rescored
    # The next whole run is the second of its version: neither was counted.
    second = _run(cli, desk)["record"]
    assert (second["run"], second["runs"], second["earlier"]) == (2, 2, [first])
    gated = json.loads(_said(cli, desk, "gate", rescored["run_id"], "--json"))
    assert "record" not in gated
    # A store of schema 5 that held them: its subset and rescored runs get their kind when it
    # is upgraded, and are still not counted.
    store = desk.root / ".oloproof" / "store.sqlite"
    with sqlite3.connect(store) as conn:
        as_of_schema(conn, 5)
    assert first in _said(cli, desk, "runs")  # (migrates)
    with sqlite3.connect(store) as conn:
        kinds = dict(conn.execute("SELECT run_id, kind FROM runs").fetchall())
    assert kinds[subset["run_id"]] == "subset" and kinds[rescored["run_id"]] == "rescored"
    third = _run(cli, desk)["record"]
    assert (third["run"], third["runs"]) == (3, 3)
