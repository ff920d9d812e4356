"""The benchmarks that compare revisions run an older revision with what it needs (issue 30).

`benchmarks/_versions.py` exports an older revision's `src/`; a revision from before the store
dropped `python-ulid` imports it, which this checkout's environment no longer installs. The
helper installs what the revision needs and this environment lacks into a throwaway directory
on the child's path -- the failure was `scale_workers.py` without `--skip-main` on a fresh
venv.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import _versions  # noqa: E402

pytestmark = pytest.mark.slow

BEFORE_ULID_WENT = "c0092ed"  # scale_workers.py's BEFORE: it still imports python-ulid


def _import(env: dict[str, str], code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=False)


def test_an_older_revision_runs_with_what_it_needs_and_this_one_is_left_as_it_is() -> None:
    known = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e",
                            f"{BEFORE_ULID_WENT}^{{commit}}"], capture_output=True)
    if known.returncode != 0:
        pytest.skip(f"this clone does not hold {BEFORE_ULID_WENT} (a shallow clone?)")
    assert any(r.startswith("python-ulid") for r in _versions.requirements(BEFORE_ULID_WENT))
    assert _versions.missing(_versions.requirements("HEAD")) == []

    (_, this), (_, before) = _versions.versions([BEFORE_ULID_WENT])

    old = _import(before, "import oloproof.api, oloproof, ulid; print(oloproof.__file__)")
    assert old.returncode == 0, old.stderr
    assert str(ROOT) not in old.stdout, "the old revision's own src/ was imported"
    now = _import(this, "import oloproof.api, oloproof; print(oloproof.__file__)")
    assert now.returncode == 0 and now.stdout.startswith(str(ROOT / "src")), now.stderr
    assert _import(this, "import ulid").returncode != 0, "nothing was added to this one"
