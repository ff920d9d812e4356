"""The base of every configuration model, and pydantic's validation errors turned into one
ConfigError that says where and what to do, in plain words."""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from oloproof.errors import ConfigError
from oloproof.suite.yaml_source import Loc, YamlDocument

M = TypeVar("M", bound=BaseModel)

STRICT_BOOL = "strict_bool"
"""The error type of a quoted or numeric value where true or false is wanted; its context
names the key (the error is raised for the mapping, before its fields are read)."""

STRICT_VALUE = "strict_value"
"""The error type of a value pydantic would quietly turn into another (`"0.95"` or `true` for a
number, `.nan` or `.inf`, `3.0` for a whole number, `true` for `version: 1`); its context names
the key and holds the message, which says what to write."""


def _members(annotation: Any) -> tuple[Any, ...]:
    """The types a field takes, without None (`float | None` → `(float,)`)."""
    if get_origin(annotation) in (Union, types.UnionType):
        return tuple(a for a in get_args(annotation) if a is not type(None))
    return (annotation,)


def _takes_bool(annotation: Any) -> bool:
    return bool in _members(annotation)


def _yaml_text(value: Any) -> str:
    """A scalar as YAML writes it (`true`, `.nan`, `-.inf`; text quoted: `'0.95'`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    return repr(value)


def _number_text(value: float) -> str:
    return str(int(value)) if value == int(value) and abs(value) < 1e15 else repr(value)


def _example(key: str, field: FieldInfo, whole: bool) -> str:
    """`; write e.g. trials: 3`: the field's first example, else its numeric default."""
    examples = field.examples or []
    example = examples[0] if examples else field.default
    if isinstance(example, bool) or not isinstance(example, int | float):
        return ""
    return f"; write a {'whole number' if whole else 'number'}, e.g. {key}: " \
        f"{_number_text(example)}"


def _scalar_problem(key: str, field: FieldInfo, value: Any) -> str | None:
    """Why `value` is not what the field takes, where pydantic's lax mode would convert it
    into something the file did not say; None when it is fine (or pydantic will refuse it)."""
    members = _members(field.annotation)
    if any(get_origin(m) is Literal for m in members):
        literals = [v for m in members if get_origin(m) is Literal for v in get_args(m)]
        if all(isinstance(v, int) and not isinstance(v, bool) for v in literals) and (
                isinstance(value, bool | float)):
            accepted = " or ".join(str(v) for v in literals)
            return f"must be {accepted}, not {_yaml_text(value)}: write {key}: {literals[0]}"
        return None
    if not members or not all(m in (int, float) for m in members):
        return None
    whole = float not in members
    noun = "a whole number" if whole else "a number"
    if value is None:
        return None
    if isinstance(value, bool):
        return f"must be {noun}, not true or false (got {_yaml_text(value)})" + \
            _example(key, field, whole)
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if math.isfinite(number) and (not whole or number == int(number)):
            return f"must be {noun}, unquoted: write {key}: {value.strip()} (got " \
                f"{_yaml_text(value)})"
        return f"must be {noun} (got {_yaml_text(value)})" + _example(key, field, whole)
    if isinstance(value, float):
        if not math.isfinite(value):
            return f"must be a finite number (got {_yaml_text(value)})" + \
                _example(key, field, whole)
        if whole:
            if value == int(value):
                return f"must be a whole number: write {key}: {int(value)} (got {value!r})"
            return f"must be a whole number (got {value!r})" + _example(key, field, whole)
    return None


class ConfigModel(BaseModel):
    """A model of a YAML mapping: unknown keys are errors, and a value is read as written:
    a field that takes true or false takes only those (pydantic would read `ordered: "no"`,
    `"off"` or `0` as false), and a number is a finite number, unquoted, not true or false
    (pydantic would read `min: "0.95"` as 0.95, `trials: true` as 1, `version: true` as 1,
    and take `.nan` or `.inf`), a whole number not written `3.0`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _strict_scalars(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, field in cls.model_fields.items():
                key = field.alias or name
                if key not in data:
                    continue
                value = data[key]
                if value is not None and not isinstance(value, bool) \
                        and _takes_bool(field.annotation):
                    raise PydanticCustomError(
                        STRICT_BOOL, "must be true or false, unquoted (got {got})",
                        {"key": key, "got": repr(value)})
                problem = _scalar_problem(key, field, value)
                if problem is not None:
                    raise PydanticCustomError(STRICT_VALUE, "{message}",
                                              {"key": key, "message": problem})
        return data


def version_text(value: object) -> object:
    """A version as text: `version: 3` or `1.1` in YAML is a number, and a version is a label
    (a system's, or the one a baseline names), so numbers are read as their text."""
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else value


# ---- patterns, in words ---------------------------------------------------------------------

#: What a field checked against a pattern must look like, in words, by pattern: a regular
#: expression says nothing to the person who wrote the YAML (`must match the pattern ^[A-Za-z_]…`).
_PATTERN_WORDS: dict[str, Callable[[Any], str]] = {}


def worded_pattern(pattern: str, words: Callable[[Any], str]) -> str:
    """Register `words(value)` as what a value failing `pattern` is told; returns `pattern`
    (for `Field(pattern=worded_pattern(...))`)."""
    _PATTERN_WORDS[pattern] = words
    return pattern


def _entry_point_words(value: Any) -> str:
    text = f"write module:attribute, e.g. app:run (got {value!r}"
    if isinstance(value, str) and ":" not in value and "." in value.strip("."):
        module, _, attribute = value.rpartition(".")
        text += f": did you mean {module + ':' + attribute!r}?"
    return text + ")"


#: `module:attribute`, imported from the suite's directory (a system, a factory, a check).
ENTRY_POINT = worded_pattern(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$", _entry_point_words)
#: A name written in ids and paths.
PLAIN_NAME = worded_pattern(
    r"^[A-Za-z0-9_-]+$",
    lambda value: f"use letters, digits, _ and - only (got {value!r})")


def closest(word: str, choices: Sequence[str]) -> str | None:
    """The one of `choices` that `word` most likely misspells (difflib), or None."""
    import difflib

    close = difflib.get_close_matches(word, [c for c in choices if c != word], n=1, cutoff=0.6)
    return close[0] if close else None


def suggestion(word: str, choices: Sequence[str]) -> str:
    """` (did you mean 'mode'?)` when `word` is close to one of `choices` (else empty)."""
    close = closest(word, choices)
    return f" (did you mean {close!r}?)" if close else ""


def unknown_key(key: object, accepted: Sequence[str], where: str = "") -> str:
    """`unknown key 'mdoe' in evaluators[2] (did you mean 'mode'?); accepted keys: …` (`where`
    empty: a top-level key)."""
    message = f"unknown key {key!r} in {where}" if where else f"unknown top-level key {key!r}"
    message += suggestion(str(key), accepted)
    return message + (f"; accepted keys: {', '.join(accepted)}" if accepted else "")


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
    raw_loc: tuple[str | int, ...] = tuple(first["loc"])
    if first["type"] in (STRICT_BOOL, STRICT_VALUE):
        raw_loc = (*raw_loc, first["ctx"]["key"])
    err_loc: Sequence[str | int] = _without_tags(data, raw_loc)
    full_loc = tuple(loc) + tuple(err_loc)
    where = _dotted(full_loc) or (what or "the document")
    kind = first["type"]
    if kind == "extra_forbidden":
        owner = _model_at(model, err_loc[:-1], data)
        message = unknown_key(err_loc[-1], accepted_fields(owner) if owner else [],
                              _dotted(full_loc[:-1]) or "the top level")
    elif kind == "missing":
        message = f"{where} is required but missing"
    else:
        message = f"{where}: {plain_message(first)}"
        if "input" in first and not isinstance(first["input"], dict | list) \
                and "(got " not in message:
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
    for at, part in enumerate(loc):
        if isinstance(current, dict) and isinstance(part, str) and at + 1 < len(loc) \
                and current.get("type") == part:
            continue  # the union's tag (followed by the key it concerns): not a YAML key
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


def error_location(error: Any) -> str:
    """Where one pydantic error is, written as a YAML path (`rules[0].min`)."""
    loc = tuple(error.get("loc") or ())
    if error.get("type") in (STRICT_BOOL, STRICT_VALUE):
        loc = (*loc, error["ctx"]["key"])
    return _dotted(loc)


def _dotted(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _items(count: Any, noun: str = "item") -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


# pydantic's error types, in the words of a YAML file (its own messages speak of Python:
# "Tuple should have at least 1 item after validation", "Input should be a valid dictionary").
_PLAIN: dict[str, Callable[[dict[str, Any]], str]] = {
    "too_short": lambda c: f"needs at least {_items(c.get('min_length'))}",
    "too_long": lambda c: f"takes at most {_items(c.get('max_length'))}",
    "string_too_short": lambda c: "must not be empty" if c.get("min_length") == 1
    else f"needs at least {_items(c.get('min_length'), 'character')}",
    "string_too_long": lambda c: f"takes at most {_items(c.get('max_length'), 'character')}",
    "string_type": lambda c: "must be a string (text)",
    "string_pattern_mismatch": lambda c: f"must match the pattern {c.get('pattern')}",
    "bool_type": lambda c: "must be true or false",
    "bool_parsing": lambda c: "must be true or false",
    "int_type": lambda c: "must be a whole number",
    "int_parsing": lambda c: "must be a whole number",
    "int_from_float": lambda c: "must be a whole number",
    "float_type": lambda c: "must be a number",
    "float_parsing": lambda c: "must be a number",
    "finite_number": lambda c: "must be a finite number",
    "list_type": lambda c: "must be a list",
    "tuple_type": lambda c: "must be a list",
    "set_type": lambda c: "must be a list",
    "dict_type": lambda c: "must be a mapping (keys with values)",
    "model_type": lambda c: "must be a mapping (keys with values)",
    "model_attributes_type": lambda c: "must be a mapping (keys with values)",
    "literal_error": lambda c: f"must be {c.get('expected')}",
    "enum": lambda c: f"must be {c.get('expected')}",
    "greater_than": lambda c: f"must be greater than {c.get('gt')}",
    "greater_than_equal": lambda c: f"must be at least {c.get('ge')}",
    "less_than": lambda c: f"must be less than {c.get('lt')}",
    "less_than_equal": lambda c: f"must be at most {c.get('le')}",
    "union_tag_invalid": lambda c: f"type {c.get('tag')!r} is not one of "
    f"{c.get('expected_tags')}",
    "union_tag_not_found": lambda c: f"needs a {c.get('discriminator', 'type')!s} key",
    STRICT_BOOL: lambda c: f"must be true or false, unquoted (got {c.get('got')})",
    STRICT_VALUE: lambda c: str(c.get("message")),
}


def plain_message(error: Any) -> str:
    """One pydantic error in plain words: what the value must be (validators' own texts as
    they are, without pydantic's "Value error, " prefix)."""
    kind = str(error.get("type", ""))
    if kind in ("value_error", "assertion_error"):
        text = str(error.get("msg", ""))
        return text.split(", ", 1)[1] if text.startswith(("Value error, ", "Assertion failed, "))\
            else text
    if kind == "string_pattern_mismatch":
        words = _PATTERN_WORDS.get(str((error.get("ctx") or {}).get("pattern")))
        if words is not None:
            return words(error.get("input"))
    plain = _PLAIN.get(kind)
    if plain is None:
        return str(error.get("msg", "is not valid"))
    return plain(dict(error.get("ctx") or {}))
