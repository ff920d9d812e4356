"""The one registry of what `oloproof.yaml` can name: evaluator types and custom checks.

A built-in evaluator type is a class registered with `@register("type")` (used as
`{type: ...}`); a custom check is a function registered with `@oloproof.evaluator(name=...)`,
or named by a `callable:` (used as `{type: custom, name: ...}`). Both share one namespace and
one rule: **a name is registered once**. Registering it again from the same place — the same
module and qualified name, as when a module is imported again or a notebook cell is run again —
replaces the earlier entry; from anywhere else it is a `ConfigError` naming both places, never
"the last one wins".

Every lookup sees the built-in types: the registry imports the modules that define them the
first time it is asked (or given a custom check), so what a name means never depends on which
modules happened to be imported first.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from oloproof.errors import ConfigError

if TYPE_CHECKING:
    from oloproof.evaluators.base import Evaluator

CheckFunction = Callable[[dict[str, Any], dict[str, Any] | None, dict[str, Any]], bool | None]
"""A custom check: `check(case, output, artifacts)` → True (passed), False (failed), None
(missing)."""

Kind = Literal["type", "check"]

BUILT_IN_MODULES = ("output", "agent", "multi_agent", "state", "faults", "metamorphic", "custom",
                    "judge", "imported")
"""The modules of `oloproof.evaluators` that register the built-in evaluator types."""


@dataclass(frozen=True)
class Entry:
    """One registered name: an evaluator type or a custom check, and where it was defined."""

    name: str
    kind: Kind
    value: Any
    module: str
    qualname: str

    def place(self) -> tuple[str | None, int | None]:
        """The file and line that define the registered class or function (when known)."""
        code = getattr(self.value, "__code__", None)
        if code is not None:
            return code.co_filename, code.co_firstlineno
        try:
            return inspect.getsourcefile(self.value), inspect.getsourcelines(self.value)[1]
        except (OSError, TypeError):
            return getattr(sys.modules.get(self.module), "__file__", None), None

    def describe(self) -> str:
        """`the custom check checks.polite (checks.py:3)`, as error messages name it."""
        what = "the evaluator type" if self.kind == "type" else "the custom check"
        file, line = self.place()
        where = "" if file is None else f" ({file}" + ("" if line is None else f":{line}") + ")"
        return f"{what} {self.module}.{self.qualname}{where}"


class Registry:
    """Evaluator types and custom checks by name (see the module's rule for duplicates)."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}
        self._built_ins_loaded = False

    def _load_built_ins(self) -> None:
        """Import the built-in types' modules once (they register themselves as they load)."""
        if self._built_ins_loaded:
            return
        self._built_ins_loaded = True  # first: the modules call `add` while they load
        for module in BUILT_IN_MODULES:
            importlib.import_module(f"oloproof.evaluators.{module}")

    def add(self, name: str, kind: Kind, value: Any) -> None:
        """Register `value` under `name`; raises `ConfigError` when another place has it."""
        if kind == "check":  # a check may not take a built-in type's name: load those first
            self._load_built_ins()
        if not isinstance(name, str) or not name:
            raise ConfigError(f"an evaluator name is a non-empty string, not {name!r}")
        entry = Entry(name, kind, value, getattr(value, "__module__", "?"),
                      getattr(value, "__qualname__", repr(value)))
        old = self._entries.get(name)
        if old is not None and old.value is not value and (
            (old.kind, old.module, old.qualname) != (kind, entry.module, entry.qualname)
        ):
            file, line = entry.place()
            raise ConfigError(
                f"the name {name!r} is registered twice: by {old.describe()} and by "
                f"{entry.describe()}; give one of them another name",
                file=file, line=line,
            )
        self._entries[name] = entry

    def get(self, name: str) -> Entry | None:
        """The entry registered under `name`, or None."""
        self._load_built_ins()
        return self._entries.get(name)

    def evaluator_type(self, name: str) -> type[Evaluator] | None:
        """The evaluator type registered as `name`, or None."""
        self._load_built_ins()
        entry = self._entries.get(name)
        return entry.value if entry is not None and entry.kind == "type" else None

    def check(self, name: str) -> CheckFunction | None:
        """The custom check registered as `name`, or None."""
        self._load_built_ins()
        entry = self._entries.get(name)
        return entry.value if entry is not None and entry.kind == "check" else None

    def names(self, kind: Kind) -> list[str]:
        """The registered names of one kind, sorted."""
        self._load_built_ins()
        return sorted(n for n, e in self._entries.items() if e.kind == kind)


REGISTRY = Registry()
"""Every evaluator type and custom check of this process."""
