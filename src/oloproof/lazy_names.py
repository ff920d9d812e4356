"""Public names a package imports on first use: its module `__getattr__` and `__dir__`."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_names(
    package: str, modules: dict[str, str], namespace: dict[str, Any], public: list[str],
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`: a name in `modules` is imported from the
    module it maps to on first use, then kept in `namespace` (the package's globals) as a
    plain module attribute; `dir()` lists `public` with what is already there."""

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(public))

    return __getattr__, __dir__
