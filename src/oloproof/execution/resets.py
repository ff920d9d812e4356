"""What `reset` gets: a private copy of a case's initial state (SPEC §6, §14).

An inline state (small, one per case) is deep-copied. A state shared by `$ref` -- often
megabytes, the same for every case -- is handed over as a copy-on-write copy
(`state.cow`): nothing is copied up front, and a container is copied only when the case first
reads it, so a case that touches three records of 12,000 copies three records. Its untouched
parts stay the base's own objects, so the end state's diff skips them by identity.

The base must then never change. After each call the worker checks that it has not
(`verify`, one C-level comparison with a pristine copy taken once); a system that changed it
anyway -- through C code that reads a dict's storage directly -- gets that case errored
(`shared_state_changed`), the base restored, and full copies from then on for that state
(`pickle.loads` of it pickled once, several times faster than `deepcopy`).

One `StateCopies` serves every worker of a process: the base, its pristine copy and its
container ids are kept once per state, not once per worker.
"""

from __future__ import annotations

import copy
import pickle
import threading
from dataclasses import dataclass, field
from typing import Any

from oloproof.state.cow import containers_of, cow_copy
from oloproof.suite.cases import Case

CHANGED_KIND = "shared_state_changed"


@dataclass
class _Base:
    """One `$ref` state as this process holds it."""

    state: dict[str, Any]
    frozen: bytes
    pristine: dict[str, Any] | None = None
    shared: frozenset[int] = field(default_factory=frozenset)
    full_copies: bool = False  # the base was changed once: no more copy-on-write


class StateCopies:
    """Copies of initial states for `reset`, shared by the workers of one process."""

    def __init__(self, copy_on_write: bool = True) -> None:
        self.copy_on_write = copy_on_write
        self._bases: dict[str, _Base] = {}
        self._lock = threading.Lock()

    def _base(self, case: Case) -> _Base:
        ref = case.state_ref
        state = case.initial_state
        assert ref is not None and state is not None
        base = self._bases.get(ref)
        if base is None or base.state is not state:
            with self._lock:
                base = self._bases.get(ref)
                if base is None or base.state is not state:
                    frozen = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
                    base = _Base(state, frozen)
                    if self.copy_on_write:
                        base.pristine = pickle.loads(frozen)
                        base.shared = containers_of(state)
                    else:
                        base.full_copies = True
                    self._bases[ref] = base
        return base

    def fresh(self, case: Case) -> dict[str, Any]:
        """A private copy of the case's initial state (`{}` when it has none)."""
        if case.state_ref is None or case.initial_state is None:
            return copy.deepcopy(case.initial_state or {})
        base = self._base(case)
        if base.full_copies:
            state: dict[str, Any] = pickle.loads(base.frozen)
            return state
        return cow_copy(base.state, base.shared)

    def verify(self, case: Case) -> str | None:
        """After a call on a copy-on-write copy: None if the base is unchanged; else it is
        restored, copy-on-write is off for it, and the message says what happened."""
        if case.state_ref is None or case.initial_state is None:
            return None
        base = self._bases.get(case.state_ref)
        if base is None or base.full_copies or base.pristine is None:
            return None
        if base.state == base.pristine:
            return None
        with self._lock:
            if base.full_copies:
                return None
            base.full_copies = True
            base.state.clear()
            base.state.update(copy.deepcopy(base.pristine))
        return ("the system changed the shared copy of its `$ref` initial state, reaching "
                "past the copy-on-write copy reset() was given (C code reading a dict's "
                "storage directly?); this case is errored and this worker resets from full "
                "copies of that state from now on")
