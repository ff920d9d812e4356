"""Baselines that mean what a reviewer thinks (issue 27 point 1): `baseline: {version: V}` and
`{tag: NAME}` (and `version:V`, `tag:NAME` wherever a run is named), `oloproof tag RUN NAME`
(a tag moves; schema 3 keeps tags), `oloproof runs` with versions, trials and tags, a warning
when both sides are one version, and only criteria judged alike compared when the baseline
ran another suite file. Also issue 27 point 5: what "unchanged" means, in words."""

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


def _ni(baseline: Any, margin: float = 0.5) -> dict[str, Any]:
    return {"version": 1, "baseline": baseline, "rules": [
        {"id": "no-regression", "metric": "answer_correct", "kind": "non_inferiority",
         "margin": margin}]}


def _ids(desk: Desk) -> list[str]:
    return [r.run_id for r in [oloproof.load_run(f"latest~{n}", desk.config)
                               for n in range(2, -1, -1)]]


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory, cli: Any) -> Desk:
    """v1 (every answer right), then v2 (three wrong), then v2 again: `latest~1` of the re-run
    is v2, not the version shipped."""
    desk = Desk(tmp_path_factory.mktemp("pinned"), n=30)
    desk.policy = {"version": 1, "rules": []}
    desk.write()
    assert cli("run", cwd=desk.root)[0] == 0
    desk.version("v2")
    desk.wrong("c1", "c2", "c3")
    assert cli("run", cwd=desk.root)[0] == 0
    assert cli("run", cwd=desk.root)[0] == 0
    return desk


def test_latest_1_after_a_rerun_is_noise_and_says_so(desk: Desk, cli: Any) -> None:
    comparison = oloproof.compare("latest~1", "latest", desk.config)
    assert (comparison.baseline_system.version, comparison.candidate_system.version) == (
        "v2", "v2")
    assert any("both desk v2: this compares two runs of one version, so it measures noise"
               in w for w in comparison.warnings), comparison.warnings
    code, out, err = cli("compare", "latest~1", "latest", cwd=desk.root, env={"COLUMNS": "100"})
    assert code == 0, err
    assert "it measures noise (how much the system varies from run to run), not a change" in \
        " ".join(out.split())


def test_a_version_names_the_latest_complete_run_of_that_version(desk: Desk, cli: Any) -> None:
    v1, _, rerun = _ids(desk)
    comparison = oloproof.compare("version:v1", "latest", desk.config)
    assert (comparison.baseline, comparison.candidate) == (v1, rerun)
    assert not any("measures noise" in w for w in comparison.warnings)
    # In the policy, as a reviewer writes it (a number reads as the version's text).
    desk.write_policy("pinned.yaml", _ni({"version": "v1"}))
    code, out, err = cli("gate", "latest", "--policy", "pinned.yaml", "--json", cwd=desk.root)
    assert code == 0, err
    printed = json.loads(out)
    assert printed["baseline"]["baseline"] == v1
    assert printed["decisions"][0]["baseline"] == v1
    assert printed["baseline"]["criteria"][0]["broken"] == 3
    # The version of the candidate itself names the newest other run of it.
    assert oloproof.compare("version:v2", "latest", desk.config).baseline == _ids(desk)[1]


def test_a_version_nothing_ran_is_a_usage_error(desk: Desk, cli: Any) -> None:
    desk.write_policy("pinned.yaml", _ni({"version": 1.1}))
    code, _, err = cli("gate", "latest", "--policy", "pinned.yaml", cwd=desk.root)
    assert code == 2
    assert "no complete run of project 'desk' has system version '1.1'" in err
    assert "complete runs have versions v1, v2" in err
    bad = desk.write_policy("bad.yaml", _ni({"version": "v1", "tag": "shipped"}))
    code, _, err = cli("gate", "latest", "--policy", bad.name, cwd=desk.root)
    assert code == 2 and "bad.yaml:2" in err and "exactly one of version and tag" in err


def test_a_tag_names_a_run_and_moves(desk: Desk, cli: Any) -> None:
    v1, v2, rerun = _ids(desk)
    code, out, err = cli("tag", v1, "shipped", cwd=desk.root)
    assert (code, out.strip()) == (0, f"Tagged {v1} shipped."), err
    assert oloproof.compare("tag:shipped", "latest", desk.config).baseline == v1
    moved = oloproof.tag(v2, "shipped", desk.config)
    assert (moved.run_id, moved.moved_from) == (v2, v1)
    code, out, err = cli("tag", "latest~1", "shipped", cwd=desk.root)  # already there
    assert (code, out.strip()) == (0, f"Tagged {v2} shipped."), err
    desk.write_policy("tagged.yaml", _ni({"tag": "shipped"}))
    code, out, err = cli("gate", "latest", "--policy", "tagged.yaml", "--json", cwd=desk.root)
    assert code == 0, err
    assert json.loads(out)["baseline"]["baseline"] == v2
    # --baseline tag:NAME on a run: resolved before the run starts.
    code, out, err = cli("run", "--policy", "tagged.yaml", "--baseline", "tag:shipped",
                         "--json", cwd=desk.root)
    assert code == 0, err
    assert json.loads(out)["baseline"]["baseline"] == v2
    assert rerun != v2


def test_runs_shows_versions_trials_and_tags(desk: Desk, cli: Any) -> None:
    oloproof.tag("latest", "candidate", desk.config)
    code, out, err = cli("runs", cwd=desk.root, env={"COLUMNS": "200"})
    assert code == 0, err
    lines = [line for line in out.splitlines() if "run_" in line]
    by_id = {line.split()[1]: line for line in lines}
    latest = oloproof.load_run("latest", desk.config).run_id
    assert "candidate" in by_id[latest] and "desk v2" in by_id[latest]
    assert any("shipped" in line and "desk v2" in line for line in lines)
    assert all(" 30 " in line and " 1 " in line for line in lines)  # cases, trials
    # A tag that names the candidate itself is refused as its baseline.
    desk.write_policy("self.yaml", _ni({"tag": "candidate"}))
    code, _, err = cli("gate", "latest", "--policy", "self.yaml", cwd=desk.root)
    assert code == 2 and "names the candidate run" in err and "itself" in err


def test_bad_tags_and_references(desk: Desk, cli: Any) -> None:
    for name in ("latest", "run_x", "a b", "_x", "x" * 65, "", "tag:x"):
        code, _, err = cli("tag", "latest", name, cwd=desk.root)
        assert code == 2, (name, err)
        assert "cannot be a tag" in err
    code, _, err = cli("compare", "tag:nope", "latest", cwd=desk.root)
    assert code == 2 and "no run is tagged 'nope'; the tags are" in err
    code, _, err = cli("compare", "shipped", "latest", cwd=desk.root)
    assert code == 2 and "(a tag is written tag:shipped)" in err
    code, _, err = cli("tag", "nope", "x", cwd=desk.root)
    assert code == 2 and "no run matches 'nope'" in err


def test_another_suite_file_compares_only_criteria_judged_alike(tmp_path: Path,
                                                                cli: Any) -> None:
    desk = Desk(tmp_path / "other", n=20)
    desk.policy = {"version": 1, "rules": []}
    desk.write()
    assert cli("run", cwd=desk.root)[0] == 0
    desk.suite["evaluators"][0]["case_sensitive"] = False  # answer_correct judged otherwise
    desk.version("v2")
    assert cli("run", cwd=desk.root)[0] == 0
    comparison = oloproof.compare("latest~1", "latest", desk.config)
    assert [r.criterion for r in comparison.criteria] == ["agent_tool_lookup_called"]
    assert comparison.not_compared == ["answer_correct"]
    assert any("judged by an evaluator configured otherwise in the baseline run" in w
               and w.endswith(": answer_correct") for w in comparison.warnings)
    desk.write_policy("ni.yaml", _ni("latest~1"))
    code, out, err = cli("gate", "latest", "--policy", "ni.yaml", "--json", cwd=desk.root)
    assert code == 3, err
    assert json.loads(out)["decisions"][0]["reasons"] == ["no_paired_cases"]


def test_unchanged_shares_are_said_in_words(tmp_path: Path, cli: Any) -> None:
    desk = Desk(tmp_path / "trials", n=6)
    desk.suite["trials"] = 3
    desk.policy = {"version": 1, "rules": []}
    desk.write()
    desk.wrong_trials("c1#2", "c2#1")
    assert cli("run", cwd=desk.root)[0] == 0
    desk.version("v2")
    desk.wrong_trials("c1#3", "c3#1")  # c1: 2 of 3 both times; c2 fixed, c3 broken
    assert cli("run", cwd=desk.root)[0] == 0
    row = oloproof.compare("latest~1", "latest", desk.config).criterion("answer_correct")
    assert (row.unchanged, row.fixed, row.broken) == (1, 1, 1)
    code, out, err = cli("compare", "latest~1", "latest", cwd=desk.root, env={"COLUMNS": "200"})
    assert code == 0, err
    text = " ".join(out.split())
    assert "Cases that passed some but not all of their trials, the same share in both runs " \
        "(neither fixed nor broken): answer_correct 1." in text
    assert "unchanged between 0 and 1" not in text
    code, out, err = cli("runs", cwd=desk.root, env={"COLUMNS": "80"})
    assert out.count("6 cases × 3 trials") == 2, out


def test_a_store_of_schema_2_gets_the_tags_table(tmp_path: Path, cli: Any) -> None:
    desk = Desk(tmp_path / "old", n=3)
    assert cli("run", cwd=desk.root)[0] == 3  # its rule needs more than three cases
    store = desk.root / ".oloproof" / "store.sqlite"
    with sqlite3.connect(store) as conn:  # as an Oloproof before tags left it
        as_of_schema(conn, 2)
    code, out, err = cli("runs", cwd=desk.root)
    assert code == 0 and "desk v1" in out, err
    assert cli("tag", "latest", "old", cwd=desk.root)[0] == 0
    with sqlite3.connect(store) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("SELECT name FROM tags").fetchall() == [("old",)]


def test_a_candidate_of_fewer_trials_is_compared_share_to_share(tmp_path: Path,
                                                                cli: Any) -> None:
    """A baseline of 3 trials against a candidate of 1 (`oloproof run` after `run --trials 3`,
    as the agents_sdk example's README goes): the warning says what to run, and a broken
    case lists only the criteria whose share moved, as shares (it listed every criterion of
    every broken case, `answer_correct ? → failed`)."""
    desk = Desk(tmp_path / "mixed", n=6)
    desk.suite["trials"] = 3
    desk.policy = {"version": 1, "rules": []}
    desk.write()
    desk.wrong_trials("c2#2")  # c2 passes 2 of its 3 trials
    assert cli("run", cwd=desk.root)[0] == 0
    desk.suite["trials"] = 1
    desk.version("v2")
    desk.wrong_trials()
    desk.wrong("c1")  # c1 breaks
    assert cli("run", cwd=desk.root)[0] == 0
    comparison = oloproof.compare("version:v1", "latest", desk.config)
    row = comparison.criterion("answer_correct")
    assert (row.broken, row.fixed) == (1, 1)  # c2: 2 of 3 → 1 of 1 reads as fixed
    (changed,) = [c for c in comparison.changes if c.case == "c1"]
    assert [(c.criterion, c.baseline_value, c.candidate_value) for c in changed.criteria] == [
        ("answer_correct", 1.0, 0.0)]
    code, out, err = cli("compare", "version:v1", "latest", cwd=desk.root,
                         env={"COLUMNS": "200"})
    assert code == 0, err
    text = " ".join(out.split())
    assert "the baseline ran 3 trial(s) per case and the candidate 1: each case's share of " \
        "passing trials is paired" in text
    assert "to compare like with like, run the candidate with --trials 3" in text
    assert "c1: answer_correct 100.0% → 0.0% of trials" in text
    assert "?" not in text[text.index("What changed"):]
