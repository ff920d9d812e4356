"""The store is its owner's alone (docs/configuration.md#how-oloproof-fails-closed): every
output, input and error message of a project is in it, so a folder it makes (`.oloproof/`) is
made readable by its owner only (0700), and a store file it makes is 0600. A folder or a store
that is already there keeps its mode: it is never changed behind its owner's back."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import oloproof


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_new_store_is_readable_by_its_owner_only(starter_project: Path) -> None:
    old = os.umask(0o022)  # the usual umask, which makes folders 0755 and files 0644
    try:
        oloproof.run(starter_project / "oloproof.yaml")
    finally:
        os.umask(old)

    store = starter_project / ".oloproof" / "store.sqlite"
    assert _mode(store.parent) == 0o700
    assert _mode(store) == 0o600
    for side in store.parent.iterdir():  # the WAL and the shared memory follow the store
        assert _mode(side) & 0o077 == 0, (side, oct(_mode(side)))


def test_a_store_folder_made_elsewhere_is_the_owners_too(starter_project: Path,
                                                         tmp_path: Path) -> None:
    store = tmp_path / "results" / "runs" / "store.sqlite"

    oloproof.run(starter_project / "oloproof.yaml", store=store)

    assert _mode(store.parent) == 0o700 and _mode(store) == 0o600


def test_an_existing_store_keeps_its_mode(starter_project: Path) -> None:
    folder = starter_project / ".oloproof"
    folder.mkdir()
    folder.chmod(0o755)  # a team's choice: left as it is
    oloproof.run(starter_project / "oloproof.yaml")
    store = folder / "store.sqlite"
    store.chmod(0o640)

    oloproof.run(starter_project / "oloproof.yaml", no_cache=True)

    assert _mode(folder) == 0o755
    assert _mode(store) == 0o640
