"""Files a command writes where its user said: `--junit`, `--markdown`, `--html`, `labels
export -o` (docs/ci.md#output-files).

One rule for all of them, checked before a run starts (so no run is wasted on a path that
cannot be written) and again when the file is written:

- a path that exists and is not a regular file — a directory, a FIFO, a device, a socket — is
  a usage error naming it: nothing is written to it, nothing replaces it;
- a symbolic link is written through to the file it names, as the shell's `>` would: the link
  stays a link, and the file it points to gets the new content;
- a folder the file goes in that does not exist is created, as pytest's `--junitxml` creates
  its folder — never through a symbolic link: when a folder on the path as written is a link
  (to a folder elsewhere, or dangling), or the file is a link whose folder is missing, nothing
  is created and the link is named in a usage error;
- the new content replaces the old whole or not at all: it is written to a temporary file
  beside the target and renamed over it, keeping the target's permission bits (a new file gets
  the permissions the umask gives). Where that folder cannot take a temporary file but the
  file itself may be written, the file is written in place.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

from oloproof.errors import OloproofError, UsageError

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def check_output_path(path: str | Path, *, create: bool = False) -> Path:
    """The regular file `path` names once symbolic links are followed (it may not exist yet,
    nor its folder); `create` makes the folders it goes in that are missing.

    Raises:
        UsageError: `path` exists and is not a regular file; a folder it needs is missing and
            cannot be made without going through a symbolic link (the link is named); or it
            may not be written.
    """
    shown = str(path)
    if not shown:
        raise UsageError("an output file needs a name")
    given = Path(path)
    target = Path(os.path.realpath(given))
    try:
        mode = os.stat(given).st_mode
    except FileNotFoundError:
        folder = target.parent
        if not folder.is_dir():
            if given.is_symlink():  # (its target's folder: never made through the link)
                raise UsageError(
                    f"{shown}: the folder {folder} (where the symbolic link {shown} points) "
                    "does not exist; create it first, or name a file that is not a link "
                    "(folders are never made through a symbolic link)") from None
            existing = _missing_folders(given.parent, shown)
            if not os.access(existing, os.W_OK | os.X_OK):
                raise UsageError(f"{shown}: the folder {existing} may not be written; name a "
                                 "file in a folder you can write to") from None
            if create:
                _make_folders(given.parent, shown)
            return target
        if not os.access(folder, os.W_OK | os.X_OK):
            raise UsageError(f"{shown}: the folder {folder} may not be written; name a file "
                             "in a folder you can write to") from None
        return target
    except NotADirectoryError:
        raise UsageError(f"{shown}: a part of this path is a file, not a folder; name a file "
                         "in a folder that exists") from None
    except OSError as exc:  # a loop of symbolic links, a name too long, ...
        raise UsageError(f"{shown}: {exc.strerror}; name another file") from None
    if not stat.S_ISREG(mode):
        raise UsageError(
            f"{shown} is {_kind(mode)}, not a regular file; Oloproof writes its reports only "
            "to regular files (nothing was written): name a file"
            + (" inside it, or another one" if stat.S_ISDIR(mode) else ""))
    if not os.access(target, os.W_OK):
        raise UsageError(f"{shown} may not be written (permission denied); name another file")
    return target


def _missing_folders(folder: Path, shown: str) -> Path:
    """The deepest folder of `folder` (as written) that exists, when the ones below it can be
    made without going through a symbolic link (a UsageError naming the link otherwise, or
    the part of the path that is a file)."""
    existing = Path(".") if not folder.is_absolute() else Path(folder.anchor)
    for part in folder.parts[1:] if folder.is_absolute() else folder.parts:
        step = existing / part
        if step.is_symlink():
            where = os.readlink(step)
            state = "a dangling symbolic link" if not step.exists() else "a symbolic link"
            raise UsageError(
                f"{shown}: {step} is {state} (to {where}), and a missing folder is made only "
                "where no link leads elsewhere; create the folder yourself, or name a path "
                "without the link")
        if not step.exists():
            return existing
        if not step.is_dir():
            raise UsageError(f"{shown}: {step} is a file, not a folder; name a file in a "
                             "folder")
        existing = step
    return existing


def _make_folders(folder: Path, shown: str) -> None:
    """Make the missing folders of `folder`, one at a time, once `_missing_folders` has found
    no link on the way (`mkdir` never follows one)."""
    _missing_folders(folder, shown)
    made = Path(folder.anchor) if folder.is_absolute() else Path(".")
    for part in folder.parts[1:] if folder.is_absolute() else folder.parts:
        made = made / part
        if made.is_dir() and not made.is_symlink():
            continue
        try:
            os.mkdir(made)
        except FileExistsError:
            if made.is_symlink() or not made.is_dir():
                raise UsageError(f"{shown}: {made} appeared as something other than a "
                                 "folder while it was being made; name another file") from None
        except OSError as exc:
            raise UsageError(f"{shown}: the folder {made} cannot be made: "
                             f"{exc.strerror or exc}") from None


def write_output(path: str | Path, text: str) -> Path:
    """Write `text` (UTF-8, `\\n` line ends) to the file `path` names, by the rules above
    (making its missing folders); returns `path` as given.

    Raises:
        UsageError: as `check_output_path`.
        OloproofError: the file could not be written (a full disk, say); it is left as it was.
    """
    target = check_output_path(path, create=True)
    data = text.encode("utf-8")
    try:
        try:
            mode = os.stat(target).st_mode & 0o7777
        except FileNotFoundError:
            mode = None
        try:
            _replace(target, data, mode)
        except PermissionError:
            if mode is None:
                raise
            _write_in_place(target, data)
    except OSError as exc:
        raise OloproofError(f"cannot write {path}: {exc.strerror or exc}", file=path) from None
    return Path(path)


def _replace(target: Path, data: bytes, mode: int | None) -> None:
    """Write beside `target`, then rename over it: readers see the old file or the new one."""
    while True:
        temporary = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"
        try:
            # 0o666 and the umask: the permissions a new file would get (no umask to change).
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        break
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _write_in_place(target: Path, data: bytes) -> None:
    """Truncate and write an existing file (its folder refused a temporary file), after
    checking, on the open file, that it is still a regular file."""
    fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "wb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"{target} is no longer a regular file")
        handle.truncate(0)
        handle.write(data)
