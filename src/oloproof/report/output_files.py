"""Files a command writes where its user said: `--junit`, `--markdown`, `--html`, `labels
export -o` (docs/ci.md#output-files).

One rule for all of them, checked before a run starts (so no run is wasted on a path that
cannot be written) and again when the file is written:

- a path that exists and is not a regular file — a directory, a FIFO, a device, a socket — is
  a usage error naming it: nothing is written to it, nothing replaces it;
- a symbolic link is written through to the file it names, as the shell's `>` would: the link
  stays a link, and the file it points to gets the new content;
- the folder the file goes in must exist: it is never created (a typo in a folder's name is an
  error, not a new folder);
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


def check_output_path(path: str | Path) -> Path:
    """The regular file `path` names once symbolic links are followed (it may not exist yet).

    Raises:
        UsageError: `path` exists and is not a regular file, its folder does not exist, or it
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
            linked = given.is_symlink()
            raise UsageError(
                f"{shown}: the folder {folder if linked else given.parent}"
                + (f" (where the symbolic link {shown} points)" if linked else "")
                + " does not exist; create it first, or name a file in a folder that exists "
                "(output folders are never created)") from None
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


def write_output(path: str | Path, text: str) -> Path:
    """Write `text` (UTF-8, `\\n` line ends) to the file `path` names, by the rules above;
    returns `path` as given.

    Raises:
        UsageError: as `check_output_path`.
        OloproofError: the file could not be written (a full disk, say); it is left as it was.
    """
    target = check_output_path(path)
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
