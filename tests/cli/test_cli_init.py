"""`oloproof init` never overwrites a file (docs/configuration.md#how-oloproof-fails-closed).

Into a directory that holds any file the project would write, init stops with exit 2, names the
files and writes nothing; `--force` replaces them and lists what it replaced. It writes a
`.gitignore` holding `.oloproof/`; an existing `.gitignore` keeps its lines (with `--force` the
store's line is appended when it is missing).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

STARTER_FILES = ["README.md", "app.py", "data/cases.jsonl", "oloproof.yaml", "release.yaml"]


def _snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` (but .git) with its bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts}


def test_init_into_an_empty_directory_writes_the_project_and_a_gitignore(cli, tmp_path):
    code, out, err = cli("init", "desk", cwd=tmp_path)

    assert code == 0, err
    files = _snapshot(tmp_path / "desk")
    assert sorted(files) == sorted([*STARTER_FILES, ".gitignore"])
    assert files[".gitignore"] == b".oloproof/\n"
    assert "Replaced" not in out
    # The project it wrote passes its own gate, and the store it makes is ignored by Git.
    assert cli("run", cwd=tmp_path / "desk").code == 0


def test_init_in_a_git_repository_with_a_readme_stops_and_names_it(cli, tmp_path):
    """The issue's reproduction: a repository whose README.md init used to overwrite."""
    repo = tmp_path / "r"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "README.md").write_text("# mine\n", encoding="utf-8")
    before = _snapshot(repo)

    code, out, err = cli("init", cwd=repo)

    assert code == 2
    assert out == ""
    message = err.strip()
    assert "\n" not in message, "one paragraph"
    assert "README.md" in message and "--force" in message and "nothing was written" in message
    assert "Traceback" not in err
    assert _snapshot(repo) == before, "nothing was written"


def test_every_file_in_the_way_is_named(cli, tmp_path):
    target = tmp_path / "busy"
    (target / "data").mkdir(parents=True)
    for name in ("app.py", "data/cases.jsonl", "release.yaml"):
        (target / name).write_text("mine\n", encoding="utf-8")
    before = _snapshot(target)

    code, _, err = cli("init", "busy", cwd=tmp_path)

    assert code == 2
    for name in ("app.py", "data/cases.jsonl", "release.yaml"):
        assert name in err
    for name in ("README.md", "oloproof.yaml"):
        assert name not in err.split(":", 1)[1].split(";")[0], "only what is in the way"
    assert _snapshot(target) == before


def test_force_replaces_and_lists_what_it_replaced(cli, tmp_path):
    target = tmp_path / "busy"
    target.mkdir()
    (target / "README.md").write_text("# mine\n", encoding="utf-8")
    (target / "notes.txt").write_text("keep me\n", encoding="utf-8")

    code, out, err = cli("init", "--force", "busy", cwd=tmp_path)

    assert code == 0, err
    assert "Replaced (--force): README.md" in out
    assert "app.py" not in out.split("Replaced (--force):")[1].splitlines()[0]
    assert (target / "README.md").read_text(encoding="utf-8") != "# mine\n"
    assert (target / "notes.txt").read_text(encoding="utf-8") == "keep me\n"


def test_an_existing_gitignore_is_never_replaced(cli, tmp_path):
    target = tmp_path / "repo"
    target.mkdir()
    (target / ".gitignore").write_text("*.pyc\n", encoding="utf-8")

    code, _, err = cli("init", "repo", cwd=tmp_path)

    assert code == 2
    assert ".gitignore" in err and ".oloproof/" in err
    assert (target / ".gitignore").read_text(encoding="utf-8") == "*.pyc\n"
    assert not (target / "app.py").exists()

    code, out, err = cli("init", "--force", "repo", cwd=tmp_path)

    assert code == 0, err
    assert (target / ".gitignore").read_text(encoding="utf-8") == "*.pyc\n.oloproof/\n"
    assert ".gitignore (appended .oloproof/)" in out


def test_a_gitignore_that_already_ignores_the_store_is_left_alone(cli, tmp_path):
    target = tmp_path / "repo"
    target.mkdir()
    (target / ".gitignore").write_text("build/\n/.oloproof\n", encoding="utf-8")

    code, _, err = cli("init", "repo", cwd=tmp_path)

    assert code == 0, err
    assert (target / ".gitignore").read_text(encoding="utf-8") == "build/\n/.oloproof\n"


def test_an_example_is_not_copied_over_a_file_either(cli, tmp_path):
    target = tmp_path / "desk"
    target.mkdir()
    (target / "oloproof.yaml").write_text("version: 1\n", encoding="utf-8")

    code, _, err = cli("init", "--example", "support_agent", "desk", cwd=tmp_path)

    assert code == 2
    assert "oloproof.yaml" in err
    assert (target / "oloproof.yaml").read_text(encoding="utf-8") == "version: 1\n"
    assert sorted(os.listdir(target)) == ["oloproof.yaml"]

    code, out, err = cli("init", "--example", "support_agent", "--force", "desk", cwd=tmp_path)

    assert code == 0, err
    assert "Replaced (--force): oloproof.yaml" in out
    assert cli("run", cwd=target).code in (0, 1, 3, 4)  # the example's own gate, not an error


def test_a_directory_where_a_file_goes_is_never_removed_even_with_force(cli, tmp_path):
    target = tmp_path / "odd"
    (target / "app.py").mkdir(parents=True)
    (target / "app.py" / "mine.txt").write_text("mine\n", encoding="utf-8")

    code, _, err = cli("init", "--force", "odd", cwd=tmp_path)

    assert code == 2
    assert "app.py (a directory where init writes a file)" in err
    assert (target / "app.py" / "mine.txt").read_text(encoding="utf-8") == "mine\n"
    assert sorted(os.listdir(target)) == ["app.py"]


def test_a_file_where_a_directory_goes_stops_init(cli, tmp_path):
    target = tmp_path / "odd"
    target.mkdir()
    (target / "data").write_text("not a directory\n", encoding="utf-8")

    code, _, err = cli("init", "--force", "odd", cwd=tmp_path)

    assert code == 2
    assert "data (a file where init needs a directory)" in err
    assert sorted(os.listdir(target)) == ["data"]


def test_a_target_that_is_a_file_is_a_usage_error(cli, tmp_path):
    (tmp_path / "taken").write_text("mine\n", encoding="utf-8")

    code, _, err = cli("init", "taken", cwd=tmp_path)

    assert code == 2
    assert "is a file, not a directory" in err
    assert (tmp_path / "taken").read_text(encoding="utf-8") == "mine\n"


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
@pytest.mark.parametrize("force", [[], ["--force"]])
def test_a_target_that_is_a_dangling_link_says_so(cli, tmp_path, force):
    """It said "project appeared while `oloproof init` was writing" (it was there before)."""
    (tmp_path / "project").symlink_to(tmp_path / "gone", target_is_directory=True)

    code, _, err = cli("init", *force, "project", cwd=tmp_path)

    assert code == 2
    assert err.startswith("Usage error: project is a symbolic link to "
                          f"{tmp_path / 'gone'}, which does not exist; create the directory it "
                          "points to, or remove the link"), err
    assert not (tmp_path / "gone").exists() and (tmp_path / "project").is_symlink()



def test_a_target_that_is_a_loop_of_links_says_so(cli, tmp_path):
    (tmp_path / "project").symlink_to("project")

    code, _, err = cli("init", "project", cwd=tmp_path)

    assert code == 2
    assert err.startswith("Usage error: project is a symbolic link to project, which leads "
                          "back to itself (a loop of links); create the directory"), err
    assert (tmp_path / "project").is_symlink()

@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_force_replaces_a_symlink_itself_never_the_file_it_points_to(cli, tmp_path):
    outside = tmp_path / "precious.md"
    outside.write_text("precious\n", encoding="utf-8")
    target = tmp_path / "linked"
    target.mkdir()
    (target / "README.md").symlink_to(outside)

    code, _, err = cli("init", "--force", "linked", cwd=tmp_path)

    assert code == 0, err
    assert outside.read_text(encoding="utf-8") == "precious\n"
    assert not (target / "README.md").is_symlink()


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_a_gitignore_link_is_never_written_through(cli, tmp_path):
    shared = tmp_path / "shared-gitignore"
    shared.write_text("*.pyc\n", encoding="utf-8")
    target = tmp_path / "linked"
    target.mkdir()
    (target / ".gitignore").symlink_to(shared)

    code, _, err = cli("init", "linked", cwd=tmp_path)

    assert code == 2
    assert (".gitignore (a symbolic link, and what it points to does not ignore .oloproof/; "
            "init never writes through a link)") in err
    assert sorted(os.listdir(target)) == [".gitignore"]

    code, out, err = cli("init", "--force", "linked", cwd=tmp_path)

    assert code == 0, err
    assert shared.read_text(encoding="utf-8") == "*.pyc\n", "the linked file is untouched"
    ignore = target / ".gitignore"
    assert not ignore.is_symlink()
    assert ignore.read_text(encoding="utf-8") == "*.pyc\n.oloproof/\n"
    assert (".gitignore (a symbolic link, replaced by a file holding its lines and "
            ".oloproof/)") in out


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_a_dangling_gitignore_link_is_replaced_only_with_force(cli, tmp_path):
    target = tmp_path / "dangling"
    target.mkdir()
    (target / ".gitignore").symlink_to(tmp_path / "gone")

    code, _, err = cli("init", "dangling", cwd=tmp_path)
    assert code == 2 and ".gitignore (a symbolic link" in err

    code, _, err = cli("init", "--force", "dangling", cwd=tmp_path)
    assert code == 0, err
    assert not (tmp_path / "gone").exists(), "nothing was made through the link"
    assert (target / ".gitignore").read_text(encoding="utf-8") == ".oloproof/\n"


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
@pytest.mark.parametrize("force", [[], ["--force"]])
def test_a_linked_directory_stops_init(cli, tmp_path, force):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = tmp_path / "project"
    target.mkdir()
    (target / "data").symlink_to(elsewhere, target_is_directory=True)

    code, _, err = cli("init", *force, "project", cwd=tmp_path)

    assert code == 2
    assert ("data (a symbolic link where init makes a directory: init never writes through "
            "one)") in err
    assert list(elsewhere.iterdir()) == [], "nothing was written where the link points"
    assert sorted(os.listdir(target)) == ["data"]


def test_an_unknown_example_is_a_usage_error(cli, tmp_path):
    code, _, err = cli("init", "--example", "nope", "x", cwd=tmp_path)

    assert code == 2
    assert "nope" in err and "support_agent" in err
    assert not (tmp_path / "x").exists()


def test_the_readme_names_every_example_init_lists(cli, tmp_path):
    """README's `oloproof init --example list` comment names what the command lists."""
    code, out, _ = cli("init", "--example", "list", cwd=tmp_path)
    assert code == 0
    listed = [line.split()[0] for line in out.splitlines() if line and not line[0].isspace()]
    assert "agents_sdk" in listed
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    at = readme.index("oloproof init --example list")
    comment = " ".join(line.split("#", 1)[1] for line in readme[at:].splitlines()[:2]
                       if "#" in line)
    assert [name.strip() for name in comment.split(",")] == listed
