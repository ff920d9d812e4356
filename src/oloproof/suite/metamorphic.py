"""Metamorphic copies (docs/stateful-agents.md#the-same-request-changed-metamorphic-pairs): each
source case gains one derived case per transform."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from oloproof.digest import canonical_json, combine, digest, sha256_text
from oloproof.errors import ConfigError
from oloproof.suite.case import Case
from oloproof.suite.config import TransformConfig


def transform_digest(transform: TransformConfig) -> str:
    """The digest of what a transform does (not of its labels file or bar)."""
    return digest(
        {
            "name": transform.name,
            "field": transform.field,
            "template": transform.template,
            "replace": [list(p) for p in transform.replace] if transform.replace else None,
        }
    )


def apply_transform(transform: TransformConfig, text: str) -> str:
    """The field's new text."""
    if transform.template is not None:
        return transform.template.replace("{value}", text)
    for old, new in transform.replace or ():
        text = text.replace(old, new)
    return text


def derive(source: Case, transform: TransformConfig, t_digest: str, dataset: Path) -> Case:
    """The copy of `source` under `transform`, with its pair digest."""
    value = source.input.get(transform.field)
    if not isinstance(value, str):
        raise ConfigError(
            f"transform {transform.name!r} changes input.{transform.field}, which this case "
            "does not have as text; give every case that field or change the transform",
            file=dataset, line=source.line, case=source.id,
        )
    new_input: dict[str, Any] = dict(source.input)
    new_input[transform.field] = apply_transform(transform, value)
    input_text = canonical_json(new_input)
    state_text = (
        canonical_json({"$state": source.state_ref})
        if source.state_ref is not None
        else canonical_json(source.initial_state)
    )
    case_digest = sha256_text(
        '{"expected":' + canonical_json(source.expected) + ',"initial_state":' + state_text
        + ',"input":' + input_text + ',"metadata":' + canonical_json(source.metadata) + "}"
    )
    return Case(
        id=f"{source.id}~{transform.name}",
        line=source.line,
        input=new_input,
        expected=source.expected,
        initial_state=source.initial_state,
        state_ref=source.state_ref,
        metadata=source.metadata,
        cluster=source.cluster if source.cluster is not None else source.id,
        digest=case_digest,
        exec_digest=sha256_text(input_text + "\x1f" + state_text),
        source_id=source.id,
        transform=transform.name,
        pair_digest=combine(source.digest, t_digest, sha256_text(input_text)),
    )
