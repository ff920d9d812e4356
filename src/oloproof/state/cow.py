"""Copy-on-write copies of a large initial state (SPEC §6, §14: "a reset need not rebuild what
the case will not touch").

`cow_copy(base, shared)` is what `reset` gets for a state shared by `$ref`: a `dict` that holds
the base's top-level values and copies each container the first time anything reads it
(`CowDict` / `CowList` are `dict` / `list` subclasses, so `isinstance(state, dict)` holds and
JSON, pickle, `copy` and `deepcopy` work as on a plain copy). A case that touches three
records of 12,000 copies those three records and the containers above them, not the other
11,997; and the untouched parts stay the very objects of the base, so the end state's diff
(`diff.py`, which reads these copies without copying them) skips them by identity.

`shared` is the set of ids of the base's containers (`containers_of`): a value is still the
base's while its id is in it; anything the system stores itself is left as it stored it (an
object put in is the same object read back).

Every way Python code reads a value -- `[]`, `get`, `values`, `items`, iteration, slices,
`pop`, `copy`, `|`, `+`, `*`, `dict(...)`, `{**...}`, `list(...)`, unpacking -- goes through
the copying. Code in C that reads a dict's storage directly (`dict.__getitem__(d, k)`, some
C extensions) could still reach a base object and change it; the worker checks after each
case that the base is unchanged (`worker.py`) and, if not, errors the case and resets from
full copies from then on -- so such a system is slower, never silently wrong.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any, SupportsIndex

_dict_get = dict.__getitem__
_dict_set = dict.__setitem__
_list_get = list.__getitem__
_list_set = list.__setitem__


def containers_of(base: Any) -> frozenset[int]:
    """The ids of every dict and list inside `base` (base included)."""
    found: set[int] = set()
    stack = [base]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is dict:
            found.add(id(value))
            stack.extend(v for v in value.values() if type(v) is dict or type(v) is list)
        elif kind is list:
            found.add(id(value))
            stack.extend(v for v in value if type(v) is dict or type(v) is list)
    return frozenset(found)


def cow_copy(base: dict[str, Any], shared: frozenset[int]) -> CowDict:
    """A copy-on-write copy of `base` (see the module docstring)."""
    return CowDict(base, shared)


def _own(value: Any, shared: frozenset[int]) -> Any:
    """`value` if it is not the base's; else a copy-on-write copy of it."""
    kind = type(value)
    if kind is dict and id(value) in shared:
        return CowDict(value, shared)
    if kind is list and id(value) in shared:
        return CowList(value, shared)
    return value


class CowDict(dict):  # type: ignore[type-arg]
    """A dict whose values still shared with the base are copied when first read."""

    __slots__ = ("_shared",)

    def __init__(self, source: dict[str, Any], shared: frozenset[int]) -> None:
        dict.__init__(self, source)
        self._shared = shared

    def _at(self, key: Any) -> Any:
        value = _dict_get(self, key)
        owned = _own(value, self._shared)
        if owned is not value:
            _dict_set(self, key, owned)
        return owned

    def _own_all(self) -> None:
        shared = self._shared
        for key, value in dict.items(self):
            if (type(value) is dict or type(value) is list) and id(value) in shared:
                _dict_set(self, key, _own(value, shared))

    def __getitem__(self, key: Any) -> Any:
        return self._at(key)

    def get(self, key: Any, default: Any = None) -> Any:
        return self._at(key) if key in self else default

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key in self:
            return self._at(key)
        _dict_set(self, key, default)
        return default

    def pop(self, key: Any, *default: Any) -> Any:
        if key in self:
            value = self._at(key)
            dict.__delitem__(self, key)
            return value
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[Any, Any]:
        key, value = dict.popitem(self)
        return key, _own(value, self._shared)

    def values(self) -> Any:
        self._own_all()
        return dict.values(self)

    def items(self) -> Any:
        self._own_all()
        return dict.items(self)

    def __iter__(self) -> Iterator[Any]:
        # Defined so that `dict(d)`, `{**d}` and `update(d)` read through `keys()` and
        # `__getitem__` instead of copying the storage as it is.
        return dict.__iter__(self)

    def copy(self) -> dict[str, Any]:
        self._own_all()
        return dict(dict.items(self))

    __copy__ = copy

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        memo[id(self)] = result
        for key, value in dict.items(self):
            result[copy.deepcopy(key, memo)] = copy.deepcopy(value, memo)
        return result

    def __reduce__(self) -> Any:
        return (dict, (dict(dict.items(self)),))

    def __or__(self, other: Any) -> Any:
        self._own_all()
        return dict.__or__(self, other)

    def __ror__(self, other: Any) -> Any:
        self._own_all()
        return dict.__ror__(self, other)


class CowList(list):  # type: ignore[type-arg]
    """A list whose items still shared with the base are copied when first read."""

    __slots__ = ("_shared",)

    def __init__(self, source: list[Any], shared: frozenset[int]) -> None:
        list.__init__(self, source)
        self._shared = shared

    def _at(self, index: SupportsIndex) -> Any:
        value = _list_get(self, index)
        owned = _own(value, self._shared)
        if owned is not value:
            _list_set(self, index, owned)
        return owned

    def _own_all(self) -> None:
        shared = self._shared
        for index, value in enumerate(list.__iter__(self)):
            if (type(value) is dict or type(value) is list) and id(value) in shared:
                _list_set(self, index, _own(value, shared))

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            for at in range(*index.indices(len(self))):
                self._at(at)
            return _list_get(self, index)
        return self._at(index)

    def __iter__(self) -> Iterator[Any]:
        at = 0
        while at < len(self):
            yield self._at(at)
            at += 1

    def __reversed__(self) -> Iterator[Any]:
        at = len(self) - 1
        while at >= 0:
            if at < len(self):
                yield self._at(at)
            at -= 1

    def pop(self, index: SupportsIndex = -1) -> Any:
        return _own(list.pop(self, index), self._shared)

    def copy(self) -> list[Any]:
        self._own_all()
        return list(list.__iter__(self))

    __copy__ = copy

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        result: list[Any] = []
        memo[id(self)] = result
        result.extend(copy.deepcopy(value, memo) for value in list.__iter__(self))
        return result

    def __reduce__(self) -> Any:
        return (list, (list(list.__iter__(self)),))

    def __add__(self, other: Any) -> Any:
        self._own_all()
        return list.__add__(self, other)

    def __radd__(self, other: Any) -> Any:
        self._own_all()
        return list.__add__(list(other), self)

    def __mul__(self, times: SupportsIndex) -> Any:
        self._own_all()
        return list.__mul__(self, times)

    __rmul__ = __mul__

    def __imul__(self, times: SupportsIndex) -> Any:
        self._own_all()  # (so each repeated item is one object, as in a plain list)
        return list.__imul__(self, times)
