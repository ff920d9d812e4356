"""`oloproof labels export`: the current pairs of a transform, for a person to label."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from oloproof.errors import ConfigError
from oloproof.suite.config import load_suite_file
from oloproof.suite.dataset import iter_cases, scan_dataset
from oloproof.suite.metamorphic import derive, transform_digest
from oloproof.suite.state_files import StateFiles


def export_pairs(config_path: Path, transform_name: str) -> list[dict[str, Any]]:
    """One row per derived case: both texts, the pair digest, `kept` left null."""
    config, doc = load_suite_file(config_path.resolve())
    transforms = config.metamorphic.transforms if config.metamorphic else ()
    chosen = next((t for t in transforms if t.name == transform_name), None)
    if chosen is None:
        raise ConfigError(
            f"no transform named {transform_name!r}; transforms: "
            + (", ".join(t.name for t in transforms) or "none declared"),
            file=doc.path, line=doc.line_of(("metamorphic",)),
        )
    dataset = (config_path.resolve().parent / config.dataset).resolve()
    states = StateFiles(dataset.parent, config_path.resolve().parent)
    index = scan_dataset(dataset, states)
    t_digest = transform_digest(chosen)
    rows = []
    for case in iter_cases(index, states):
        copy = derive(case, chosen, t_digest, dataset)
        rows.append({
            "case": copy.id,
            "digest": copy.pair_digest,
            "field": chosen.field,
            "source_text": case.input.get(chosen.field),
            "derived_text": copy.input.get(chosen.field),
            "kept": None,
        })
    return rows
