"""A case of the suite, source or metamorphic copy, as the engine, the workers and the
evaluators hold it (plain slots), and the value at a dotted path of a case.

Reading a dataset line into a `Case` is `suite/dataset.py`'s business; a case's digests are
filled in there (docs/concepts.md#digests-and-keys).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from oloproof.digest import ObjectText, canonical_json, sha256_text

# The object a case digest is of (docs/concepts.md#digests-and-keys), its keys in canonical
# order; a case that holds a conversation's user has `user` too (and only then: the digests of
# every other case stay as they were).
_CASE_TEXT = ObjectText("expected", "initial_state", "input", "metadata")
_CASE_WITH_USER = ObjectText("expected", "initial_state", "input", "metadata", "user")


def case_digests(expected: str, state: str, input_text: str, metadata: str,
                 user: dict[str, Any] | None) -> tuple[str, str]:
    """(the case digest, the execution digest) from the canonical texts of a case's parts
    (docs/concepts.md#digests-and-keys): the case digest of {expected, initial_state, input,
    metadata[, user]}, the execution digest of the input, the state [and the user] -- a
    conversation's user is what the system is run against, as its input is."""
    if user is None:
        return (sha256_text(_CASE_TEXT(expected, state, input_text, metadata)),
                sha256_text(input_text + "\x1f" + state))
    user_text = canonical_json(user)
    return (sha256_text(_CASE_WITH_USER(expected, state, input_text, metadata, user_text)),
            sha256_text(input_text + "\x1f" + state + "\x1f" + user_text))


class Case:
    """One case of the suite, source or derived (a metamorphic copy)."""

    __slots__ = (
        "cluster",
        "digest",
        "exec_digest",
        "expected",
        "id",
        "initial_state",
        "input",
        "line",
        "metadata",
        "pair_digest",
        "raw",
        "source_id",
        "state_ref",
        "transform",
        "user",
    )

    def __init__(
        self,
        id: str,
        line: int,
        input: dict[str, Any],
        expected: dict[str, Any],
        initial_state: dict[str, Any] | None,
        state_ref: str | None,
        metadata: dict[str, Any],
        cluster: str | None,
        digest: str,
        exec_digest: str,
        source_id: str | None = None,
        transform: str | None = None,
        pair_digest: str | None = None,
        user: dict[str, Any] | None = None,
    ) -> None:
        self.id = id
        self.line = line
        self.input = input
        self.expected = expected
        self.initial_state = initial_state
        self.state_ref = state_ref  # digest of the referenced state file's content, if $ref
        self.metadata = metadata
        self.cluster = cluster
        self.digest = digest
        self.exec_digest = exec_digest
        self.source_id = source_id
        self.transform = transform
        self.pair_digest = pair_digest
        # The user the system holds a conversation with (docs/conversations.md): scripted
        # (`turns`) or simulated (`simulator`, `persona`, `goal`, `facts`, `max_turns`).
        self.user = user
        self.raw: str | None = None  # the dataset line, stored as is when it can be

    def __reduce__(self) -> tuple[type[Case], tuple[Any, ...]]:
        """Pickled as its class and `__init__`'s arguments in order, without its dataset line
        (`raw`: only the coordinator stores a case): a job for a worker elsewhere packs its
        case in a fifth of the time the slots' state takes (docs/scaling.md#a-cpu-bound-suite)."""
        return Case, _ARGUMENTS(self)

    @property
    def is_derived(self) -> bool:
        return self.source_id is not None

    @property
    def simulator(self) -> str | None:
        """The simulator that plays this case's user, or None (no user, or a scripted one)."""
        user = self.user
        return None if user is None else user.get("simulator")

    def stored_text(self) -> str | None:
        """The dataset line itself, when it is exactly what the store should keep."""
        if self.raw is not None and self.state_ref is None and self.source_id is None:
            return self.raw.strip()
        return None

    def stored_form(self) -> dict[str, Any]:
        """What the store keeps of the case (a referenced state is kept by its digest)."""
        form: dict[str, Any] = {"id": self.id, "input": self.input}
        if self.expected:
            form["expected"] = self.expected
        if self.state_ref is not None:
            form["initial_state"] = {"$state": self.state_ref}
        elif self.initial_state is not None:
            form["initial_state"] = self.initial_state
        if self.metadata:
            form["metadata"] = self.metadata
        if self.cluster is not None:
            form["cluster"] = self.cluster
        if self.user is not None:
            form["user"] = self.user
        if self.source_id is not None:
            form["source"] = self.source_id
            form["transform"] = self.transform
            form["pair_digest"] = self.pair_digest
        return form


_ARGUMENTS = operator.attrgetter(
    "id", "line", "input", "expected", "initial_state", "state_ref", "metadata", "cluster",
    "digest", "exec_digest", "source_id", "transform", "pair_digest", "user")


class _Absent:
    """What `value_at` finds where a path leads nowhere."""


ABSENT: Any = _Absent()


def value_at(value: Any, parts: Sequence[str]) -> Any:
    """The value at a path of keys (a number indexes a list) under `value`, or `ABSENT`."""
    for part in parts:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return ABSENT
    return value


def has_path(case: Case, parts: list[str]) -> bool:
    """Whether the case has the dotted path (`input`, `expected`, `metadata` or `user`
    first)."""
    root = {"input": case.input, "expected": case.expected, "metadata": case.metadata,
            "user": case.user}
    value = value_at(root.get(parts[0]), parts[1:])
    return value is not ABSENT and value is not None
