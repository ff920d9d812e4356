"""What `reset` gets: a private copy of a case's initial state (docs/scaling.md#large-sandboxes).

An inline state (small, one per case) is deep-copied. A state shared by `$ref` -- often
megabytes, the same for every case -- is frozen once per process (`state.cow.frozen`: the same
values in containers that refuse every change) and each reset gets a copy-on-write copy of the
frozen base: nothing is copied up front, and a container is copied only when the case first
reads it, so a case that touches three records of 12,000 copies three records. The end state's
diff is taken against the frozen base (`diff_base`), whose untouched parts the copy still
shares, so it skips them by identity.

One `StateCopies` serves every worker of a process: each state is frozen once, not once per
worker.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

from oloproof.state.cow import FrozenDict, cow_copy, frozen
from oloproof.suite.case import Case


class StateCopies:
    """Copies of initial states for `reset`, shared by the workers of one process."""

    def __init__(self) -> None:
        self._frozen: dict[str, tuple[dict[str, Any], FrozenDict]] = {}
        self._lock = threading.Lock()

    def _frozen_base(self, case: Case) -> FrozenDict:
        ref, state = case.state_ref, case.initial_state
        assert ref is not None and state is not None
        known = self._frozen.get(ref)
        if known is None or known[0] is not state:
            with self._lock:
                known = self._frozen.get(ref)
                if known is None or known[0] is not state:
                    known = (state, frozen(state))
                    self._frozen[ref] = known
        return known[1]

    def fresh(self, case: Case) -> dict[str, Any]:
        """A private copy of the case's initial state (`{}` when it has none)."""
        if case.state_ref is None or case.initial_state is None:
            return copy.deepcopy(case.initial_state or {})
        return cow_copy(self._frozen_base(case))

    def diff_base(self, case: Case) -> Any:
        """What to take the end state's diff against: the frozen base of a `$ref` state (the
        copy shares its untouched parts), else the initial state itself."""
        if case.state_ref is None or case.initial_state is None:
            return case.initial_state
        return self._frozen_base(case)
