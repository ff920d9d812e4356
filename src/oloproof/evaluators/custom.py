"""Custom evaluators: `@evaluator(name=...)` on `check(case, output, artifacts)`
(docs/configuration.md#evaluators).

Used in oloproof.yaml as `{type: custom, name: NAME, criterion: ..., callable: module:function}`
(`callable` imports the module that registers NAME; it may be left out when the system's own
module already does). The function returns True (passed), False (failed) or None (missing);
an exception makes the case missing with the error kept.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

from pydantic import Field, field_validator

from oloproof.errors import ConfigError
from oloproof.evaluators.base import Evaluator, EvaluatorConfig, register
from oloproof.evaluators.evidence import Evidence
from oloproof.evaluators.judgment import Judgment, failed, missing, passed
from oloproof.evaluators.registry import REGISTRY, CheckFunction
from oloproof.suite.validation import ENTRY_POINT, version_text

F = TypeVar("F", bound=CheckFunction)


def evaluator(name: str) -> Callable[[F], F]:
    """Register `check(case, output, artifacts) -> bool | None` as custom evaluator `name`.

    A name is registered once (`oloproof.evaluators.registry`).

    Raises:
        ConfigError: a check or an evaluator type is registered under the same name
            elsewhere; the message names both places.
    """

    def attach(function: F) -> F:
        REGISTRY.add(name, "check", function)
        return function

    return attach


def _import_check(reference: str) -> CheckFunction:
    """The function `module:attribute` names; LookupError saying what is wrong if it cannot be
    had (a missing module, a module that fails to import, a missing or uncallable attribute)."""
    module_name, _, attribute = reference.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ConfigError:  # raised on purpose while importing (a name registered twice)
        raise
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            raise LookupError(
                f"callable {reference!r}: there is no module {exc.name!r} (modules are imported "
                "from the directory of oloproof.yaml)"
            ) from None
        raise LookupError(f"callable {reference!r}: importing {module_name!r} failed: {exc}") \
            from None
    except Exception as exc:  # the user's module raised while importing
        raise LookupError(
            f"callable {reference!r}: importing {module_name!r} raised "
            f"{type(exc).__name__}: {exc}"
        ) from None
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            where = getattr(module, "__file__", None) or module_name
            raise LookupError(
                f"callable {reference!r}: {where} has no {attribute!r}; name the function "
                "decorated with @oloproof.evaluator(name=...)"
            )
        target = getattr(target, part)
    if not callable(target):
        raise LookupError(f"callable {reference!r} is not a function (it is a "
                          f"{type(target).__name__})")
    return cast(CheckFunction, target)


@register("custom")
class Custom(Evaluator):
    """A user's check function, registered with `@oloproof.evaluator(name=...)`.

    Its judgments are keyed by its configuration and by the source of the module that defines
    the check and of the project modules that module imports (docs/concepts.md#digests-and-keys):
    an edited check judges every case again, without calling the system.

    Args:
        name: the registered name.
        callable: `module:function` to import (optional when already imported).
        version: a label in the judgments' key: change it when the check's behaviour changes
            where its source does not show it (data it reads, a library it calls).
    """

    class Config(EvaluatorConfig):
        name: str = Field(min_length=1)
        callable: str | None = Field(default=None, pattern=ENTRY_POINT)
        version: str | None = Field(default=None, min_length=1)

        @field_validator("version", mode="before")
        @classmethod
        def _version_text(cls, value: object) -> object:
            return None if value is None else version_text(value)

    config: Config

    def __init__(self, config: EvaluatorConfig, base_dir: Path | None = None) -> None:
        super().__init__(config, base_dir)
        name = self.config.name
        if self.config.callable:
            # Importing the module registers what it decorates; a function it names without
            # decorating it is registered under `name` here, by the same rule.
            REGISTRY.add(name, "check", _import_check(self.config.callable))
        entry = REGISTRY.get(name)
        if entry is not None and entry.kind == "type":
            raise LookupError(
                f"{name!r} is an evaluator type, not a custom check: write {{type: {name}}}"
            )
        check = REGISTRY.check(name)
        if check is None:
            known = ", ".join(REGISTRY.names("check")) or "none"
            raise LookupError(
                f"no custom evaluator named {name!r} is registered (registered: "
                f"{known}); decorate it with @oloproof.evaluator(name=...) and give "
                "callable: module:function"
            )
        self._check = check
        self.code = check

    def default_criterion(self) -> str:
        return self.config.name

    def judge(self, evidence: Evidence) -> Judgment:
        result = self._check(evidence.case.stored_form(), evidence.output, evidence.artifacts)
        if result is None:
            return missing("check_returned_none")
        return passed() if result else failed()

