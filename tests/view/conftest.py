"""The view's tests' fixtures: the desk run twice with its view (a server for the module). What
they share besides is in view_support.py; the browser is the suite's (`browser`,
tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from view_support import ViewServer, two_desk_runs


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The desk run twice (`two_desk_runs`), once for each module that asks."""
    return two_desk_runs(tmp_path_factory.mktemp("view-desk"))


@pytest.fixture(scope="module")
def view(desk: Any) -> Iterator[ViewServer]:
    """The view of the desk's store, for the module."""
    from oloproof.api import find_store

    server = ViewServer(find_store(desk.config))
    yield server
    server.close()
