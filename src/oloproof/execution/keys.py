"""The cache keys of a run (docs/concepts.md#digests-and-keys), computed in this one place.

`RunKeys` is made once per run from what the suite declares (the system's name and version,
the transforms' digests, each evaluator's config digest) and is pure: it reads no store and
keeps nothing per case, so the same suite gives the same keys in any process.

- The execution key: (system, the case's input and initial state, its transform); trial t > 1
  adds `trial:t`.
- The replay key: (system, the case digest, the fault plan's digest); trial t > 1 the same way.
- The judgments' case key: (execution key, case digest, and for a metamorphic copy its
  source's execution key), cut to `JUDGMENT_CASE_KEY` characters; a judgment's key is it
  followed by the evaluator's config digest (`evaluators`), so nothing is hashed per judgment.
"""

from __future__ import annotations

from oloproof.digest import combine
from oloproof.execution.suite_to_run import SuiteToRun
from oloproof.store.schema import JUDGMENT_CASE_KEY
from oloproof.suite.case import Case


class RunKeys:
    """Every cache key of one run, from the suite's parts (see the module docstring)."""

    __slots__ = ("evaluators", "system", "transform_digests")

    def __init__(self, system: str, transform_digests: dict[str, str],
                 evaluators: list[str]) -> None:
        self.system = system
        #: transform name -> its digest (a copy's execution key includes its transform's)
        self.transform_digests = transform_digests
        #: each evaluator's short config digest, in the suite's order: the tail of its
        #: judgments' keys
        self.evaluators = evaluators

    @classmethod
    def of(cls, suite: SuiteToRun) -> RunKeys:
        return cls(suite.system_key, {t.name: d for t, d in suite.transforms},
                   [e.cache_key for e in suite.evaluators])

    def execution(self, case: Case, trial: int = 1) -> str:
        """The execution key; trial t > 1 adds its number (trial 1 keeps the key a run
        without trials has, so `trials: 1` reuses every stored execution, and raising
        `trials` runs only the new trials)."""
        transform = self.transform_digests.get(case.transform or "", "")
        key = combine(self.system, case.exec_digest, transform)
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


__all__ = ["RunKeys"]
