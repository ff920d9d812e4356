"""A subset while iterating (docs/cli.md#running-part-of-the-suite): `run --case ID`, `-k
PATTERN`, `--limit N`, `--sample N [--seed S]` (the same as `oloproof.run` keywords) run part of
the suite; the run is stored as a subset (selection and "N of M cases"), shown so in every
report, its gate never exits 0, and `latest~N` and `version:V` never take it as a baseline
unless it is named by id or tag.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any
from xml.etree import ElementTree

import pytest

import oloproof
from oloproof.errors import UsageError

CHANNELS = {1: "email", 2: "chat", 3: "email", 4: "phone", 5: "chat", 6: "email",
            7: "chat", 8: "phone", 9: "email", 10: "chat"}


def _cases(probe: Any, n: int = 10) -> None:
    cases = probe.plain_cases(n)
    for i, case in enumerate(cases, 1):
        # `channel` is a key every case has: -k matches values, never keys.
        case["metadata"] = {"channel": CHANNELS[i], "tags": {"deep": [f"t{i}"]}, "rank": i}
    probe.write_cases(cases)


@pytest.fixture
def subset_probe(new_probe: Any) -> Any:
    probe = new_probe()
    _cases(probe)
    # An ALLOW on one case: at least 1% with 95% confidence (one pass of one: lower 2.5%).
    probe.policy["rules"] = [{"id": "answers", "metric": "answer_correct", "min": 0.01}]
    probe.write_policy()
    return probe


def _run(probe: Any, **chosen: Any) -> oloproof.RunResult:
    return oloproof.run(probe.path / "oloproof.yaml", **chosen)


def test_each_option_chooses_its_cases_and_calls_only_them(subset_probe: Any) -> None:
    probe = subset_probe
    chosen = _run(probe, cases=["c003", "c007"])
    assert sorted(probe.calls()) == ["c003", "c007"]
    subset = chosen.document.subset
    assert subset is not None and (subset.cases, subset.of) == (2, 10)
    assert subset.selection == {"cases": ["c003", "c007"]}
    assert subset.words == "--case c003 --case c007"
    assert chosen.document.cases == 2

    # -k: a part of the id or of a metadata value at any depth, ignoring case; keys never.
    assert _ids(probe, pattern="EMAIL") == ["c001", "c003", "c006", "c009"]
    assert _ids(probe, pattern="t10") == ["c010"]
    assert _ids(probe, pattern="c00") == [f"c00{i}" for i in range(1, 10)]
    assert _ids(probe, pattern="7") == ["c007"]  # the id, and `rank` 7 as JSON
    with pytest.raises(UsageError, match='-k "channel" keeps no case of the dataset'):
        _run(probe, pattern="channel")
    # --case and -k together: both must hold.
    assert _ids(probe, cases=["c001", "c002"], pattern="chat") == ["c002"]

    assert _ids(probe, limit=3) == ["c001", "c002", "c003"]
    assert _ids(probe, pattern="chat", limit=2) == ["c002", "c005"]

    drawn = _ids(probe, sample=4)
    assert len(drawn) == 4 and drawn == _ids(probe, sample=4, seed=0)
    assert drawn == sorted(drawn)  # in dataset order
    other = _ids(probe, sample=4, seed="another")
    assert len(other) == 4 and other != drawn
    assert _run(probe, sample=4, seed=3).document.subset.selection == {"sample": 4, "seed": 3}


def _ids(probe: Any, **chosen: Any) -> list[str]:
    """The case ids of a subset run of `probe` with these options."""
    result = _run(probe, **chosen)
    return [c.case for c in oloproof.list_cases(result.run_id,
                                                config=probe.path / "oloproof.yaml").cases]


def test_a_selection_that_names_nothing_is_an_error_before_any_call(subset_probe: Any,
                                                                    cli: Any) -> None:
    probe = subset_probe
    code, _, err = cli("run", "--case", "c404", "--case", "c001", cwd=probe.path)
    assert code == 2 and "Usage error: --case 'c404': the dataset" in err
    assert "has no case with that id" in err
    code, _, err = cli("run", "-k", "nothing-like-it", cwd=probe.path)
    assert code == 2 and "keeps no case" in err
    code, _, err = cli("run", "--limit", "2", "--sample", "2", cwd=probe.path)
    assert code == 2 and "--limit and --sample" in err
    code, _, err = cli("run", "--seed", "4", cwd=probe.path)
    assert code == 2 and "--seed fixes the draw of --sample" in err
    code, _, err = cli("run", "--limit", "0", cwd=probe.path)
    assert code == 2
    assert probe.calls() == [] and not probe.store.exists()


def test_every_case_chosen_is_the_whole_suite(subset_probe: Any) -> None:
    whole = _run(subset_probe, limit=50)
    assert whole.document.subset is None and whole.gate.exit_code == 0
    assert _run(subset_probe, pattern="c0").document.subset is None


def test_an_allow_of_a_subset_is_not_a_release_decision(subset_probe: Any, cli: Any) -> None:
    probe = subset_probe
    code, out, err = cli("run", "--case", "c002", "-k", "chat", "--junit", "ci/junit.xml",
                         "--markdown", "ci/summary.md", cwd=probe.path)
    assert code == 3, err
    said = " ".join(out.split())
    assert "Gate: ALLOW (exit 3) · subset of 1 of 10 cases: not a release decision" in said
    assert '· 1 case · subset: --case c002 -k "chat"' in said

    document = json.loads(cli("inspect", "latest", "--json", cwd=probe.path).out)
    assert document["gate"] == {"action": "ALLOW", "exit_code": 3}
    assert document["subset"] == {"cases": 1, "of": 10, "words": '--case c002 -k "chat"',
                                  "selection": {"cases": ["c002"], "pattern": "chat"}}

    markdown = (probe.path / "ci" / "summary.md").read_text(encoding="utf-8")
    assert markdown.startswith("## Oloproof: ALLOW (exit 3)\n\nsubset of 1 of 10 cases: not a "
                               "release decision · run")
    assert "> **Subset:** subset of 1 of 10 cases: not a release decision (chosen by" in markdown

    junit = ElementTree.parse(probe.path / "ci" / "junit.xml").getroot()
    rules = junit.find("testsuite[@name='oloproof.rules']")
    assert rules is not None
    properties = {p.get("name"): p.get("value") for p in rules.iter("property")}
    assert properties["subset"] == '1 of 10 cases: --case c002 -k "chat"'
    failure = rules.find("testcase[@name='subset']/failure")
    assert failure is not None
    assert failure.get("message") == "subset of 1 of 10 cases: not a release decision"

    # `gate` decides it again: still no release decision.
    code, out, _ = cli("gate", "latest", cwd=probe.path)
    assert code == 3 and "subset of 1 of 10 cases: not a release decision" in out
    code, out, _ = cli("runs", cwd=probe.path)
    assert "ALLOW (exit 3) · subset 1 of 10" in out


def test_the_html_report_and_the_view_mark_it(subset_probe: Any, cli: Any) -> None:
    pytest.importorskip("starlette")
    from oloproof.store.store import Store
    from oloproof.view import pages

    probe = subset_probe
    assert cli("run", "--limit", "2", cwd=probe.path).code == 3
    assert cli("report", "latest", "--html", "out/report.html", cwd=probe.path).code == 0
    page = (probe.path / "out" / "report.html").read_text(encoding="utf-8")
    assert "subset of 2 of 10 cases: not a release decision" in page
    with Store(probe.store, read_only=True) as db:
        run_id = db.resolve_run("latest")
        data = pages.report_data(db, run_id)
        listed = pages.runs_list(db)
    assert data["summary"]["subset_note"] == "subset of 2 of 10 cases: not a release decision"
    assert data["summary"]["subset"]["words"] == "--limit 2"
    assert listed[0]["kind_words"] == "subset 2 of 10"
    assert listed[0]["subset"] == {"cases": 2, "of": 10}


def test_copies_follow_their_source_and_trials_run_for_the_chosen(new_probe: Any) -> None:
    probe = new_probe()
    cases = probe.plain_cases(4)
    for case in cases:
        case["input"]["message"] = f"Please answer {case['id']}"
    probe.write_cases(cases)
    probe.suite["metamorphic"] = {"transforms": [
        {"name": "polite", "field": "message", "replace": [["Please", "Kindly"]]}]}
    probe.write_suite()
    result = oloproof.run(probe.path / "oloproof.yaml", cases=["c002~polite"], trials=3)
    assert sorted(probe.calls()) == ["c002"] * 3 + ["c002~polite"] * 3  # three trials each
    assert result.document.subset is not None
    assert (result.document.subset.cases, result.document.subset.of) == (1, 4)
    assert result.document.cases == 2
    listed = oloproof.list_cases(config=probe.path / "oloproof.yaml")
    assert sorted(c.case for c in listed.cases) == ["c002", "c002~polite"]


def _kinds(probe: Any) -> dict[str, str]:
    with sqlite3.connect(probe.store) as conn:
        return {r: json.loads(s).get("kind", "run") for r, s in
                conn.execute("SELECT run_id, suite FROM runs")}


def test_a_subset_is_a_baseline_only_when_named(subset_probe: Any, cli: Any) -> None:
    probe = subset_probe
    first = _run(probe).run_id                    # v1, whole
    subset = _run(probe, cases=["c001"]).run_id   # v1, a subset
    assert _kinds(probe) == {first: "run", subset: "subset"}
    config = probe.path / "oloproof.yaml"

    # version:V and latest~N pass it by.
    assert oloproof.compare("version:v1", "latest", config=config).baseline == first
    probe.policy["baseline"] = "latest~1"
    probe.policy["rules"].append({"id": "no-worse", "metric": "answer_correct",
                                  "kind": "non_inferiority", "margin": 0.5})
    probe.write_policy()
    made = _run(probe)  # latest~1 while it is made: the newest whole run before it
    assert made.document.baseline is not None and made.document.baseline.baseline == first
    assert oloproof.compare(config=config).baseline == first  # latest~1 beside latest
    with pytest.raises(UsageError, match=r"and 1 subset or rescored run, which a baseline "
                                         r"names by id or tag"):
        oloproof.compare("latest~2", config=config)

    # Named by id or by a tag given to it, it is the baseline.
    assert oloproof.compare(subset, "latest", config=config).baseline == subset
    oloproof.tag(subset, "tried", config=config)
    assert oloproof.compare("tag:tried", "latest", config=config).baseline == subset

    # A subset candidate pairs its own cases only: the baseline's others are not dropped.
    small = _run(probe, cases=["c002", "c003"])
    against = small.document.baseline
    assert against is not None and against.baseline == made.run_id
    assert against.baseline_only == 0 and against.dropped_cases is None
    assert against.criteria[0].paired == 2
    assert any("only its cases are paired" in w for w in against.warnings)
    assert small.gate.exit_code == 3
