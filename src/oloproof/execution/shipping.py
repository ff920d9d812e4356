"""How jobs and results cross to a worker elsewhere (a process, a Ray actor), states by reference.

A case whose initial state is shared by `$ref` carries that state as one object, the same for
every case that names the file. Pickled as it is, a 5 MB sandbox would cross the boundary with
every case. Here a batch of jobs is pickled with each such state replaced by its content hash
(`persistent_id`), and the states a worker does not hold yet travel beside the batch, once per
worker; the worker unpickles them once and every case it runs from then on refers to that one
copy: a 5 MB sandbox never crosses a process boundary per case (docs/scaling.md#large-sandboxes).

Results need no such care: a worker sends an end state back only as its diff (`units.py`).
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from oloproof.execution.units import UnitJob, UnitResult

PROTOCOL = pickle.HIGHEST_PROTOCOL


@dataclass(slots=True)
class Parcel:
    """A batch of jobs for one worker: the pickled jobs, and the states it does not hold yet
    (content hash → the state pickled once by the coordinator)."""

    jobs: bytes
    states: dict[str, bytes] = field(default_factory=dict)
    uses: frozenset[str] = frozenset()  # every state the jobs refer to, sent now or before


class _ByReference(pickle.Pickler):
    """Pickles jobs with each `$ref` state replaced by its content hash."""

    def __init__(self, file: io.BytesIO, refs: dict[int, str]) -> None:
        super().__init__(file, protocol=PROTOCOL)
        self.refs = refs
        self.used: set[str] = set()

    def persistent_id(self, obj: Any) -> str | None:
        if type(obj) is dict:
            ref = self.refs.get(id(obj))
            if ref is not None:
                self.used.add(ref)
                return ref
        return None


class StateShipper:
    """The coordinator's side: which states each worker holds, each state pickled once."""

    def __init__(self) -> None:
        self._frozen: dict[str, bytes] = {}
        self._objects: dict[int, str] = {}  # id of a state object the suite holds -> its hash
        self._keep: list[Any] = []  # the states themselves, so their ids stay theirs
        self._held: dict[Any, set[str]] = {}  # worker key -> hashes it holds

    def pack(self, jobs: Sequence[UnitJob], worker: Any) -> Parcel:
        """The parcel of `jobs` for `worker` (any hashable key naming it)."""
        by_reference = False
        for job in jobs:
            for case_job in job.cases:
                case = case_job.case
                state = case.initial_state
                if case.state_ref is None or state is None:
                    continue
                by_reference = True
                if id(state) not in self._objects:
                    self._objects[id(state)] = case.state_ref
                    self._keep.append(state)
                    self._frozen.setdefault(case.state_ref, pickle.dumps(state,
                                                                         protocol=PROTOCOL))
        if not by_reference:
            # No `$ref` state to replace: the plain pickler, with no Python call per object
            # pickled (`persistent_id` is one), which made packing the coordinator's largest
            # cost per case on a cheap system (docs/scaling.md#a-cpu-bound-suite).
            return Parcel(pickle.dumps(list(jobs), protocol=PROTOCOL))
        buffer = io.BytesIO()
        pickler = _ByReference(buffer, self._objects)
        pickler.dump(list(jobs))
        held = self._held.setdefault(worker, set())
        states = {ref: self._frozen[ref] for ref in pickler.used - held}
        held.update(states)
        return Parcel(buffer.getvalue(), states, frozenset(pickler.used))

    def forget(self, worker: Any) -> None:
        """A worker was lost: its replacement holds nothing yet."""
        self._held.pop(worker, None)


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, states: dict[str, dict[str, Any]]) -> None:
        super().__init__(file)
        self.states = states

    def persistent_load(self, pid: Any) -> Any:
        try:
            return self.states[pid]
        except KeyError:
            raise pickle.UnpicklingError(f"a job refers to state {pid}, which this worker was "
                                         "never sent") from None


class StateHolder:
    """The worker's side: the states it was sent, each unpickled once."""

    def __init__(self) -> None:
        self.states: dict[str, dict[str, Any]] = {}

    def receive(self, parcel: Parcel) -> None:
        """Keep the states that travel with `parcel`."""
        for ref, frozen in parcel.states.items():
            if ref not in self.states:
                self.states[ref] = pickle.loads(frozen)

    def lacks(self, parcel: Parcel) -> bool:
        """Whether `parcel` refers to a state still on its way in an earlier parcel (an async
        Ray actor may start a later call before an earlier one)."""
        return not parcel.uses <= self.states.keys()

    def unpack(self, parcel: Parcel) -> list[UnitJob]:
        """The jobs of a parcel, their `$ref` states this worker's own copies."""
        self.receive(parcel)
        jobs: list[UnitJob] = _Unpickler(io.BytesIO(parcel.jobs), self.states).load()
        return jobs


def pack_results(results: Iterable[UnitResult]) -> bytes:
    """Results as bytes for the way back (end states are diffs already)."""
    return pickle.dumps(list(results), protocol=PROTOCOL)


def unpack_results(data: bytes) -> list[UnitResult]:
    """The results `pack_results` packed."""
    results: list[UnitResult] = pickle.loads(data)
    return results
