"""Build the suite's evaluators from `evaluators:` entries, strictly
(docs/configuration.md#oloproofyaml)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from oloproof.errors import ConfigError
from oloproof.evaluators.base import Evaluator
from oloproof.evaluators.registry import REGISTRY
from oloproof.suite.validation import suggestion, validate_model
from oloproof.suite.yaml_source import YamlDocument


def build_evaluators(
    entries: Sequence[dict[str, Any]], doc: YamlDocument, base_dir: Path
) -> list[Evaluator]:
    """One Evaluator per entry; unknown types or fields are errors listing what is accepted."""
    built: list[Evaluator] = []
    criteria: dict[str, int] = {}
    for i, entry in enumerate(entries):
        loc = ("evaluators", i)
        if not isinstance(entry, dict):
            raise ConfigError(
                "each evaluator is a mapping with a type", file=doc.path, line=doc.line_of(loc)
            )
        type_name = entry.get("type")
        cls = REGISTRY.evaluator_type(type_name) if isinstance(type_name, str) else None
        if cls is None:
            hint = ""
            if isinstance(type_name, str) and REGISTRY.check(type_name) is not None:
                hint = f" ({type_name!r} is a custom check: write type: custom, name: {type_name})"
            elif isinstance(type_name, str):
                hint = suggestion(type_name, REGISTRY.names("type"))
            raise ConfigError(
                f"unknown evaluator type {type_name!r}{hint}; accepted types: "
                + ", ".join(REGISTRY.names("type")),
                file=doc.path,
                line=doc.line_of(loc + ("type",)),
            )
        config = validate_model(cls.Config, entry, doc, loc, what=f"evaluator {type_name}")
        try:
            evaluator = cls(config, base_dir)
        except ConfigError as exc:  # e.g. a name the registry already holds elsewhere
            raise ConfigError(
                f"evaluator {type_name}: {exc.message}", file=doc.path, line=doc.line_of(loc)
            ) from None
        except (LookupError, ValueError, OSError, ImportError) as exc:
            raise ConfigError(
                f"evaluator {type_name}: {exc}", file=doc.path, line=doc.line_of(loc)
            ) from None
        if evaluator.criterion in criteria:
            raise ConfigError(
                f"two evaluators produce criterion {evaluator.criterion!r} (entries "
                f"{criteria[evaluator.criterion] + 1} and {i + 1}); give one a `criterion:` name",
                file=doc.path,
                line=doc.line_of(loc),
            )
        criteria[evaluator.criterion] = i
        built.append(evaluator)
    return built
