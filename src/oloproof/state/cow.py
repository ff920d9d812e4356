"""Copy-on-write copies of a large initial state: a reset need not rebuild what the case will not
touch (docs/scaling.md#large-sandboxes).

`frozen(state)` is built once per state and worker: the same values in `FrozenDict` /
`FrozenList`, `dict` / `list` subclasses whose every mutating method raises. `cow_copy(base)`
is what `reset` gets: a `CowDict` holding the frozen base's top-level values, which copies each
frozen container the first time anything reads it (into a mutable `CowDict` / `CowList`, whose
own values are still frozen until read). A case that touches three records of 12,000 copies
those three and the containers above them, not the other 11,997; the untouched parts stay the
frozen base's very objects, so the end state's diff (`diff.py`, which reads these copies
without copying them) skips them by identity. Anything the system stores itself is left as it
stored it (an object put in is the same object read back).

Every way Python code reads a value -- `[]`, `get`, `values`, `items`, iteration, slices,
`pop`, `copy`, `|`, `+`, `*`, `dict(...)`, `{**...}`, `list(...)`, unpacking -- goes through the
copying, so `isinstance(state, dict)` holds and JSON, pickle, `copy` and `deepcopy` work as on a
plain copy. Code in C that reads a dict's storage directly (`dict.__getitem__(d, k)`, some C
extensions) can reach a frozen part; changing it then raises `TypeError`, so such a case errors
instead of changing the state every later case starts from.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any, SupportsIndex

_dict_get = dict.__getitem__
_dict_set = dict.__setitem__
_list_get = list.__getitem__
_list_set = list.__setitem__


FROZEN_MESSAGE = ("this is the shared initial state of a `$ref` case, read past the copy "
                  "reset() was given (by C code reading a dict's storage directly?); it cannot "
                  "be changed: change the copy reset() received")


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise TypeError(FROZEN_MESSAGE)


class FrozenDict(dict):  # type: ignore[type-arg]
    """A dict of the shared base: reads as a dict, refuses every change."""

    __slots__ = ()
    __setitem__ = __delitem__ = _refuse
    pop = popitem = setdefault = update = clear = __ior__ = _refuse

    def __reduce__(self) -> Any:
        return (dict, (dict(self),))

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def copy(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        thawed: dict[str, Any] = _thaw(self)
        return thawed


class FrozenList(list):  # type: ignore[type-arg]
    """A list of the shared base: reads as a list, refuses every change."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __reduce__(self) -> Any:
        return (list, (list(self),))

    def __copy__(self) -> list[Any]:
        return list(self)

    def copy(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        thawed: list[Any] = _thaw(self)
        return thawed


def frozen(state: Any) -> Any:
    """`state` rebuilt in `FrozenDict` / `FrozenList` (scalars shared)."""
    kind = type(state)
    if kind is dict or kind is FrozenDict or kind is CowDict:
        return FrozenDict({key: frozen(value) for key, value in dict.items(state)})
    if kind is list or kind is FrozenList or kind is CowList:
        return FrozenList([frozen(value) for value in list.__iter__(state)])
    return state


def _thaw(state: Any) -> Any:
    """A plain deep copy of a frozen value."""
    kind = type(state)
    if kind is FrozenDict:
        return {key: _thaw(value) for key, value in dict.items(state)}
    if kind is FrozenList:
        return [_thaw(value) for value in list.__iter__(state)]
    return state  # a JSON scalar: immutable


def cow_copy(base: FrozenDict) -> CowDict:
    """A copy-on-write copy of the frozen `base` (see the module docstring)."""
    return CowDict(base)


def _own(value: Any) -> Any:
    """`value` if it is not the base's; else a copy-on-write copy of it."""
    kind = type(value)
    if kind is FrozenDict:
        return CowDict(value)
    if kind is FrozenList:
        return CowList(value)
    return value


class CowDict(dict):  # type: ignore[type-arg]
    """A dict whose values still shared with the base are copied when first read."""

    __slots__ = ()

    def __init__(self, source: dict[str, Any]) -> None:
        dict.__init__(self, source)

    def _at(self, key: Any) -> Any:
        value = _dict_get(self, key)
        owned = _own(value)
        if owned is not value:
            _dict_set(self, key, owned)
        return owned

    def _own_all(self) -> None:
        for key, value in dict.items(self):
            if type(value) is FrozenDict or type(value) is FrozenList:
                _dict_set(self, key, _own(value))

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
        return key, _own(value)

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

    __slots__ = ()

    def __init__(self, source: list[Any]) -> None:
        list.__init__(self, source)

    def _at(self, index: SupportsIndex) -> Any:
        value = _list_get(self, index)
        owned = _own(value)
        if owned is not value:
            _list_set(self, index, owned)
        return owned

    def _own_all(self) -> None:
        for index, value in enumerate(list.__iter__(self)):
            if type(value) is FrozenDict or type(value) is FrozenList:
                _list_set(self, index, _own(value))

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
        return _own(list.pop(self, index))

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
