"""Plain data that crosses a process boundary: `pickled_by_fields`, a slotted dataclass pickled
as its fields in order (docs/scaling.md#a-cpu-bound-suite).

Jobs go to a worker process and results come back pickled, a batch at a time: per case a job,
a case's result, its execution and stored texts, and a judgment per criterion. A slotted
dataclass pickles through the `__getstate__` / `__setstate__` that `dataclasses` gives it,
Python loops over its fields for every object; a `__reduce__` that returns the class and its
fields (read by one `operator.attrgetter`, in C) is pickled with one call, and unpickled by
the class's own `__init__`. Packing a support_agent job took 6.3 µs and 4.9 µs so; a result,
21 µs and 14 µs, and unpickling one 15 µs and 11 µs.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any, TypeVar

T = TypeVar("T")


def pickled_by_fields(cls: type[T]) -> type[T]:
    """Give a dataclass (of two fields or more, every one an `__init__` argument) a
    `__reduce__` that pickles it as the class and its fields in order."""
    names = [field.name for field in dataclasses.fields(cls)]  # type: ignore[arg-type]
    if len(names) < 2 or any(not field.init for field in dataclasses.fields(cls)):  # type: ignore[arg-type]
        raise TypeError(f"{cls.__name__}: pickled_by_fields needs two fields or more, each "
                        "an argument of __init__")
    fields_of = operator.attrgetter(*names)

    def __reduce__(self: Any) -> tuple[type[T], tuple[Any, ...]]:
        return cls, fields_of(self)

    cls.__reduce__ = __reduce__  # type: ignore[method-assign]
    return cls
