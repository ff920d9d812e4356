"""scipy.stats takes most of a second to import; the commands that do not compute an interval
(`runs`, `inspect`, `init`, configuration errors) should not pay for it."""

from __future__ import annotations

from types import ModuleType


def scipy_stats() -> ModuleType:
    import scipy.stats

    return scipy.stats
