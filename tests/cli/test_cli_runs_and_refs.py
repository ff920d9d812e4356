"""Stored runs: `gate`, `runs`, `inspect`, and run references (docs/cli.md).

`oloproof gate RUN [--policy FILE]` re-decides a stored run without running anything; every
command that takes a run accepts `latest`, `latest~N`, and a unique prefix or suffix of an id.
The project has ten cases; the probe answers c004 wrongly, so 9 of 10 answers are right.
"""

from __future__ import annotations

import json

import pytest
from terminal_text import table

STRICT = {"version": 1, "rules": [
    {"id": "no-wrong-answer", "metric": "answer_correct", "kind": "observed_count",
     "max_failures": 0},
]}
DEMANDING = {"version": 1, "rules": [{"id": "answers", "metric": "answer_correct", "min": 0.95}]}


@pytest.fixture(scope="module")
def project(new_probe, cli):
    """Two stored runs of the same suite: the first, then `latest`."""
    probe = new_probe()
    cases = probe.plain_cases(10)
    cases[3]["input"]["answer"] = "no"
    probe.write_cases(cases)
    probe.write_policy("strict.yaml", STRICT)
    probe.write_policy("demanding.yaml", DEMANDING)
    runs = []
    for _ in range(2):
        code, out, err = cli("run", "--json", cwd=probe.path)
        assert code == 0, err
        runs.append(json.loads(out)["run_id"])
    probe.forget_calls()
    return probe, runs


def _run_id_of(cli, probe, ref: str) -> str:
    code, out, err = cli("inspect", ref, "--json", cwd=probe.path)
    assert code == 0, err
    return str(json.loads(out)["run_id"])


def test_gate_latest_redecides_the_stored_run_with_its_exit_code(project, cli):
    probe, (_, latest) = project

    code, out, _ = cli("gate", "latest", cwd=probe.path)

    assert code == 0
    assert latest in out and "Gate: ALLOW (exit 0)" in out
    assert "answers" in out and "PASS" in out
    assert probe.calls() == [], "nothing was run"


def test_gate_under_a_stricter_policy_blocks_without_running_anything(project, cli):
    probe, _ = project

    code, out, _ = cli("gate", "latest", "--policy", "strict.yaml", cwd=probe.path)

    assert code == 1, "BLOCK with a FAIL"
    assert "Gate: BLOCK (exit 1)" in out
    assert "observed_failures_exceed_limit" in out
    assert probe.calls() == []


def test_gate_json_on_insufficient_evidence_exits_3(project, cli):
    probe, _ = project

    code, out, _ = cli("gate", "latest", "--policy", "demanding.yaml", "--json", cwd=probe.path)

    document = json.loads(out)
    assert code == 3 == document["gate"]["exit_code"]
    assert document["gate"]["action"] == "BLOCK"
    [decision] = document["decisions"]
    assert (decision["rule"], decision["metric"], decision["state"], decision["reasons"]) == (
        "answers", "answer_correct", "INSUFFICIENT_EVIDENCE", ["interval_overlaps_threshold"])
    answer = next(m for m in document["metrics"] if m["id"] == "answer_correct")
    assert (decision["bound_side"], decision["bound"]) == ("lower", answer["lower"])
    assert decision["threshold"] > answer["lower"]
    assert probe.calls() == []


def test_gate_with_a_policy_on_an_unknown_metric_is_a_configuration_error(project, cli):
    probe, _ = project
    probe.write_policy("typo.yaml", {"version": 1, "rules": [
        {"id": "answers", "metric": "answer_corect", "min": 0.5}]})

    code, _, err = cli("gate", "latest", "--policy", "typo.yaml", cwd=probe.path)

    assert code == 2
    assert "typo.yaml" in err and "answer_corect" in err and "answer_correct" in err
    assert "Traceback" not in err


def test_runs_lists_newest_first_with_the_gate_in_words(project, cli):
    probe, (first, latest) = project

    code, out, _ = cli("runs", cwd=probe.path)

    assert code == 0
    assert out.index(latest) < out.index(first)
    rows = table(out, "Runs")
    assert [r["Run"] for r in rows] == [latest, first]
    assert all(r["Gate"] == "ALLOW (exit 0)" for r in rows)
    detail = "Started · status · system · cases × trials · tags"
    assert all(" · complete · " in r[detail] for r in rows)
    assert all(r[detail].split(" · ")[0].endswith(" UTC") for r in rows)
    # The system with its version, and the trials, so two runs can be told apart.
    assert all(r[detail].endswith(" cases × 1 trial") for r in rows), rows


def test_inspect_latest_shows_the_report(project, cli):
    probe, (_, latest) = project

    code, out, _ = cli("inspect", "latest", cwd=probe.path)

    assert code == 0
    assert out.startswith(f"Run {latest} · complete")
    for part in ("Gate: ALLOW (exit 0)", "Decisions", "Metrics",
                 "9 / 10 observed · 0 missing · 0 excluded", "Cache: execution"):
        assert part in out


def test_inspect_one_case_shows_it_whole(project, cli):
    probe, _ = project

    code, out, _ = cli("inspect", "latest", "--case", "c004", cwd=probe.path)

    assert code == 0
    assert "c004" in out
    assert '"answer": "no"' in out, "the output"
    assert "lookup" in out, "the trajectory"
    assert "answer_correct" in out and "failed" in out


def test_inspect_failures_lists_only_the_failed_case(project, cli):
    probe, _ = project

    code, out, _ = cli("inspect", "latest", "--failures", "--json", cwd=probe.path)

    assert code == 0
    assert [view["case"] for view in json.loads(out)] == ["c004"]


def test_inspect_an_unknown_case_is_a_clear_error(project, cli):
    probe, _ = project

    code, out, err = cli("inspect", "latest", "--case", "c999", cwd=probe.path)

    assert code != 0
    assert "c999" in out + err
    assert "Traceback" not in err


@pytest.mark.parametrize("ref", ["latest", "latest~0"])
def test_latest_is_the_newest_run(project, cli, ref):
    probe, (_, latest) = project
    assert _run_id_of(cli, probe, ref) == latest


def test_latest_tilde_n_counts_back(project, cli):
    probe, (first, _) = project
    assert _run_id_of(cli, probe, "latest~1") == first


def test_a_unique_prefix_or_suffix_names_a_run(project, cli):
    probe, (first, latest) = project

    assert _run_id_of(cli, probe, first[:-3]) == first
    assert _run_id_of(cli, probe, first.removeprefix("run_")[:-3]) == first
    assert _run_id_of(cli, probe, latest[-6:]) == latest
    assert _run_id_of(cli, probe, latest) == latest


@pytest.mark.parametrize("ref", ["run_", "run_nothing-like-this", "latest~7", "latest~x"])
def test_a_reference_that_names_no_single_run_is_a_clear_error(project, cli, ref):
    probe, _ = project

    code, out, err = cli("gate", ref, cwd=probe.path)

    # docs/ci.md#exit-codes has 2 for usage errors and 5 for store errors; today the CLI says 5.
    assert code in (2, 5)
    assert ref in err
    assert "Traceback" not in err and out == ""


def test_a_project_without_runs_says_so(probe, cli):
    code, out, err = cli("runs", cwd=probe.path)
    assert code == 0 and "No runs yet" in out

    code, _, err = cli("gate", "latest", cwd=probe.path)
    assert code == 5 and "oloproof run" in err and "Traceback" not in err
