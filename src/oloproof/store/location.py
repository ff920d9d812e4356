"""Where a project's store is, and opening one that must already exist.

Read by every command that works on stored runs; kept apart from `api` so that a command which
only reads the store (`compare`) does not import the engine that makes runs.
"""

from __future__ import annotations

import os
from pathlib import Path

from oloproof.errors import StoreError
from oloproof.store.store import Store
from oloproof.suite.config import load_suite_file


def find_store(config: str | Path = "oloproof.yaml", store: str | Path | None = None) -> Path:
    """Where the project's store is: `store`, $OLOPROOF_STORE, `store:` in the suite, default.

    Raises:
        ConfigError: the suite file `config` is there but cannot be read.
    """
    if store is not None:
        return Path(store)
    env = os.environ.get("OLOPROOF_STORE")
    if env:
        return Path(env)
    config_path = Path(config).resolve()
    if config_path.is_file():
        suite_file, _ = load_suite_file(config_path)
        if suite_file.store:
            return (config_path.parent / suite_file.store).resolve()
    return config_path.parent / ".oloproof" / "store.sqlite"


def open_existing_store(config: str | Path, store: str | Path | None, *,
                        writing: bool = False) -> Store:
    """The project's store, which must exist, opened read-only: reading a run never writes
    (docs/configuration.md#how-oloproof-fails-closed). A StoreError says to run first when there is
    none. `writing`: opened to write (a tag, a labels sample drawn: what the store records)."""
    path = find_store(config, store)
    if not writing:
        return Store(path, read_only=True)
    if not path.is_file():
        raise StoreError("no store here yet: run `oloproof run` in the project directory "
                         "first", file=path)
    return Store(path)
