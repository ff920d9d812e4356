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
        raise _to_config_error(exc, model, doc, loc, what, data) from None


def _to_config_error(
    exc: ValidationError, model: type[BaseModel], doc: YamlDocument, loc: Loc, what: str | None,
    data: Any = None,
) -> ConfigError:
    first = exc.errors()[0]
    err_loc: Sequence[str | int] = _without_tags(data, tuple(first["loc"]))
    full_loc = tuple(loc) + tuple(err_loc)
    where = _dotted(full_loc) or (what or "the document")
    kind = first["type"]
    if kind == "extra_forbidden":
        owner = _model_at(model, err_loc[:-1], data)
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


def _without_tags(data: Any, loc: Sequence[str | int]) -> tuple[str | int, ...]:
    """`loc` without the tag a discriminated union inserts (`metrics[0].pass_at_k.k` is the
    YAML key `metrics[0].k`)."""
    if data is None:
        return tuple(loc)
    out: list[str | int] = []
    current = data
    for part in loc:
        if isinstance(current, dict) and isinstance(part, str) and part not in current \
                and current.get("type") == part:
            continue  # the union's tag: not a key of the document
        out.append(part)
        if isinstance(current, dict) and isinstance(part, str):
            current = current.get(part)
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            current = current[part]
        else:
            current = None
    return tuple(out)


def _model_at(model: type[BaseModel], loc: Sequence[str | int],
              data: Any = None) -> type[BaseModel] | None:
    """Follow `loc` through nested models to the model that owns the last key (in a union
    tagged by `type`, the member the data's `type` names)."""
    current: Any = model
    value = data
    annotation: Any = None
    for part in loc:
        value = value.get(part) if isinstance(value, dict) and isinstance(part, str) else \
            value[part] if isinstance(value, list) and isinstance(part, int) \
            and 0 <= part < len(value) else None
        if isinstance(part, int):
            tagged = _tagged_member(annotation, value) if annotation is not None else None
            if tagged is not None:
                current = tagged
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = current.model_fields.get(str(part))
        if field is None:
            return None
        annotation = field.annotation
        current = _inner_model(annotation)
        tagged = _tagged_member(annotation, value)
        if tagged is not None:
            current = tagged
    if isinstance(current, type) and issubclass(current, BaseModel):
        return current
    return None


def _tagged_member(annotation: Any, value: Any) -> type[BaseModel] | None:
    """The model of a union whose `type` literal is the `type` of `value`."""
    tag = value.get("type") if isinstance(value, dict) else None
    if tag is None:
        return None
    for member in _inner_models(annotation):
        field = member.model_fields.get("type")
        if field is not None and tag in (getattr(field.annotation, "__args__", None) or ()):
            return member
    return None


def _inner_models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in getattr(annotation, "__args__", ()) or ():
        found.extend(_inner_models(arg))
    return found


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
