"""One JSON document checked against the model of its format, or a `TraceError` saying where
it is not (the file, and the first field that is wrong): what every reader of another tool's
files (ATIF, Harbor's results, Every Eval Ever) does first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from oloproof.errors import TraceError

M = TypeVar("M", bound=BaseModel)


def first_problem(exc: ValidationError) -> str:
    """The first thing pydantic found wrong, as `place: message`, and how many more."""
    first = exc.errors()[0]
    place = ".".join(str(p) for p in first["loc"]) or "(the document)"
    more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{place}: {first['msg']}{more}"


def checked_document(source: Any, model: type[M], what: str) -> M:
    """`source` — a file's path, or its parsed JSON — as `model`.

    Raises:
        TraceError: naming the file (when `source` is one) and saying it is not `what`, where.
    """
    where: Path | None = None
    data = source
    if isinstance(source, str | Path):
        where = Path(source)
        try:
            data = json.loads(where.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise TraceError(f"cannot read {what}: {exc}", file=where) from None
        except ValueError as exc:
            raise TraceError(f"not JSON: {exc}", file=where) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise TraceError(f"not {what}: {first_problem(exc)}", file=where) from None
