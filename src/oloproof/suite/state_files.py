"""Referenced initial states (`"initial_state": {"$ref": "states/a.json"}`): each file found
inside the project, read strictly and digested once per run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from oloproof.digest import digest
from oloproof.errors import ConfigError
from oloproof.suite.json_lines import LineRefused, file_problem, read_json_line


class StateFiles:
    """Referenced initial states: each file read and digested once per run.

    `base` is the folder paths are relative to (the dataset's); `root`, when given, the folder
    every referenced file must be inside once links are followed (the project's), so a case
    can never read, store and show a file from elsewhere (`../../etc/passwd`, `/etc/hosts`)."""

    def __init__(self, base: Path, root: Path | None = None) -> None:
        self.base = base
        self.root = root.resolve() if root is not None else None
        self._by_path: dict[Path, tuple[str, dict[str, Any]]] = {}
        self.by_digest: dict[str, dict[str, Any]] = {}

    def resolve(self, ref: str, *, file: Path, line: int, case: str) -> tuple[str, dict[str, Any]]:
        path = (self.base / ref).resolve()
        found = self._by_path.get(path)
        if found is None:
            if self.root is not None and not path.is_relative_to(self.root):
                raise ConfigError(
                    f"initial_state refers to {ref!r}, which is {path}, outside the project "
                    f"folder {self.root}; a state file must be inside the project (paths are "
                    "relative to the dataset file)",
                    file=file, line=line, case=case,
                )
            problem = file_problem(path)
            if problem is not None:
                raise ConfigError(
                    f"initial_state refers to {ref!r}, which {problem} (paths are relative "
                    "to the dataset file)",
                    file=file, line=line, case=case,
                )
            try:
                state = read_json_line(path.read_text(encoding="utf-8"))
            except LineRefused as exc:
                raise ConfigError(f"initial_state file {ref!r} {exc}", file=file, line=line,
                                  case=case) from None
            except FileNotFoundError:
                raise ConfigError(
                    f"initial_state refers to {ref!r}, which does not exist (paths are relative "
                    "to the dataset file)",
                    file=file, line=line, case=case,
                ) from None
            except (OSError, ValueError) as exc:
                raise ConfigError(
                    f"initial_state file {ref!r} is not readable JSON: {exc}",
                    file=file, line=line, case=case,
                ) from None
            if not isinstance(state, dict):
                raise ConfigError(
                    f"initial_state file {ref!r} must hold a JSON object",
                    file=file, line=line, case=case,
                )
            found = (digest(state), state)
            self._by_path[path] = found
            self.by_digest[found[0]] = state
        return found
