"""Load the system under test from `system.callable` or `system.factory` and check its
declaration (docs/configuration.md#system)."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oloproof.errors import ConfigError
from oloproof.execution.exits import CONTAINED, from_a_signal
from oloproof.recording.declaration import declaration_of
from oloproof.recording.protocols import Replayable, Stateful
from oloproof.suite.config import SystemConfig
from oloproof.suite.yaml_source import YamlDocument

if TYPE_CHECKING:
    from oloproof.execution.otel_trace import OtelTrace


@dataclass
class SystemTarget:
    """The callable under test and what it can do."""

    call: Any
    is_async: bool
    stateful: Stateful | None
    replayable: Replayable | None
    label: str
    # `system.trace: otel`: the engine records the trajectory from the system's spans.
    trace: OtelTrace | None = None


def _is_async(target: Any) -> bool:
    if inspect.iscoroutinefunction(target):
        return True
    method = getattr(target, "__call__", None)  # noqa: B004 - instances with async __call__
    return method is not None and inspect.iscoroutinefunction(method)


def load_target(config: SystemConfig, project_dir: Path, doc: YamlDocument) -> SystemTarget:
    """Import the system (`system.callable`, or one instance from `system.factory`)."""
    return load_targets(config, project_dir, doc, 1)[0]


def load_targets(config: SystemConfig, project_dir: Path, doc: YamlDocument,
                 count: int, have: Sequence[SystemTarget] = ()) -> list[SystemTarget]:
    """Import `module:attribute` with the project directory on sys.path; `count` systems.

    With `system.factory` the factory is called `count` times, and each call must return a
    new object (each is one worker's system and sandbox, docs/scaling.md#configuration). `have`
    are systems an earlier call made already: they count among the `count`, and the new ones must
    differ from them too. With `system.callable` there is one object, whatever `count` is.
    """
    key = config.entry_key
    if have and config.factory is None:
        return list(have)
    entry = _import_entry(config, project_dir, doc)
    line = doc.line_of(("system", key))
    if config.factory is None:
        made = [entry() if inspect.isclass(entry) else entry]
    else:
        if not callable(entry):
            raise ConfigError(
                f"system.factory {config.factory!r} is not callable; point it at a function (or "
                "class) that takes no arguments and returns a fresh system",
                file=doc.path, line=line,
            )
        made = [target.call for target in have]
        for call in range(len(have), count):
            try:
                system = entry()
            except CONTAINED as exc:  # (a factory that calls sys.exit is refused, in words)
                if from_a_signal(exc):
                    raise
                detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                raise ConfigError(
                    f"system.factory {config.factory!r} raised when called (call {call + 1} of "
                    f"{count}): {detail}", file=doc.path, line=line,
                ) from None
            if any(system is other for other in made):
                raise ConfigError(
                    f"system.factory {config.factory!r} returned the same object twice; each "
                    "worker needs its own system with its own sandbox, so the factory must "
                    "build a new one on every call", file=doc.path, line=line,
                )
            made.append(system)
    return [*have, *(_target_of(system, config, doc) for system in made[len(have):])]


def _import_entry(config: SystemConfig, project_dir: Path, doc: YamlDocument) -> Any:
    key = config.entry_key
    module_name, _, attribute = config.entry.partition(":")
    line = doc.line_of(("system", key))
    root = put_on_path(project_dir)
    forget_foreign(module_name, Path(root))
    try:
        module = importlib.import_module(module_name)
        remember_imports(Path(root))
    except CONTAINED as exc:  # (argparse at import time calls sys.exit: refused, in words)
        if from_a_signal(exc):
            raise
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        raise ConfigError(
            f"cannot import the system module {module_name!r} (system.{key}): {detail}",
            file=doc.path, line=line,
        ) from None
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ConfigError(
                f"module {module_name!r} has no attribute {attribute!r} (system.{key})",
                file=doc.path, line=line,
            )
        target = getattr(target, part)
    return target


def _target_of(target: Any, config: SystemConfig, doc: YamlDocument) -> SystemTarget:
    key = config.entry_key
    line = doc.line_of(("system", key))
    if not callable(target):
        what = (f"system.callable {config.callable!r} is not callable" if key == "callable"
                else f"system.factory {config.factory!r} returned a {type(target).__name__}, "
                "which is not callable")
        raise ConfigError(
            f"{what}; point it at a function or an object with __call__",
            file=doc.path, line=line,
        )
    _check_declaration(target, config, doc)
    stateful = target if isinstance(target, Stateful) else None
    replayable = target if isinstance(target, Replayable) else None
    if stateful is not None and not _is_async(target):
        for method in ("reset", "snapshot"):
            if inspect.iscoroutinefunction(getattr(stateful, method)):
                raise ConfigError(
                    f"{config.entry}.{method}() is async but the system call is sync, so "
                    "it would never be awaited and the sandbox would not be reset; make "
                    f"{method}() a plain method, or make the call async",
                    file=doc.path, line=line,
                )
    trace = None
    if config.trace == "otel":
        from oloproof.execution.otel_trace import otel_trace

        trace = otel_trace(doc.path, doc.line_of(("system", "trace")))
    return SystemTarget(
        call=target,
        is_async=_is_async(target),
        stateful=stateful,
        replayable=replayable,
        label=config.entry,
        trace=trace,
    )


def put_on_path(project_dir: Path) -> str:
    """Put the project directory first on sys.path (its modules win over same-named ones)."""
    root = str(project_dir.resolve())
    if root in sys.path:
        sys.path.remove(root)
    sys.path.insert(0, root)
    return root


def forget_foreign(module_name: str, root: Path) -> None:
    """Drop an already imported module of the same name from another project, and every
    module of this project whose file changed since it was imported.

    Projects commonly name their system module `app` (and their judge's `judges`); in one
    process (a notebook, a test session) the second project must get its own `app`, not the
    first one's. And a run after `app.py` was edited must call the edited code, not the
    module imported by an earlier run in the same process (under the new `system.version`,
    the old code's results would be stored as the new version's).
    """
    _forget_changed(root)
    top = module_name.split(".", 1)[0]
    loaded = sys.modules.get(top)
    if loaded is None:
        return
    origin = getattr(loaded, "__file__", None)
    if origin is None or Path(origin).resolve().is_relative_to(root):
        return
    if not (root / f"{top}.py").exists() and not (root / top).is_dir():
        return
    _drop(n for n in list(sys.modules) if n == top or n.startswith(top + "."))


#: Each project module imported so far, by name: its file, and that file's modification time
#: and size when it was imported (`remember_imports`). One whose file differs now is imported
#: again (`forget_foreign`).
_IMPORTED: dict[str, tuple[str, int, int] | None] = {}


def remember_imports(root: Path) -> None:
    """Note the file of each module of the project at `root` imported now and not noted yet
    (call it after importing the project's modules)."""
    for name, origin in _project_modules(root):
        if name not in _IMPORTED:
            _IMPORTED[name] = _stamp(origin)


def _forget_changed(root: Path) -> None:
    modules = _project_modules(root)
    changed = [origin for name, origin in modules
               if name in _IMPORTED and _IMPORTED[name] != _stamp(origin)]
    for origin in changed:
        _drop_bytecode(origin)
    if changed:
        _drop(name for name, _ in modules)


def _drop_bytecode(origin: str) -> None:
    """Delete the cached bytecode of a project file that changed since it was imported.

    Python trusts a `__pycache__` file whose recorded source modification time, in whole
    seconds, and size match the source's: a file edited within the second it was compiled in,
    to the same size (`60` to `10`), would be imported again as its old code, under the new
    file's digest. Imported again from its source, it is the code the run keys."""
    with contextlib.suppress(ValueError, NotImplementedError, OSError):
        os.unlink(importlib.util.cache_from_source(origin))


def _project_modules(root: Path) -> list[tuple[str, str]]:
    """(name, file) of each imported module that is the project's own: a file or package at
    the top of `root` named as the module's top name (never a library installed under it, as
    in a virtual environment inside the project folder)."""
    found = []
    prefix = str(root)
    # Only a module whose top name is a file or folder at the top of `root`, or was noted
    # before (`_IMPORTED`: its file may be gone since), can be the project's; only those
    # modules are looked at. Reading every imported module's `__file__` writes to every
    # module object (its reference count), which in a process forked from one that imported
    # the libraries (the tests' fork server) copies some 2,000 pages it shared: 7 ms of CPU.
    try:
        tops = {entry.removesuffix(".py") for entry in os.listdir(root)}
    except OSError:
        tops = set()
    tops.update(name.partition(".")[0] for name in _IMPORTED)
    # list() copies the names in one step: another thread (Ray's, the caller's) may import
    # while this runs, and iterating over the live dict can then skip names or raise.
    under_root = [(name, origin) for name in list(sys.modules)
                  if name.partition(".")[0] in tops
                  and isinstance(origin := getattr(sys.modules.get(name), "__file__", None), str)
                  and origin.startswith(prefix)]
    for name, origin in under_root:
        try:
            first = Path(origin).relative_to(root).parts[0]
        except (ValueError, IndexError):
            continue
        top = name.split(".", 1)[0]
        if first in (top, f"{top}.py"):
            found.append((name, origin))
    return found


def _stamp(origin: str) -> tuple[str, int, int] | None:
    try:
        status = os.stat(origin)
    except OSError:
        return None
    return origin, status.st_mtime_ns, status.st_size


def _drop(names: Iterable[str]) -> None:
    for name in list(names):
        sys.modules.pop(name, None)
        _IMPORTED.pop(name, None)


def _check_declaration(target: Any, config: SystemConfig, doc: YamlDocument) -> None:
    declared = declaration_of(target) or declaration_of(type(target))
    if declared is None:
        return
    pairs = [
        ("name", declared.name, config.name),
        ("version", declared.version, config.version),
        ("records", list(declared.records) if declared.records is not None else None,
         list(config.records)),
    ]
    for key, in_code, in_yaml in pairs:
        if in_code is not None and in_code != in_yaml:
            raise ConfigError(
                f"@system declares {key}={in_code!r} but oloproof.yaml says system.{key}: "
                f"{in_yaml!r}; make them agree",
                file=doc.path, line=doc.line_of(("system", key)) or doc.line_of(("system",)),
            )
