"""People's labels of a judge criterion (docs/judges.md#labelling): `labels sample`, `labels
review`, labels re-used where a later run shows the same text, and what the criterion reports
and decides with them."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from judged_project import (  # noqa: F401 - the fixtures `judged` and `server`
    JudgedProject,
    desk_cases,
    judged_fixture,
    label_all,
    server_fixture,
    with_labels_file,
)

from oloproof.suite.judge_labels import read_labels_file

LIES = {2, 5, 9, 14, 17, 21}


@pytest.fixture
def project(judged: JudgedProject) -> JudgedProject:
    return with_labels_file(judged, desk_cases(24, lies=LIES), minimum_agreement=0.7)


def _run_json(cli: Callable[..., Any], root: Path, *args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = cli("run", "--json", *args, cwd=root)
    assert code in (0, 1, 3, 4), (out, err)
    return code, json.loads(out)


def test_sample_review_run(cli: Callable[..., Any], project: JudgedProject) -> None:
    code, document = _run_json(cli, project.root)
    row = document["metrics"][0]
    assert row["judge"]["status"] == "uncalibrated" and row["method"] == "clopper_pearson"
    assert "does not exist yet" in row["judge"]["why"]
    assert document["decisions"][0]["reasons"] == ["judge_not_checked"] and code == 3
    assert any("labels sample --criterion reply_truthful" in w for w in document["warnings"])

    code, out, err = cli("labels", "sample", "--criterion", "reply_truthful", "--n", "16",
                         "--seed", "11", "-o", "labels/truthful.jsonl", cwd=project.root)
    assert code == 0, err
    assert "Sampled 16 of 24 cases" in out
    path = project.root / "labels" / "truthful.jsonl"
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])["sample"]
    assert (first["seed"], first["n"], first["cases"]) == (11, 16, 24)
    assert first["suite"].startswith("sha256:")
    rows = read_labels_file(path).rows
    assert len(rows) == 16 and all(r.label is None for r in rows)
    assert set(rows[0].shown) == {"input.message", "output.answer", "trajectory.tool_results"}
    text = path.read_text(encoding="utf-8")
    assert '"verdict"' not in text and "scripted" not in text and "house rule" not in text

    # nine labelled: still not enough to check the judge
    labels = read_labels_file(path)
    for row in labels.rows[:9]:
        row.label = "pass"
    path.write_text(labels.text(), encoding="utf-8")
    _, document = _run_json(cli, project.root)
    assert document["metrics"][0]["judge"]["status"] == "uncalibrated"
    assert "9 labelled sampled case(s)" in document["metrics"][0]["judge"]["why"]

    label_all(path)
    code, document = _run_json(cli, project.root)
    row = document["metrics"][0]
    judge = row["judge"]
    assert judge["status"] == "checked" and judge["labelled"] == 16
    assert judge["agreement"] == 1.0 and judge["judge_only"] == judge["person_only"] == 0
    assert row["method"] == "stratified_by_verdict" and judge["correction"] == "judge"
    assert row["estimate"] == pytest.approx(18 / 24)  # a correct judge: no correction
    # 16 labels of 24 cases leave doubt the judge's own interval does not have, and the
    # corrected interval is never more than 1.05× the labels' own
    assert row["lower"] < judge["raw_lower"]
    assert (row["lower"], row["upper"]) == (judge["corrected_lower"], judge["corrected_upper"])
    people = judge["people_upper"] - judge["people_lower"]
    assert row["upper"] - row["lower"] <= 1.05 * people
    assert judge["width_saved"] == pytest.approx(people - (row["upper"] - row["lower"]))
    assert document["cache"]["execution"]["miss"] == 0  # labels decide; nothing ran again


def test_a_lenient_judge_is_corrected_and_a_bad_one_sent_to_review(
        cli: Callable[..., Any], project: JudgedProject) -> None:
    (project.root / "lenient.py").write_text(
        "def grade(request):\n"
        "    # passes every reply: it never reads the tool results\n"
        "    return {'verdict': 'pass', 'reason': 'sounds fine'}\n", encoding="utf-8")
    project.suite["judges"] = [{"name": "house", "callable": "lenient:grade"}]
    project.write()
    _run_json(cli, project.root)
    cli("labels", "sample", "--criterion", "reply_truthful", "--n", "20", "--seed", "3",
        "-o", "labels/truthful.jsonl", cwd=project.root)
    path = project.root / "labels" / "truthful.jsonl"
    label_all(path)
    code, document = _run_json(cli, project.root)
    row, judge = document["metrics"][0], document["metrics"][0]["judge"]
    assert judge["raw_estimate"] == 1.0
    assert row["estimate"] < judge["raw_estimate"]  # corrected down by people's fails
    assert judge["judge_only"] > 0 and judge["person_only"] == 0 and judge["both_fail"] == 0
    assert judge["agreement_lower"] < 0.7
    assert document["decisions"][0]["state"] == "MANUAL_REVIEW"
    assert document["decisions"][0]["reasons"] == ["judge_disagrees_with_people"]
    assert code == 4
    # gate re-decides the stored run on the labels it used
    code, out, _ = cli("gate", "latest", "--json", cwd=project.root)
    assert code == 4 and json.loads(out)["decisions"] == document["decisions"]


def test_a_labels_file_gets_its_missing_folders(cli: Callable[..., Any],
                                                project: JudgedProject) -> None:
    # -o makes the folders it needs, as every output file does (docs/ci.md#output-files).
    assert cli("run", cwd=project.root).code == 3
    code, _, err = cli("labels", "sample", "--criterion", "reply_truthful", "--n", "4",
                       "--seed", "2", "-o", "labels/new/deeper/truthful.jsonl",
                       cwd=project.root)
    assert code == 0, err
    assert len(read_labels_file(project.root / "labels/new/deeper/truthful.jsonl").rows) == 4


def test_labels_of_unchanged_text_are_reused(cli: Callable[..., Any],
                                             project: JudgedProject) -> None:
    _run_json(cli, project.root)
    cli("labels", "sample", "--criterion", "reply_truthful", "--n", "16", "--seed", "11",
        "-o", "labels/truthful.jsonl", cwd=project.root)
    path = project.root / "labels" / "truthful.jsonl"
    label_all(path)
    drawn = [r.case for r in read_labels_file(path).rows]
    # two sampled requests change, and their replies with them; the others read the same
    changed = set(drawn[:2])
    cases = desk_cases(24, lies=LIES)
    for case in cases:
        if case["id"] in changed:
            case["input"]["tail"] = " Anything else?"
    project.write_cases(cases)
    _, document = _run_json(cli, project.root)
    judge = document["metrics"][0]["judge"]
    assert judge["labelled"] == 14 and judge["sampled"] == 16
    code, out, _ = cli("labels", "sample", "--criterion", "reply_truthful", "-o",
                       "labels/truthful.jsonl", cwd=project.root)
    assert code == 0
    assert "2 sampled case(s)" in out and "14 unchanged" in out
    listed = {line.strip() for line in out.splitlines()[1:]}
    assert listed == changed
    rows = read_labels_file(path).rows
    assert len(rows) == 18 and sum(r.label is None for r in rows) == 2
    # the same seed again: nothing new
    code, out, _ = cli("labels", "sample", "--criterion", "reply_truthful", "--seed", "11",
                       "-o", "labels/truthful.jsonl", cwd=project.root)
    assert code == 0 and "No sampled case" in out
    # another seed into a file that holds this sample would replace people's labels
    code, _, err = cli("labels", "sample", "--criterion", "reply_truthful", "--seed", "12",
                       "-o", "labels/truthful.jsonl", cwd=project.root)
    assert code == 2 and "seed 11" in err


def test_review_from_standard_input_saves_after_every_key(cli: Callable[..., Any],
                                                          project: JudgedProject) -> None:
    _run_json(cli, project.root)
    cli("labels", "sample", "--criterion", "reply_truthful", "--n", "6", "--seed", "1",
        "-o", "labels/truthful.jsonl", cwd=project.root)
    path = project.root / "labels" / "truthful.jsonl"
    done = subprocess.run(
        [os.environ.get("OLOPROOF_PYTHON", str(Path(__file__).parents[2] / ".venv" / "bin" /
                                                "python")), "-m", "oloproof.cli.main",
         "labels", "review", str(path)],
        input="p f\ns x p\nq", capture_output=True, text=True, cwd=project.root, timeout=60,
        check=False)
    assert done.returncode == 0, done.stderr
    assert "Labelled 3, skipped 1; 3 left unlabelled" in done.stdout
    assert "'x' is not a key here" in done.stdout
    assert "scripted" not in done.stdout and "house rule" not in done.stdout
    assert [r.label for r in read_labels_file(path).rows] == ["pass", "fail", None, "pass",
                                                               None, None]


def test_review_on_a_terminal_key_by_key(project: JudgedProject,
                                          cli: Callable[..., Any]) -> None:
    """A pseudo-terminal: keys are read as pressed (no Enter), and the file holds each label
    as soon as its key is pressed — even when the review is then killed."""
    _run_json(cli, project.root)
    cli("labels", "sample", "--criterion", "reply_truthful", "--n", "4", "--seed", "2",
        "-o", "labels/truthful.jsonl", cwd=project.root)
    path = project.root / "labels" / "truthful.jsonl"
    python = str(Path(__file__).parents[2] / ".venv" / "bin" / "python")
    leader, follower = pty.openpty()
    process = subprocess.Popen([python, "-m", "oloproof.cli.main", "labels", "review",
                                str(path)], stdin=follower, stdout=follower, stderr=follower,
                               cwd=project.root, start_new_session=True)
    os.close(follower)
    try:
        seen = b""

        def wait_for(text: bytes, timeout: float = 30.0) -> None:
            nonlocal seen
            deadline = time.monotonic() + timeout
            while text not in seen:
                ready, _, _ = select.select([leader], [], [], max(0.0, deadline -
                                                                   time.monotonic()))
                assert ready, (text, seen[-400:])
                seen += os.read(leader, 4096)

        wait_for(b"uit > ")
        os.write(leader, b"f")
        wait_for(b"2 of 4")
        deadline = time.monotonic() + 10
        while read_labels_file(path).rows[0].label != "fail":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        wait_for(b"uit > ")
        os.write(leader, b"p")
        wait_for(b"3 of 4")
        process.kill()  # no quit: what was labelled is already saved
        process.wait(timeout=10)
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
    assert [r.label for r in read_labels_file(path).rows] == ["fail", "pass", None, None]


def test_trials_judge_every_trial(cli: Callable[..., Any], project: JudgedProject) -> None:
    project.suite["trials"] = 2
    project.write()
    _, document = _run_json(cli, project.root)
    row = document["metrics"][0]
    assert row["observed"] == 48 and row["trials"] == 2
    cli("labels", "sample", "--criterion", "reply_truthful", "--n", "12", "--seed", "5",
        "-o", "labels/truthful.jsonl", cwd=project.root)
    path = project.root / "labels" / "truthful.jsonl"
    rows = read_labels_file(path).rows
    # the desk answers alike in both trials: one row per sampled case and text
    assert len(rows) == 12
    label_all(path)
    _, document = _run_json(cli, project.root)
    judge = document["metrics"][0]["judge"]
    assert judge["status"] == "checked" and judge["labelled"] == 24  # every trial counted
    # every case's trials agree alike: the exact interval over the 12 cases
    assert judge["agreement_method"] == "clopper_pearson"
    assert judge["agreement_lower"] == pytest.approx(0.7354, abs=1e-4)
    # the rate as people would judge it is over the cases too, the labels' own beside it
    row = document["metrics"][0]
    assert row["method"] == "stratified_by_verdict"
    assert judge["people_method"] == "clopper_pearson"  # each case's trials agree: 0 or 1
    assert row["upper"] - row["lower"] <= 1.05 * (judge["people_upper"] - judge["people_lower"])


def test_sample_says_when_its_labels_could_never_count(cli: Callable[..., Any],
                                                       project: JudgedProject) -> None:
    """A sample too small to ever check the judge, and a file the criterion does not read:
    `labels sample` says so before anyone spends time labelling it."""
    _run_json(cli, project.root)
    code, out, err = cli("labels", "sample", "--criterion", "reply_truthful", "--n", "6",
                         "--seed", "1", "-o", "labels/truthful.jsonl", cwd=project.root)
    assert code == 0 and "Sampled 6 of 24" in out
    assert "a sample of 6 leaves reply_truthful uncalibrated however it is labelled" in err
    assert "reads its labels" not in err
    code, out, err = cli("labels", "sample", "--criterion", "reply_truthful", "--n", "12",
                         "--seed", "1", "-o", "labels/mine.jsonl", cwd=project.root)
    assert code == 0 and "uncalibrated" not in err
    assert "reply_truthful reads its labels from labels/truthful.jsonl, not " \
        "labels/mine.jsonl" in " ".join(err.split())
    del project.suite["evaluators"][0]["labels"]
    project.write()
    _run_json(cli, project.root)
    code, _, err = cli("labels", "sample", "--criterion", "reply_truthful", "--n", "12",
                       "--seed", "1", "-o", "labels/third.jsonl", cwd=project.root)
    assert code == 0
    assert "give the criterion `labels: labels/third.jsonl`" in " ".join(err.split())


def test_sample_labels_from_python_writes_the_sample_and_adds_only_new_text(
        cli: Callable[..., Any], project: JudgedProject) -> None:
    import oloproof

    _run_json(cli, project.root)
    config = str(project.root / "oloproof.yaml")
    path = project.root / "labels" / "truthful.jsonl"

    made = oloproof.sample_labels("reply_truthful", path, config=config, n=12, seed=5)

    assert not made.extended and len(made.added) == 12 and made.kept == 0
    assert made.labels.sample["seed"] == 5 and made.labels.sample["cases"] == 24
    assert path.read_text(encoding="utf-8") == made.labels.text()  # written as returned
    again = oloproof.sample_labels("reply_truthful", path, config=config)
    assert again.extended and again.added == [] and again.kept == 12
    with pytest.raises(oloproof.UsageError, match="seed 5"):
        oloproof.sample_labels("reply_truthful", path, config=config, seed=6)
    with pytest.raises(oloproof.UsageError, match="not a judge criterion"):
        oloproof.sample_labels("answer", project.root / "labels" / "other.jsonl",
                               config=config, n=3)
    assert not (project.root / "labels" / "other.jsonl").exists()
