"""`oloproof init`: copy a packaged project into a directory without ever overwriting a file.

The plan is made before anything is written: every file the project would write is checked
first, so a directory that already holds one of them is left exactly as it was
(docs/configuration.md#how-oloproof-fails-closed). With `force`, files are replaced (a symlink is
replaced itself, never written through) and the replaced ones are listed. A `.gitignore` holding
`.oloproof/` keeps the store out of Git; an existing `.gitignore` that does not ignore the store yet
is one of the files init would change, so it too needs `force` — and then the line is appended, the
user's own lines are kept.

Init never writes through a symbolic link, with `--force` or without: a `.gitignore` that is a
link is replaced by a file holding the lines it pointed to and `.oloproof/` (listed as
replaced), and a link where the project has a directory (`data/` pointing elsewhere) is in the
way, as a file there would be — writing into it would write outside the project.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from oloproof.errors import UsageError, broken_link

GITIGNORE = ".gitignore"
STORE_PATTERN = ".oloproof/"
# Lines of a .gitignore that already keep the store out of Git.
_IGNORES_STORE = {".oloproof", ".oloproof/", "/.oloproof", "/.oloproof/", ".oloproof/*",
                  "/.oloproof/*", ".oloproof/**", "/.oloproof/**"}
_SKIPPED = {"__pycache__", ".oloproof"}


def packaged_examples() -> dict[str, Path]:
    """The projects shipped in the package, by name (`starter` is what plain `init` copies)."""
    root = resources.files("oloproof") / "examples"
    found = {}
    for entry in root.iterdir():
        if entry.is_dir() and (entry / "oloproof.yaml").is_file():
            found[entry.name] = Path(str(entry))
    return dict(sorted(found.items()))


def project_files(source: Path) -> list[Path]:
    """The files of a packaged project, relative to it, in a stable order."""
    files = []
    for dirpath, dirnames, filenames in os.walk(source):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED)
        for name in sorted(filenames):
            if not name.endswith(".pyc"):
                files.append((Path(dirpath) / name).relative_to(source))
    return files


def ignores_store(gitignore_text: str) -> bool:
    """Whether a .gitignore already keeps `.oloproof/` out of Git."""
    return any(line.strip() in _IGNORES_STORE for line in gitignore_text.splitlines())


@dataclass
class Scaffold:
    """What `init` would do in a directory: new files, files in the way, and the .gitignore."""

    source: Path
    target: Path
    files: list[Path]
    existing: list[Path] = field(default_factory=list)
    # Paths no --force can write: a directory where a file goes, or a file where a directory
    # goes. Replacing those would delete something that is not a file init writes.
    blocked: list[str] = field(default_factory=list)
    # "create", "keep" (already ignores the store), "append", or "unlink" (a symbolic link
    # that does not ignore the store: replaced by a file with its lines and the store's)
    gitignore: str = "create"

    @property
    def conflicts(self) -> list[str]:
        """The files init would change, as shown to the user (relative, with slashes)."""
        names = [p.as_posix() for p in self.existing]
        if self.gitignore == "append":
            names.append(f"{GITIGNORE} (does not ignore {STORE_PATTERN} yet)")
        elif self.gitignore == "unlink":
            names.append(f"{GITIGNORE} (a symbolic link, and what it points to does not "
                         f"ignore {STORE_PATTERN}; init never writes through a link)")
        return names


def plan(source: Path, target: Path) -> Scaffold:
    """Look at `target` and say what copying the project at `source` into it would change."""
    link = broken_link(target)
    if link is not None:
        raise UsageError(f"{target} is {link}; create the directory it points to, or remove "
                         "the link, then "
                         "run init again (nothing was written)")
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target} is a file, not a directory; choose a directory for the "
                         "project")
    scaffold = Scaffold(source, target, project_files(source))
    for relative in scaffold.files:
        for parent in reversed(relative.parents[:-1]):  # data/, then data/sub/, ...
            where = target / parent
            if where.is_symlink():
                scaffold.blocked.append(f"{parent.as_posix()} (a symbolic link where init "
                                        "makes a directory: init never writes through one)")
            elif os.path.lexists(where) and not where.is_dir():
                scaffold.blocked.append(f"{parent.as_posix()} (a file where init needs a "
                                        "directory)")
        dest = target / relative
        if dest.is_dir() and not dest.is_symlink():
            scaffold.blocked.append(f"{relative.as_posix()} (a directory where init writes a "
                                    "file)")
        elif os.path.lexists(dest):
            scaffold.existing.append(relative)
    ignore = target / GITIGNORE
    if ignore.is_dir() and not ignore.is_symlink():
        scaffold.blocked.append(f"{GITIGNORE} (a directory)")
    elif ignore.is_symlink():
        # Read through the link (reading writes nothing), but never append through it.
        text = _read_gitignore(ignore) if ignore.exists() else ""
        scaffold.gitignore = "keep" if ignores_store(text) else "unlink"
    elif os.path.lexists(ignore):
        scaffold.gitignore = "keep" if ignores_store(_read_gitignore(ignore)) else "append"
    scaffold.blocked = sorted(set(scaffold.blocked))
    return scaffold


def write(scaffold: Scaffold, *, force: bool) -> list[str]:
    """Copy the project; returns what was replaced. Refuses (UsageError) to overwrite unless
    `force`, and never writes anything when it refuses."""
    if scaffold.blocked:
        raise UsageError(
            f"{_shown(scaffold.target)} holds "
            + "; ".join(scaffold.blocked)
            + "; nothing was written. Move it out of the way, or choose another directory "
            "(`oloproof init NEWDIR`)"
        )
    if scaffold.conflicts and not force:
        raise UsageError(
            f"{_shown(scaffold.target)} already holds files `oloproof init` would write: "
            + ", ".join(scaffold.conflicts)
            + "; nothing was written. Choose an empty directory (`oloproof init NEWDIR`), or "
            "pass --force to replace them"
        )
    replaced = set(scaffold.existing)
    try:
        for relative in scaffold.files:
            dest = scaffold.target / relative
            dest.parent.mkdir(parents=True, exist_ok=True)
            data = (scaffold.source / relative).read_bytes()
            if relative in replaced:
                dest.unlink()  # a symlink goes, not the file it points to
            # "x": create only, so a file that appeared since the plan is never overwritten.
            with dest.open("xb") as handle:
                handle.write(data)
        ignore = scaffold.target / GITIGNORE
        if scaffold.gitignore == "create":
            with ignore.open("x", encoding="utf-8") as handle:
                handle.write(STORE_PATTERN + "\n")
        elif scaffold.gitignore == "append":
            text = ignore.read_text(encoding="utf-8", errors="replace")
            if ignore.is_symlink():  # it became one since the plan: never append through it
                raise FileExistsError(errno.EEXIST, "a symbolic link", str(ignore))
            with ignore.open("a", encoding="utf-8") as handle:
                handle.write(("" if not text or text.endswith("\n") else "\n")
                             + STORE_PATTERN + "\n")
        elif scaffold.gitignore == "unlink":
            text = _read_gitignore(ignore) if ignore.exists() else ""
            ignore.unlink()  # the link goes, not the file it points to
            with ignore.open("x", encoding="utf-8") as handle:
                handle.write(text + ("" if not text or text.endswith("\n") else "\n")
                             + STORE_PATTERN + "\n")
    except FileExistsError as exc:
        raise UsageError(f"{exc.filename} appeared while `oloproof init` was writing; it was "
                         "left as it is. Run init again to see what is in the way") from None
    except OSError as exc:
        raise UsageError(f"cannot write {exc.filename or scaffold.target}: {exc.strerror}; "
                         "choose a directory you can write to") from None
    return [p.as_posix() for p in scaffold.existing] + {
        "append": [f"{GITIGNORE} (appended {STORE_PATTERN})"],
        "unlink": [f"{GITIGNORE} (a symbolic link, replaced by a file holding its lines and "
                   f"{STORE_PATTERN})"],
    }.get(scaffold.gitignore, [])


def _read_gitignore(ignore: Path) -> str:
    try:
        return ignore.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(f"cannot read {ignore}: {exc.strerror}") from None


def _shown(target: Path) -> str:
    return "this directory" if str(target) in ("", ".") else str(target)
