"""What the reading commands show, as library calls (docs/getting-started.md#the-same-from-python):
`oloproof runs` is `oloproof.list_runs()`, `oloproof cases` is `oloproof.list_cases()`,
`inspect --case` is `oloproof.case_view()` and `inspect --failures` shows
`oloproof.case_views()`. Each reads the store read-only, in this process; the commands print
what these return."""

from __future__ import annotations

import json

import pytest

import oloproof


@pytest.fixture
def project(probe, monkeypatch):
    """Six cases, c003 answered wrongly and c005 erroring; the working directory is the
    project."""
    cases = probe.plain_cases(6)
    cases[2]["input"]["answer"] = "no"
    cases[4]["input"]["behave"] = "raise"
    probe.write_cases(cases)
    monkeypatch.chdir(probe.path)
    monkeypatch.delenv("OLOPROOF_STORE", raising=False)
    return probe


def test_list_runs_lists_the_stored_runs_newest_first_with_their_tags(project):
    assert oloproof.list_runs() == []  # nothing run yet: no store, no runs
    first = oloproof.run("oloproof.yaml", policy="release.yaml")
    second = oloproof.run("oloproof.yaml", policy="release.yaml")
    oloproof.tag(first.run_id, "shipped")

    runs = oloproof.list_runs()

    assert [r["run_id"] for r in runs] == [second.run_id, first.run_id]
    assert [r["tags"] for r in runs] == [[], ["shipped"]]
    newest = runs[0]
    assert (newest["status"], newest["n_cases"], newest["trials"]) == ("complete", 6, 1)
    assert (newest["system_name"], newest["system_version"]) == ("probe", "v1")
    assert newest["summary"]["gate"] == second.to_json()["gate"]
    assert newest["started_at"] <= newest["finished_at"]
    assert [r["run_id"] for r in oloproof.list_runs(limit=1)] == [second.run_id]


def test_list_runs_outside_a_project_is_a_configuration_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OLOPROOF_STORE", raising=False)

    with pytest.raises(oloproof.ConfigError, match=r"no oloproof\.yaml here"):
        oloproof.list_runs()


def test_list_cases_gives_each_case_its_verdicts_and_narrows_as_cases_does(project):
    ran = oloproof.run("oloproof.yaml")

    every = oloproof.list_cases()

    assert every.run_id == ran.run_id and every.total == 6
    assert every.criteria == ["answer_correct", "agent_tool_lookup_called"]
    assert [(c.case, c.codes, c.error) for c in every.cases] == [
        ("c001", "PP", None), ("c002", "PP", None), ("c003", "FP", None),
        ("c004", "PP", None), ("c005", "MM", "system_error"), ("c006", "PP", None)]

    failing = oloproof.list_cases(ran.run_id, failures=True)
    assert [c.case for c in failing.cases] == ["c003", "c005"] and failing.total == 6
    missing = oloproof.list_cases(criterion="answer_correct", verdict="missing")
    assert [c.case for c in missing.cases] == ["c005"]
    assert missing.selection.describe() == "missing on answer_correct"
    body = oloproof.list_cases(failures=True).to_json()
    assert json.loads(json.dumps(body)) == body
    assert [c["case"] for c in body["cases"]] == ["c003", "c005"]


def test_case_view_is_one_case_whole_and_case_views_several(project):
    oloproof.run("oloproof.yaml")

    view = oloproof.case_view("c003")

    assert view["case"] == "c003"
    assert view["output"] == {"answer": "no"}
    verdicts = {c["criterion"]: c["verdict"] for c in view["criteria"]}
    assert verdicts == {"answer_correct": "failed", "agent_tool_lookup_called": "passed"}
    both = oloproof.case_views(cases=["c005", "c003", "absent"])
    assert [v["case"] for v in both] == ["c005", "c003"]  # in the order asked; absent left out
    assert both[1] == view
    assert [v["case"] for v in oloproof.case_views(failures=True)] == ["c003", "c005"]
    assert both[0]["errors"][0]["kind"] == "system_error"


def test_a_case_or_criterion_the_run_lacks_is_a_usage_error(project):
    ran = oloproof.run("oloproof.yaml")

    with pytest.raises(oloproof.UsageError, match="has no case 'c999'"):
        oloproof.case_view("c999")
    with pytest.raises(oloproof.UsageError, match="no trial 2 of case 'c001'"):
        oloproof.case_view("c001", ran.run_id, trial=2)
    with pytest.raises(oloproof.UsageError, match="no criterion 'tone'"):
        oloproof.list_cases(criterion="tone")
    with pytest.raises(oloproof.UsageError, match="'failed' or 'missing'"):
        oloproof.list_cases(verdict="passed")
    with pytest.raises(oloproof.UsageError):
        oloproof.case_views("latest~5")
