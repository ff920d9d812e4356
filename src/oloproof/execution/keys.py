"""The cache keys of a run (docs/concepts.md#digests-and-keys), computed in this one place.

`RunKeys` is made once per run from what the suite declares (the system key, the transforms'
digests, each evaluator's key) and is pure: it reads no store and keeps nothing per case, so
the same suite gives the same keys in any process.

- The system key (`system_key`): the system's name and version, and how its trajectory is
  obtained — the kinds it records itself, or `trace: otel` with the version of the engine's
  span reader (`oloproof.traces.OTEL_READER`): switching between them, or a reader that reads
  spans into other steps, runs the executions again.
- An evaluator's key (`evaluator_keys`): its configuration's digest; for a `custom` check also
  the bytes of the module that defines it and of the project modules that module imports
  (`check_sources`), so an edited check judges again without calling the system.
- The execution key: (system, the case's input and initial state — and its user, for a case
  that holds a conversation —, its transform); trial t > 1 adds `trial:t`; a case whose user is
  simulated adds its simulator's definition (`simulator_digest`: a changed model, prompt or
  temperature runs the conversation again).
- A simulated user's conversation key (`conversation`): the simulator's definition, its
  instructions for the case (the prompt template filled from the case's user) and the case's
  seed (`seed`, from the case and the trial); a turn's key adds the conversation so far
  (`turn_key`): a re-run meets the same user, a changed agent reply asks the simulator again
  from that turn on (docs/conversations.md#seeds-and-caching).
- The replay key: (system, the case digest, the fault plan's digest); trial t > 1 the same way.
- The judgments' case key: (execution key, case digest, and for a metamorphic copy its
  source's execution key), cut to `JUDGMENT_CASE_KEY` characters; a judgment's key is it
  followed by the evaluator's config digest (`evaluators`), so nothing is hashed per judgment.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
from collections.abc import Callable, Sequence
from modulefinder import ModuleFinder
from pathlib import Path
from typing import Any

from oloproof.digest import canonical_json, combine, digest, sha256_text
from oloproof.evaluators.base import Evaluator
from oloproof.execution.suite_to_run import SuiteToRun
from oloproof.recording.recorder import Variant
from oloproof.recording.turns import DEFAULT_PROMPT
from oloproof.store.schema import JUDGMENT_CASE_KEY
from oloproof.suite.case import Case
from oloproof.suite.config import SimulatorConfig, SystemConfig
from oloproof.traces import OTEL_READER


def system_key(system: SystemConfig) -> str:
    """The system's part of every execution and replay key: its name and version, and how its
    trajectory is obtained (docs/concepts.md#digests-and-keys)."""
    if system.trace is not None:
        obtained = f"trace:{system.trace}:{OTEL_READER}"
    else:
        obtained = "records:" + ",".join(sorted(system.records))
    return combine(system.name, system.version, obtained)


def check_sources(check: Callable[..., Any], root: Path) -> dict[str, str]:
    """The source a custom check runs, as {module name: SHA-256 of its file's bytes}: the
    module that defines `check`, and each module of the project at `root` that it imports,
    directly or through other project modules (found by `modulefinder` from the source, so a
    module imported only inside a function counts too). Empty when the check has no file (a
    function defined in a notebook cell or `__main__` script: then only its configuration and
    `version:` key it)."""
    name = getattr(check, "__module__", None)
    module = sys.modules.get(name) if isinstance(name, str) else None
    origin = getattr(module, "__file__", None)
    if not isinstance(name, str) or not isinstance(origin, str) or name == "__main__":
        return {}
    files = {name: Path(origin)}
    root = root.resolve()
    if Path(origin).resolve().is_relative_to(root):
        finder = ModuleFinder(path=[str(root)])
        # (a module that does not parse or import: what was found before it still counts)
        with contextlib.suppress(ImportError, SyntaxError):
            finder.import_hook(name)
        for found, found_module in finder.modules.items():
            path = getattr(found_module, "__file__", None)
            if path and Path(path).resolve().is_relative_to(root):
                files[found] = Path(path)
    sources: dict[str, str] = {}
    for module_name, path in sorted(files.items()):
        try:
            sources[module_name] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            sources[module_name] = "unreadable"
    return sources


def evaluator_keys(evaluators: Sequence[Evaluator], root: Path) -> list[str]:
    """Each evaluator's key, the tail of its judgments' keys (96 bits of a digest): its
    configuration's digest, and for a custom check the source it runs (`check_sources`)."""
    keys = []
    for evaluator in evaluators:
        check = evaluator.code
        if check is None:
            keys.append(evaluator.cache_key)
            continue
        keyed = digest({"config": evaluator.config_digest,
                        "source": check_sources(check, root)})
        keys.append(keyed[7:31])
    return keys


def simulator_digest(simulator: SimulatorConfig) -> str:
    """What makes a simulator's turns what they are (docs/conversations.md#seeds-and-caching):
    its definition — name, model (or callable), temperature, version, its `prompt:` — and the
    prompt template it fills (the default's text, when it has no `prompt:`)."""
    return digest({"simulator": simulator.definition(),
                   "template": simulator.prompt or DEFAULT_PROMPT,
                   "structured_output": simulator.structured_output,
                   "max_tokens": simulator.max_tokens})


def seed(case: Case, trial: int) -> int:
    """The seed a simulated user's every request carries (docs/conversations.md#seeds-and-caching):
    from the case (a metamorphic copy's source: a copy meets its source's user) and the trial,
    so each trial meets a different user and a re-run the same one; 31 bits."""
    text = f"{case.source_id or case.id}\x1f{trial}"
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) & 0x7FFFFFFF


def conversation_key(simulator: str, instructions_text: str, case_seed: int) -> str:
    """The key of one simulated user's conversation: the simulator's digest, its instructions
    for the case and the seed. Each turn's key adds the conversation so far (`turn_key`)."""
    return combine(simulator, sha256_text(instructions_text), f"seed:{case_seed}")


def turn_key(conversation: str, turns: Sequence[dict[str, Any]]) -> str:
    """The key of the turn that answers `turns` (the conversation so far: each turn's role and
    text) in the conversation whose key is `conversation`."""
    return combine(conversation, digest([[t["role"], t["text"]] for t in turns]))


class RunKeys:
    """Every cache key of one run, from the suite's parts (see the module docstring)."""

    __slots__ = ("evaluators", "simulators", "system", "transform_digests")

    def __init__(self, system: str, transform_digests: dict[str, str],
                 evaluators: list[str], simulators: dict[str, str] | None = None) -> None:
        self.system = system
        #: transform name -> its digest (a copy's execution key includes its transform's)
        self.transform_digests = transform_digests
        #: each evaluator's short config digest, in the suite's order: the tail of its
        #: judgments' keys
        self.evaluators = evaluators
        #: simulator name -> its digest (`simulator_digest`)
        self.simulators = simulators or {}

    @classmethod
    def of(cls, suite: SuiteToRun, variant: Variant = ()) -> RunKeys:
        """The run's keys; a combination of `system.variants` is part of the system's
        (docs/board.md: each combination executes apart; without variants, the keys are
        those of before)."""
        system = suite.system_key
        if variant:
            system = combine(system, "variant:" + canonical_json(dict(variant)))
        return cls(system, {t.name: d for t, d in suite.transforms},
                   list(suite.evaluator_keys),
                   {s.name: simulator_digest(s) for s in suite.config.simulators})

    def execution(self, case: Case, trial: int = 1) -> str:
        """The execution key; trial t > 1 adds its number (trial 1 keeps the key a run
        without trials has, so `trials: 1` reuses every stored execution, and raising
        `trials` runs only the new trials); a simulated user adds its simulator's digest."""
        transform = self.transform_digests.get(case.transform or "", "")
        key = combine(self.system, case.exec_digest, transform)
        simulator = case.simulator
        if simulator is not None:
            key = combine(key, self.simulators.get(simulator, simulator))
        return key if trial == 1 else combine(key, f"trial:{trial}")

    def replay(self, case: Case, plan_digest: str, trial: int = 1) -> str:
        """The key of a case's fault replay under the plan whose digest is `plan_digest`."""
        key = combine(self.system, case.digest, plan_digest)
        return key if trial == 1 else combine(key, f"trial:{trial}")

    @staticmethod
    def case(case: Case, exec_key: str, source_key: str) -> str:
        """The judgments' shared key of `case` run under `exec_key` (`source_key`: its
        source's execution key, which a metamorphic copy's key includes).

        The case digest covers `expected` and also the metadata: a case whose judgments are
        all cached is then known to be stored already, as it was run."""
        extra = source_key if case.is_derived else ""
        return combine(exec_key, case.digest, extra)[7 : 7 + JUDGMENT_CASE_KEY]

    def judgments(self, case_key: str) -> list[str]:
        """The key of each evaluator's judgment of the case whose key is `case_key`."""
        return [case_key + short for short in self.evaluators]


__all__ = ["RunKeys", "check_sources", "conversation_key", "evaluator_keys", "seed",
           "simulator_digest", "system_key", "turn_key"]
