"""scipy.stats takes most of a second to import, scipy.special a fifth of that: the statistics use
scipy.special's distribution functions, imported on first use, so that no command pays for
scipy.stats and `runs`, `inspect`, `init` pay for neither."""

from __future__ import annotations

from types import ModuleType


def scipy_stats() -> ModuleType:
    import scipy.stats

    module: ModuleType = scipy.stats
    return module


def scipy_special() -> ModuleType:
    import scipy.special

    module: ModuleType = scipy.special
    return module
