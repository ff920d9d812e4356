"""What a case returns that the store cannot keep as it is errors that case only.

Before, one such case stopped the whole run with exit 5 ("cannot write to the store",
pointing at the disk): an output nested about 260 levels deep, a lone surrogate in an output
or in an exception's message; a 5,000-deep output said "Circular reference detected". Now
each is the case's error (`unstorable_output`), saying what cannot be stored and where, and
the run goes on (`unstorable_output` in docs/failures.md#error-kinds).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from failing_systems import FailingProject, case

BAD = {
    "c002": ("deep", "output.detail.next.next.next… nests deeper than the 255 levels"),
    "c003": ("surrogate", "output.note holds a lone surrogate \\ud800"),
    "c004": ("surrogate_message", "holds a lone surrogate \\ud800"),
    "c005": ("deep5000", "output.detail.next.next.next… nests deeper than the 255"),
    "c006": ("non_json", "output.when holds a value of type object, which JSON has no form"),
    "c007": ("deep_artifact", "artifact notes/v1 cannot be stored: notes/v1.next.next.next."),
    "c008": ("surrogate_trajectory", "holds a lone surrogate \\udfff"),
}


def _cases() -> list[dict[str, Any]]:
    cases = [case("c001")]
    for case_id, (do, _) in BAD.items():
        if do == "deep5000":
            cases.append(case(case_id, "deep", depth=5000))
        elif do == "deep_artifact":
            cases.append(case(case_id, do, depth=5000))
        else:
            cases.append(case(case_id, do))
    return cases + [case(f"c{i:03d}") for i in range(9, 13)]


@pytest.fixture(scope="module")
def unstorable(tmp_path_factory: pytest.TempPathFactory, cli: Any) -> tuple[FailingProject,
                                                                             Any]:
    project = FailingProject(tmp_path_factory.mktemp("unstorable") / "p").write(_cases())
    return project, cli("run", "--json", cwd=project.path, timeout=60)


def test_each_unstorable_case_errors_alone_and_the_run_completes(unstorable: Any) -> None:
    _, (code, out, err) = unstorable

    assert code == 3, err  # five answered cases cannot show a 50% floor
    document = json.loads(out)
    assert document["status"] == "complete"
    errors = {e["case"]: e for e in document["errors"]}
    assert set(errors) == set(BAD)
    for case_id, (_, says) in BAD.items():
        assert errors[case_id]["kind"] == "unstorable_output", errors[case_id]
        assert says in errors[case_id]["message"], errors[case_id]["message"]
    answers = document["metrics"][0]
    assert (answers["passed"], answers["missing"]) == (5, 7)


def test_an_exception_message_that_cannot_be_stored_is_kept_escaped(unstorable: Any,
                                                                    cli: Any) -> None:
    project, _ = unstorable

    code, out, err = cli("inspect", "latest", "--case", "c004", cwd=project.path)

    assert code == 0, err
    assert "RuntimeError: bad byte \\ud800 in the reply" in out
    assert "Traceback (most recent call last)" in out


def test_the_run_s_reports_read_it_and_the_next_run_retries_only_those(
        unstorable: Any, cli: Any, tmp_path: Path) -> None:
    project, _ = unstorable

    code, _, err = cli("report", "latest", "--html", str(tmp_path / "r.html"),
                       cwd=project.path)
    assert code == 0, err
    project.forget_calls()
    code, out, err = cli("run", "--json", cwd=project.path, timeout=60)

    assert code == 3, err
    assert {c for _, c, _, _ in project.calls()} == set(BAD)
    assert json.loads(out)["cache"]["execution"] == {"hit": 5, "miss": 7}


def test_a_judgment_whose_details_cannot_be_stored_errors_its_case(tmp_path: Path,
                                                                   cli: Any) -> None:
    """An answer the store keeps, one level too deep once exact_match keeps it as `recorded`
    in its details (the coordinator raised before: exit 5)."""
    project = FailingProject(tmp_path / "p").write([case("c001"), case("c002", "deep_answer")])

    code, out, err = cli("run", "--json", cwd=project.path, timeout=60)

    assert code == 3, err
    (error,) = json.loads(out)["errors"]
    assert (error["case"], error["kind"]) == ("c002", "unstorable_output")
    assert error["message"].startswith(
        "the judgment of answer_correct cannot be stored: judgments.answer_correct[2]."
        "recorded.next… nests deeper than the 255 levels")


def test_a_replay_that_cannot_be_stored_is_a_failed_replay(tmp_path: Path, cli: Any) -> None:
    project = FailingProject(tmp_path / "p", "app:desk")
    project.suite["evaluators"] = [{"type": "fault_recovery", "tool": "refund",
                                    "fault": "error", "escalate_tools": ["escalate"]}]
    project.policy["rules"] = []
    project.write([case("c001"), case("c002", "replay_surrogate")])

    code, out, err = cli("run", "--json", cwd=project.path, timeout=60)

    assert code == 0, err
    (recovers,) = json.loads(out)["metrics"]
    assert (recovers["passed"], recovers["missing"]) == (1, 1)
    code, out, _ = cli("inspect", "latest", "--case", "c002", "--json", cwd=project.path)
    (criterion,) = json.loads(out)["criteria"]
    assert (criterion["verdict"], criterion["reason"]) == ("missing", "replay_failed")
    message = criterion["details"]["message"]
    assert message.startswith("the replay cannot be stored: replay.control.steps[2].result")
    assert "holds a lone surrogate \\ud800" in message
