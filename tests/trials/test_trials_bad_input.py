"""Bad trial configuration is a configuration error (exit 2) naming the file and the key, before
anything runs (docs/configuration.md#how-oloproof-fails-closed)."""

from __future__ import annotations

import json

import pytest


def _error(cli, project, *args):
    result = cli("run", "--json", *args, cwd=project.root)
    assert result.code == 2, result
    error = json.loads(result.out)["error"]
    assert error["kind"] == "configuration"
    assert error["file"].endswith("oloproof.yaml")
    assert project.calls() == [], "nothing ran"
    return error


def _line_of(project, needle):
    lines = (project.root / "oloproof.yaml").read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if needle in text)


@pytest.fixture
def project(trial_project):
    trial_project.cases({"A": "PP", "B": "PF"})
    return trial_project


def test_trials_zero_names_the_key(cli, project):
    project.suite["trials"] = 0
    project.write()

    error = _error(cli, project)

    assert error["message"].startswith("trials:")
    assert "must be at least 1 (got 0)" in error["message"]
    assert error["line"] == _line_of(project, "trials: 0")


def test_trials_not_a_number_names_the_key(cli, project):
    project.suite["trials"] = "many"
    project.write()

    assert _error(cli, project)["message"].startswith("trials:")


@pytest.mark.parametrize("metric_type", ["pass_hat_k", "pass_at_k"])
def test_k_above_trials_says_what_to_change(cli, project, metric_type):
    project.suite["trials"] = 3
    project.suite["metrics"] = [{"id": "m", "type": metric_type,
                                 "criterion": "answer_correct", "k": 5}]
    project.write()

    error = _error(cli, project)

    assert "k: 5" in error["message"] and "trials: 3" in error["message"]
    assert "at most trials" in error["message"]
    assert error["line"] == _line_of(project, "k: 5")


def test_k_above_the_trials_asked_on_the_command_line_says_so(cli, project):
    project.suite["metrics"] = [{"id": "m", "type": "pass_hat_k",
                                 "criterion": "answer_correct", "k": 4}]
    project.write()

    error = _error(cli, project, "--trials", "2")

    assert "2 trial(s) (--trials)" in error["message"]


@pytest.mark.parametrize("k", [0, -1])
def test_k_below_one_names_the_key(cli, project, k):
    project.suite["metrics"] = [{"id": "m", "type": "pass_at_k",
                                 "criterion": "answer_correct", "k": k}]
    project.write()

    error = _error(cli, project)

    assert error["message"].startswith("metrics[0].k:")
    assert error["line"] == _line_of(project, f"k: {k}")


def test_a_criterion_no_evaluator_produces_lists_those_that_exist(cli, project):
    project.suite["evaluators"].append({"type": "contains", "criterion": "polite",
                                        "field": "answer", "expected_field": "answer"})
    project.suite["metrics"] = [{"id": "m", "type": "pass_hat_k", "criterion": "answr",
                                 "k": 2}]
    project.write()

    error = _error(cli, project)

    assert "'answr'" in error["message"]
    assert "criteria in this suite: answer_correct, polite" in error["message"]
    assert error["line"] == _line_of(project, "criterion: answr")


def test_an_unknown_metric_type_lists_the_types(cli, project):
    project.suite["metrics"] = [{"id": "m", "type": "pass_hat", "criterion": "answer_correct",
                                 "k": 2}]
    project.write()

    error = _error(cli, project)

    assert "quantile, pass_hat_k, pass_at_k" in error["message"]


def test_trials_zero_on_the_command_line_is_a_usage_error(cli, project):
    result = cli("run", "--trials", "0", cwd=project.root)

    assert result.code == 2
    assert "--trials" in result.err
    assert project.calls() == []


def test_trials_zero_from_python_is_a_configuration_error(project):
    import oloproof

    with pytest.raises(oloproof.ConfigError, match="trials=0"):
        oloproof.run(project.config, trials=0)
    assert project.calls() == []


def test_an_observed_count_rule_on_a_fractional_pass_hat_k_is_refused(cli, project):
    project.suite["metrics"] = [{"id": "hat2", "type": "pass_hat_k",
                                 "criterion": "answer_correct", "k": 2}]
    project.policy["rules"] = [{"id": "count", "metric": "hat2", "kind": "observed_count",
                                "max_failures": 0}]
    project.write()

    result = cli("run", "--json", cwd=project.root)

    assert result.code == 2
    error = json.loads(result.out)["error"]
    assert error["file"].endswith("release.yaml") and "fractions" in error["message"]
