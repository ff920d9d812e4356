"""A Ray async actor may start a later call before an earlier one: a parcel whose `$ref` state
travelled with the earlier parcel must wait for it, never fail (seen as 2 of 240 cases errored
`a job refers to state …, which this worker was never sent` on `ray` with 2 actors)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oloproof.execution.shipping import StateHolder, StateShipper


@dataclass
class _Case:
    initial_state: dict[str, Any] | None
    state_ref: str | None


@dataclass
class _CaseJob:
    case: _Case


@dataclass
class _Job:
    cases: list[_CaseJob] = field(default_factory=list)


def test_a_parcel_sent_after_its_state_is_unpacked_once_the_state_arrives() -> None:
    state = {"records": {"r1": {"qty": 3}}}
    shipper = StateShipper()
    first = shipper.pack([_Job([_CaseJob(_Case(state, "states/ledger.json"))])], "w0")
    second = shipper.pack([_Job([_CaseJob(_Case(state, "states/ledger.json"))])], "w0")
    assert first.states and not second.states  # the state travels once per worker
    assert first.uses == second.uses != frozenset()

    holder = StateHolder()
    assert holder.lacks(second)  # arrived first: it must wait, not unpickle
    holder.receive(first)
    assert not holder.lacks(second)
    (job,) = holder.unpack(second)
    (again,) = holder.unpack(first)
    assert job.cases[0].case.initial_state == state
    # both refer to the worker's one copy of the state
    assert job.cases[0].case.initial_state is again.cases[0].case.initial_state
