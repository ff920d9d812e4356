"""Turn pydantic validation errors into one ConfigError that says where and what to do."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from oloproof.errors import ConfigError
from oloproof.suite.yaml_source import Loc, YamlDocument

M = TypeVar("M", bound=BaseModel)


def accepted_fields(model: type[BaseModel]) -> list[str]:
    """The keys a model takes, as written in YAML."""
    return [f.alias or name for name, f in model.model_fields.items()]


def validate_model(
    model: type[M], data: Any, doc: YamlDocument, loc: Loc = (), what: str | None = None
) -> M:
    """Validate `data` (found at `loc` of `doc`) as `model`, or raise a ConfigError."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _to_config_error(exc, model, doc, loc, what) from None


def _to_config_error(
    exc: ValidationError, model: type[BaseModel], doc: YamlDocument, loc: Loc, what: str | None
) -> ConfigError:
    first = exc.errors()[0]
    err_loc: Sequence[str | int] = tuple(first["loc"])
    full_loc = tuple(loc) + tuple(err_loc)
    where = _dotted(full_loc) or (what or "the document")
    kind = first["type"]
    if kind == "extra_forbidden":
        owner = _model_at(model, err_loc[:-1])
        accepted = ", ".join(accepted_fields(owner)) if owner else ""
        message = f"unknown key {err_loc[-1]!r} in {_dotted(full_loc[:-1]) or 'the top level'}"
        if accepted:
            message += f"; accepted keys: {accepted}"
    elif kind == "missing":
        message = f"{where} is required but missing"
    else:
        message = f"{where}: {first['msg']}"
        if "input" in first and not isinstance(first["input"], dict | list):
            message += f" (got {first['input']!r})"
    extra = len(exc.errors()) - 1
    if extra > 0:
        message += f" (and {extra} more problem{'s' if extra > 1 else ''} after this one)"
    return ConfigError(message, file=doc.path, line=doc.line_of(full_loc))


def _model_at(model: type[BaseModel], loc: Sequence[str | int]) -> type[BaseModel] | None:
    """Follow `loc` through nested models to the model that owns the last key."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = current.model_fields.get(str(part))
        if field is None:
            return None
        current = _inner_model(field.annotation)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return current
    return None


def _inner_model(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def _dotted(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out
