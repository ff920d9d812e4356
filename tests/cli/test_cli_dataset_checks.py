"""A suite's files are read as they are written, or refused before any system call.

Each mistake below used to be read as something else, or to stop a run half-way: a JSON case
line with a key given twice (the last `id` won silently); a line with a lone surrogate escape
or nested ~260 levels deep (read, then exit 5 when the store could not keep it; 5,000 levels
said "Circular reference detected"); a line that is not UTF-8 (named by its place in the
file's read buffer, not its line); `dataset: /dev/zero` or a directory ("file not found");
a `$ref` state outside the project folder (read, stored and shown by `inspect`); a duplicate
rule id (reported at line 1); `execution.ray:` with the local executor (ignored). Each is now
exit 2 before anything runs, naming the file and line (see
docs/configuration.md#how-oloproof-fails-closed).
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest


@pytest.fixture
def project(marked_starter: Path) -> Path:
    return marked_starter


def _cases(project: Path) -> list[str]:
    return (project / "data" / "cases.jsonl").read_text(encoding="utf-8").splitlines()


def _set_line(project: Path, number: int, text: str) -> None:
    lines = _cases(project)
    lines[number - 1] = text
    (project / "data" / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _with_input(project: Path, number: int, value_text: str) -> None:
    """Line `number` with `input.x` set to the JSON text `value_text`, as written."""
    case = json.loads(_cases(project)[number - 1])
    case["input"]["x"] = "@@"
    _set_line(project, number, json.dumps(case).replace('"@@"', value_text))


def _refused(cli, project: Path, where: str, *words: str) -> str:
    """`oloproof run` exits 2 with one paragraph naming `where`, before any call or store."""
    code, out, err = cli("run", cwd=project)
    assert code == 2, (out, err)
    assert "Traceback" not in err + out
    message = err.strip()
    assert message.startswith("Configuration error:") and "\n" not in message, message
    assert where in message, message
    for word in words:
        assert word in message, message
    assert not (project / "calls.log").exists(), "the system was called"
    store = project / ".oloproof" / "store.sqlite"
    if store.exists():
        with sqlite3.connect(store) as db:
            assert db.execute("SELECT count(*) FROM runs").fetchone() == (0,), "a run stored"
    code, out, err = cli("run", "--json", cwd=project)
    assert code == 2 and err == ""
    assert json.loads(out)["error"]["kind"] == "configuration"
    return message


# ---- JSON case lines: a key given twice ----------------------------------------------------------

def test_a_case_line_giving_its_id_twice_is_refused_naming_both_places(cli, project):
    line = _cases(project)[2]
    assert line.startswith('{"id": "req-003", ')
    _set_line(project, 3, line.replace('{"id": "req-003", ', '{"id": "req-003", "id": "x", ', 1))

    _refused(cli, project, "data/cases.jsonl:3:",
             'the line gives the key "id" twice in one object (at columns 2 and 19)',
             "JSON readers would keep only the last one")


def test_a_key_given_twice_inside_input_is_refused_too(cli, project):
    case = json.loads(_cases(project)[4])
    text = json.dumps(case).replace('"message": ', '"order_id": "ord-999", "message": ', 1)
    _set_line(project, 5, text)

    _refused(cli, project, "data/cases.jsonl:5:", 'gives the key "order_id" twice in one object')


def test_the_same_key_in_two_objects_and_colons_in_text_are_fine(cli, project):
    case = json.loads(_cases(project)[0])
    case["metadata"]["message"] = "at 12:30: refunds\u003a"  # `message` is also an input key
    _set_line(project, 1, json.dumps(case).replace("refunds:", "refunds\\u003a"))

    code, out, err = cli("run", cwd=project)

    assert code == 0, (out, err)


# ---- JSON case lines the store cannot keep -------------------------------------------------------

@pytest.mark.parametrize(("value", "says"), [
    ('"\\ud800"', "input.x holds a lone surrogate \\ud800 (half of a UTF-16 pair"),
    ('["ok", "\\udc00 then text"]', "input.x[1] holds a lone surrogate \\udc00"),
    ("[" * 260 + "]" * 260, "input.x[0][0][0]… nests deeper than the 255 levels of arrays and "
     "objects the store keeps"),
    ("[" * 5000 + "]" * 5000, "nests deeper than the 255 levels"),
    ("NaN", "input.x holds NaN, which JSON has no form for"),
    ("1e999", "input.x holds Infinity"),
], ids=["lone surrogate", "lone surrogate in a list", "260 deep", "5000 deep", "NaN", "1e999"])
def test_a_line_the_store_cannot_keep_is_exit_2_naming_the_line(cli, project, value, says):
    _with_input(project, 7, value)

    _refused(cli, project, "data/cases.jsonl:7: the line cannot be stored as written: ", says)


def test_a_line_that_is_not_utf8_is_named_with_its_byte(cli, project):
    """Before: `dataset is not UTF-8 text: 'utf-8' codec can't decode byte 0xe9 in position
    7500` -- a position in the file's buffer, and no line."""
    raw = (project / "data" / "cases.jsonl").read_bytes().split(b"\n")
    assert raw[21].startswith(b'{"id": "req-022", "input": {"order_id": "ord-')
    raw[21] = raw[21].replace(b'"input": {', b'"input": {"note": "caf\xe9", ', 1)  # Latin-1
    (project / "data" / "cases.jsonl").write_bytes(b"\n".join(raw))

    _refused(cli, project, "data/cases.jsonl:22: the dataset is not UTF-8 text: byte 41 of "
             "this line (0xe9) is not part of a UTF-8 character (invalid continuation byte); "
             "save the dataset as UTF-8")


def test_a_line_nested_as_deep_as_the_store_keeps_runs(cli, project):
    _with_input(project, 7, "[" * 250 + "]" * 250)  # deeper than the fast parser reads

    code, out, err = cli("run", "--json", cwd=project)

    assert code == 0, (out, err)
    assert json.loads(out)["cases"] == 33


# ---- the dataset path ----------------------------------------------------------------------------

def _point_dataset_at(project: Path, target: str) -> None:
    suite = project / "oloproof.yaml"
    suite.write_text(suite.read_text(encoding="utf-8").replace(
        "dataset: data/cases.jsonl", f"dataset: {target}"), encoding="utf-8")


def test_a_dataset_that_is_a_directory_says_so(cli, project):
    _point_dataset_at(project, "data")

    _refused(cli, project, "oloproof.yaml:4:", "dataset 'data' is a directory",
             "`dataset:` names a JSON Lines file")


def test_a_dataset_that_is_a_fifo_says_so_and_is_never_opened(cli, project):
    os.mkfifo(project / "data" / "pipe.jsonl")  # opening it to read would wait for a writer
    _point_dataset_at(project, "data/pipe.jsonl")

    _refused(cli, project, "oloproof.yaml:4:",
             "dataset 'data/pipe.jsonl' is a named pipe (FIFO), not a regular file")


def test_a_dataset_that_is_a_socket_says_so(cli, project):
    import socket

    with socket.socket(socket.AF_UNIX) as listening:  # (a path no longer than sun_path's 108)
        here = Path.cwd()
        os.chdir(project / "data")
        try:
            listening.bind("sock.jsonl")
        finally:
            os.chdir(here)
        _point_dataset_at(project, "data/sock.jsonl")

        _refused(cli, project, "oloproof.yaml:4:",
                 "dataset 'data/sock.jsonl' is a socket, not a regular file")


@pytest.mark.parametrize(("mode", "says"), [
    (stat.S_IFCHR | 0o666, "is a character device, not a regular file"),
    (stat.S_IFBLK | 0o660, "is a block device, not a regular file"),
])
def test_a_device_is_named_as_one_without_opening_it(tmp_path, monkeypatch, mode, says):
    """`dataset: /dev/zero` said "file not found" (and reading it would never end). Tested on
    a file whose stat() answers as a device would: no test points at a real device node."""
    from oloproof.errors import ConfigError
    from oloproof.suite.dataset import scan_dataset
    from oloproof.suite.json_lines import file_problem
    from oloproof.suite.state_files import StateFiles

    fake = tmp_path / "zero"
    fake.write_text("", encoding="utf-8")
    real_stat = Path.stat

    def stat_of(path, *args, **kwargs):
        found = real_stat(path, *args, **kwargs)
        if path == fake:
            return os.stat_result((mode, *tuple(found)[1:]))
        return found

    monkeypatch.setattr(Path, "stat", stat_of)

    assert file_problem(fake) == says
    with pytest.raises(ConfigError, match=f"the dataset {says}"):
        scan_dataset(fake, StateFiles(tmp_path))


def test_a_missing_dataset_still_says_it_does_not_exist(cli, project):
    _point_dataset_at(project, "data/missing.jsonl")

    _refused(cli, project, "oloproof.yaml:4:", "dataset 'data/missing.jsonl' does not exist")


# ---- $ref states stay inside the project ---------------------------------------------------------

def _ref_state(project: Path, number: int, ref: str) -> None:
    case = json.loads(_cases(project)[number - 1])
    case["initial_state"] = {"$ref": ref}
    _set_line(project, number, json.dumps(case))


@pytest.fixture
def outside(project: Path) -> Path:
    """A state file beside the project folder, not in it."""
    path = project.parent / "secret.json"
    path.write_text('{"password": "hunter2"}', encoding="utf-8")
    return path


@pytest.mark.parametrize("how", ["relative", "absolute", "through a link"])
def test_a_ref_outside_the_project_folder_is_refused_naming_the_case(cli, project, outside,
                                                                      how):
    if how == "relative":
        ref = "../../secret.json"  # relative to data/
    elif how == "absolute":
        ref = str(outside)
    else:
        (project / "states").mkdir()
        (project / "states" / "airline.json").symlink_to(outside)
        ref = "../states/airline.json"
    _ref_state(project, 4, ref)

    message = _refused(cli, project, "data/cases.jsonl:4, case 'req-004':",
                       f"initial_state refers to {ref!r}", "outside the project folder")
    assert "hunter2" not in message


def test_a_ref_inside_the_project_folder_runs(cli, project):
    (project / "states").mkdir()
    (project / "states" / "desk.json").write_text('{"open": 1}', encoding="utf-8")
    _ref_state(project, 4, "../states/desk.json")

    code, out, err = cli("run", cwd=project)

    assert code == 0, (out, err)


def test_a_ref_to_a_directory_or_with_a_key_twice_is_refused(cli, project):
    (project / "states").mkdir()
    _ref_state(project, 4, "../states")
    _refused(cli, project, "data/cases.jsonl:4, case 'req-004':",
             "initial_state refers to '../states', which is a directory")

    (project / "states" / "desk.json").write_text('{\n  "open": 1,\n  "open": 2\n}\n',
                                                  encoding="utf-8")
    _ref_state(project, 4, "../states/desk.json")
    _refused(cli, project, "data/cases.jsonl:4, case 'req-004':",
             "initial_state file '../states/desk.json' gives the key \"open\" twice in one "
             "object (on lines 2 and 3)")


# ---- the policy and the suite file ---------------------------------------------------------------

def test_a_rule_id_given_twice_is_reported_at_the_second_rule(cli, project):
    (project / "release.yaml").write_text(
        "version: 1\nrules:\n"
        "  - {id: answers, metric: answer_correct, min: 0.85}\n"
        "  - {id: short, metric: steps_p50, max: 8}\n"
        "  - id: answers\n"
        "    metric: agent_tool_sequence\n"
        "    min: 0.5\n", encoding="utf-8")

    _refused(cli, project, "release.yaml:5:",
             "rule id 'answers' is used twice (first on line 3); give each rule its own id")


@pytest.mark.parametrize("executor", ["local", "processes", None])
def test_ray_settings_with_another_executor_are_refused(cli, project, executor):
    suite = project / "oloproof.yaml"
    lines = ["execution:"] + ([f"  executor: {executor}"] if executor else []) + \
        ["  ray: {address: auto}"]
    text = suite.read_text(encoding="utf-8")
    suite.write_text(text + "\n".join(lines) + "\n", encoding="utf-8")
    ray_line = len(text.splitlines()) + len(lines)

    _refused(cli, project, f"oloproof.yaml:{ray_line}: execution.ray: only applies to "
             f"`executor: ray`, and this suite's executor is {executor or 'local'}",
             "write `executor: ray` under execution:", "or remove `ray:`")
