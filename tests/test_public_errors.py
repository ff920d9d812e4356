"""Every error a user can meet is importable from `oloproof`, and the public functions say which.

The tree drawn in `errors.py`'s docstring is the hierarchy of its classes, each exported by
`oloproof`; every public function of `oloproof` and `oloproof.api` ends its docstring with a
`Raises:` section, and each class it names is a built-in exception or importable from
`oloproof` — so a user can catch what the docs promise.
"""

from __future__ import annotations

import builtins
import inspect
import re

import pytest

import oloproof
import oloproof.api
from oloproof import errors


def test_the_errors_users_meet_import_from_oloproof() -> None:
    from oloproof import (  # noqa: F401 (the import is the test)
        ConfigError,
        OloproofError,
        RecordingError,
        RunStopped,
        StoreError,
        TraceError,
        UnstorableRecording,
        UsageError,
    )

    assert issubclass(RunStopped, OloproofError) and issubclass(TraceError, OloproofError)


def _descendants(root: type[BaseException]) -> set[type[BaseException]]:
    found: set[type[BaseException]] = set()
    todo = [root]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__ == errors.__name__ and sub not in found:
                found.add(sub)
                todo.append(sub)
    return found


def _drawn_tree() -> dict[str, str | None]:
    """The tree in errors.py's docstring: each class drawn, with the class it is drawn under."""
    doc = errors.__doc__ or ""
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in doc.splitlines():
        drawn = re.match(r"^([ |]*)[*+\-] (\w+)\b", line)
        if drawn is None:
            continue
        depth, name = len(drawn.group(1)), drawn.group(2)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parents[name] = stack[-1][1] if stack else None
        stack.append((depth, name))
    return parents


def test_the_drawn_tree_is_the_hierarchy_and_oloproof_exports_all_of_it() -> None:
    drawn = _drawn_tree()
    classes = {errors.OloproofError} | _descendants(errors.OloproofError)
    assert set(drawn) == {c.__name__ for c in classes}
    for cls in classes:
        parent = cls.__bases__[0]
        assert drawn[cls.__name__] == (None if cls is errors.OloproofError else parent.__name__)
        assert cls.__name__ in oloproof.__all__ and getattr(oloproof, cls.__name__) is cls
        assert cls.__name__ in errors.__all__


def _public_functions() -> list[tuple[str, object]]:
    names = {("oloproof", n) for n in oloproof.__all__} | {("oloproof.api", n)
                                                          for n in oloproof.api.__all__}
    modules = {"oloproof": oloproof, "oloproof.api": oloproof.api}
    found: dict[int, tuple[str, object]] = {}
    for module, name in sorted(names):  # `oloproof.run` before `oloproof.api.run`: one each
        value = getattr(modules[module], name)
        if inspect.isfunction(value):
            found.setdefault(id(value), (f"{module}.{name}", value))
    return sorted(found.values(), key=lambda item: item[0])


def _raised(function: object) -> list[str]:
    """The classes the closing `Raises:` section of a docstring names (none: no section)."""
    doc = inspect.getdoc(function) or ""
    section = re.search(r"^Raises:\n((?:    .*\n?|\n)+)\Z", doc, re.M)
    if section is None:
        return []
    return re.findall(r"^    (\w+):", section.group(1), re.M)


PUBLIC = _public_functions()


def test_the_public_functions_are_many() -> None:
    # The surface this file checks: a mistake in finding it would make the next test vacuous.
    assert len(PUBLIC) >= 20
    assert {"oloproof.run", "oloproof.load_run", "oloproof.api.write_html_report"} <= {
        name for name, _ in PUBLIC}


@pytest.mark.parametrize(("name", "function"), PUBLIC, ids=[n for n, _ in PUBLIC])
def test_each_public_function_says_what_it_raises_and_each_is_importable(
        name: str, function: object) -> None:
    raised = _raised(function)
    assert raised, f"{name}: its docstring ends without a `Raises:` section"
    for error in raised:
        builtin = getattr(builtins, error, None)
        if isinstance(builtin, type) and issubclass(builtin, BaseException):
            continue
        exported = getattr(oloproof, error, None)
        assert isinstance(exported, type) and issubclass(exported, BaseException), (
            f"{name} documents {error}, which `oloproof` does not export")
        assert error in oloproof.__all__
