"""`@system`: attach a declaration (name, version, records) to the callable under test."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

DECLARATION_ATTR = "__oloproof_system__"


@dataclass(frozen=True)
class SystemDeclaration:
    """What a system says about itself; must agree with `system:` in oloproof.yaml."""

    name: str | None = None
    version: str | None = None
    records: tuple[str, ...] | None = None


def system(
    name: str | None = None,
    version: str | None = None,
    records: Iterable[str] | None = None,
) -> Callable[[T], T]:
    """Declare the system under test. Only attaches the declaration; it changes nothing else.

    Args:
        name: the system's name (as `system.name` in oloproof.yaml).
        version: its version; changing it invalidates the execution cache.
        records: artifact kinds the system records itself, e.g. `("agent_trajectory/v1",)`.

    Raises:
        TypeError: the decorated object cannot carry a declaration (a bound method).
    """

    declaration = SystemDeclaration(
        name=name, version=version, records=tuple(records) if records is not None else None
    )

    def attach(target: T) -> T:
        try:
            setattr(target, DECLARATION_ATTR, declaration)
        except (AttributeError, TypeError):  # e.g. a bound method: wrap nothing, just refuse
            raise TypeError(f"@system cannot annotate {target!r}") from None
        return target

    return attach


def declaration_of(target: Any) -> SystemDeclaration | None:
    """The declaration attached to a callable, an instance or its class, if any."""
    found = getattr(target, DECLARATION_ATTR, None)
    return found if isinstance(found, SystemDeclaration) else None
