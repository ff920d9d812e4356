"""What a run with trials shows (docs/reliability.md#reading-oloproof-inspect-latest---flaky):
`inspect --flaky`, a case's trials side by side, one line per case in `oloproof cases`, and the
Metrics table's N column."""

from __future__ import annotations

import json

import pytest

PLANS = {"steady": "PPPP", "coin": "PFPF", "mostly": "PPPF", "broken": "FFFF", "gap": "PEPF"}


@pytest.fixture
def project(trial_project):
    trial_project.suite["metrics"] = [
        {"id": "every_time", "type": "pass_hat_k", "criterion": "answer_correct", "k": 4}]
    trial_project.write()
    trial_project.cases(PLANS)
    return trial_project


def test_flaky_lists_the_cases_whose_trials_disagree_most_divided_first(cli, project):
    assert cli("run", cwd=project.root).code in (0, 1, 3)

    done = cli("inspect", "latest", "--flaky", cwd=project.root)

    assert done.code == 0, done.err
    lines = done.out.splitlines()
    assert "3 of 5 cases whose 4 trials" in done.out.replace("\n  ", " ")
    listed = [line.split()[0] for line in lines if line.startswith("  ")
              and line.split()[0] in PLANS]
    # coin (2 of 4) before gap (1 of 3 with one missing: 1/3 divided) before mostly (3 of 4).
    assert listed == ["coin", "gap", "mostly"]
    assert "answer_correct 2 / 4" in done.out
    assert "answer_correct 2 / 4 (1 missing)" in done.out
    assert "--case coin" in done.out


def test_flaky_as_json(cli, project):
    cli("run", cwd=project.root)

    done = cli("inspect", "latest", "--flaky", "--json", cwd=project.root)

    body = json.loads(done.out)
    assert (body["trials"], body["cases"], body["criteria"]) == (4, 5, ["answer_correct"])
    assert [f["case"] for f in body["flaky"]] == ["coin", "gap", "mostly"]
    assert body["flaky"][1]["counts"]["answer_correct"] == {
        "passed": 2, "failed": 1, "missing": 1, "excluded": 0}


def test_flaky_cases_from_python_is_what_inspect_flaky_prints(cli, project):
    import oloproof

    cli("run", cwd=project.root)

    found = oloproof.flaky_cases(config=project.config)

    assert (found.trials, found.total, found.criteria) == (4, 5, ["answer_correct"])
    assert [f.case for f in found.cases] == ["coin", "gap", "mostly"]
    printed = cli("inspect", "latest", "--flaky", "--json", cwd=project.root)
    assert json.loads(printed.out) == found.to_json()


def test_flaky_on_a_run_without_trials_says_how_to_get_them(cli, project):
    project.suite["trials"] = 1
    project.suite["metrics"] = []
    project.write()
    cli("run", cwd=project.root)

    done = cli("inspect", "latest", "--flaky", cwd=project.root)

    assert done.code == 0 and "ran each case once" in done.out and "--trials" in done.out


def test_the_case_panel_shows_each_trial_side_by_side(cli, project):
    cli("run", cwd=project.root)

    done = cli("inspect", "latest", "--case", "gap", cwd=project.root)

    assert done.code == 0, done.err
    out = done.out
    assert "Trials side by side: 4 trials" in out
    row = next(line for line in out.splitlines() if line.startswith("answer_correct"))
    assert row.split()[1:5] == ["P", "M", "P", "F"] and row.endswith("2 / 4")
    assert "T2 errored (system_error): RuntimeError: scripted error on trial 2" in out
    assert 'T4: {"answer": "no"}' in out, "outputs that differ are shown per trial"


def test_the_case_panel_json_has_the_trials(cli, project):
    cli("run", cwd=project.root)

    view = json.loads(cli("inspect", "latest", "--case", "coin", "--json",
                          cwd=project.root).out)

    assert [t["trial"] for t in view["trials"]] == [1, 2, 3, 4]
    assert [t["codes"] for t in view["trials"]] == ["P", "F", "P", "F"]
    assert [t["output"] for t in view["trials"]] == [{"answer": a} for a in
                                                     ("yes", "no", "yes", "no")]
    assert view["criteria"][0]["verdict"] == "passed", "the panel's body is trial 1"


def test_cases_lists_each_case_once_with_its_worst_trial(cli, project):
    cli("run", cwd=project.root)

    done = cli("cases", "latest", "--json", cwd=project.root)

    cases = {c["case"]: c["verdicts"]["answer_correct"] for c in json.loads(done.out)["cases"]}
    assert cases == {"steady": "passed", "coin": "failed", "mostly": "failed",
                     "broken": "failed", "gap": "failed"}


def test_the_metrics_table_reads_cases_times_trials(cli, project):
    done = cli("run", cwd=project.root)

    text = done.out.replace("\n    ", " ")
    assert "5 cases × 4 trials · 1 missing trials · 0 excluded" in text
    # pass^4: steady passes; coin, mostly, broken and gap (a failed trial) fail: all settled.
    assert "1 / 5 cases observed · 0 missing · 0 excluded" in text
    assert "clopper_pearson (exact)" in text and "bentkus (Hoeffding 1963, Bentkus 2004)" in text


def test_the_run_document_names_the_trial_of_each_error(cli, project):
    done = cli("run", "--json", cwd=project.root)

    body = json.loads(done.out)
    assert body["trials"] == 4
    assert body["errors"] == [{"case": "gap", "kind": "system_error",
                               "message": "RuntimeError: scripted error on trial 2",
                               "trial": 2}]
    answer = next(m for m in body["metrics"] if m["id"] == "answer_correct")
    assert (answer["trials"], answer["cases"], answer["method"]) == (4, 5, "bentkus")


def test_every_list_of_cases_says_on_how_many_trials_a_case_failed(cli, project, tmp_path):
    """The terminal's failing cases, `oloproof cases` (and its JSON), the run document and
    the Markdown summary say `failed answer_correct (2 of 4 trials)`, as JUnit does."""
    summary = tmp_path / "summary.md"
    done = cli("run", "--markdown", str(summary), cwd=project.root)

    failing = done.out[done.out.index("Failing cases"):done.out.index("Cache:")]
    assert "  coin: failed answer_correct (2 of 4 trials)\n" in failing
    assert "  broken: failed answer_correct (4 of 4 trials)\n" in failing
    assert "  gap: errored (system_error); failed answer_correct (1 of 4 trials)\n" in failing
    markdown = summary.read_text(encoding="utf-8")
    assert "- mostly: failed answer\\_correct (1 of 4 trials)\n" in markdown
    document = json.loads(cli("inspect", "latest", "--json", cwd=project.root).out)
    first = {c["case"]: c for c in document["failing_cases"]["first"]}
    assert first["coin"]["failed_trials"] == {"answer_correct": 2}
    listed = cli("cases", "latest", cwd=project.root).out
    assert "coin    F  failed answer_correct (2 of 4 trials)" in listed
    body = {c["case"]: c for c in json.loads(cli("cases", "latest", "--json",
                                                 cwd=project.root).out)["cases"]}
    assert (body["gap"]["trials"], body["gap"]["failed_trials"],
            body["gap"]["missing_trials"]) == (4, {"answer_correct": 1}, {"answer_correct": 1})


def test_inspect_shows_one_trial_whole(cli, project):
    cli("run", cwd=project.root)

    done = cli("inspect", "latest", "--case", "coin", "--trial", "2", cwd=project.root)

    assert done.code == 0, done.err
    assert done.out.startswith("Case coin · trial 2 of 4 · run ")
    assert "Trials side by side" not in done.out
    assert '"answer": "no"' in done.out  # trial 2 answered wrong; trial 1 right
    view = json.loads(cli("inspect", "latest", "--case", "gap", "--trial", "2", "--json",
                          cwd=project.root).out)
    assert (view["trial"], view["trials_in_run"]) == (2, 4)
    assert [e["message"] for e in view["errors"]] == ["RuntimeError: scripted error on trial 2"]
    assert view["criteria"][0]["verdict"] == "missing"
    wrong = cli("inspect", "latest", "--case", "coin", "--trial", "5", cwd=project.root)
    assert wrong.code == 2 and "give --trial 1 to 4" in wrong.err
    alone = cli("inspect", "latest", "--trial", "2", cwd=project.root)
    assert alone.code == 2 and "give --case ID too" in alone.err
