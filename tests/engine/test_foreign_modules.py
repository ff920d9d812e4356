"""A project's system module of a name another project already imported in this process is
dropped before the project's own is imported (`execution.target.forget_foreign`), also while
another thread imports: Ray's threads and a host program's do."""

from __future__ import annotations

import sys
import threading
import types
from pathlib import Path

from oloproof.execution.target import forget_foreign


def _foreign(name: str, submodules: int) -> None:
    module = types.ModuleType(name)
    module.__file__ = "/another/project/" + name + ".py"
    for k in range(submodules):
        sys.modules[f"{name}.part{k}"] = types.ModuleType(f"{name}.part{k}")
    sys.modules[name] = module


def test_a_foreign_module_and_its_submodules_are_dropped(tmp_path: Path) -> None:
    (tmp_path / "olo_app_a.py").write_text("")
    _foreign("olo_app_a", 3)

    forget_foreign("olo_app_a", tmp_path)

    assert not [n for n in sys.modules if n.split(".")[0] == "olo_app_a"]


def test_while_another_thread_imports_every_foreign_module_is_dropped(tmp_path: Path) -> None:
    """Iterating over the live `sys.modules` while another thread adds and removes entries
    skipped names (or raised 'dictionary changed size during iteration'): the foreign module
    stayed, and the project ran another project's system. Fails on a comprehension over the
    live dict within a few thousand rounds at a short switch interval."""
    (tmp_path / "olo_app_b.py").write_text("")
    stop = threading.Event()

    def importing() -> None:
        i = 0
        while not stop.is_set():
            name = f"_olo_churn_{i % 50}"
            sys.modules[name] = types.ModuleType(name)
            sys.modules.pop(name, None)
            i += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    other = threading.Thread(target=importing)
    other.start()
    try:
        for round_ in range(3000):
            _foreign("olo_app_b", 30)
            forget_foreign("olo_app_b", tmp_path)
            left = [n for n in list(sys.modules) if n.split(".")[0] == "olo_app_b"]
            assert not left, f"round {round_}: {left[:3]} stayed"
    finally:
        stop.set()
        other.join()
        sys.setswitchinterval(interval)
