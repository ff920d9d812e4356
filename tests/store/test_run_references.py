"""The run-reference grammar (`latest`, `latest~N`, id prefixes and suffixes, `tag:NAME`,
`version:V`) and a baseline resolved beside its candidate, without SQLite: `RunReferences`
reads the store only through its six lookups, which `Listed` gives from lists.

(The same grammar against a real store, through the CLI and `oloproof.compare`:
tests/compare/test_pinned_baselines.py.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from oloproof.errors import StoreError, UsageError
from oloproof.store.references import RunReferences


@dataclass
class Run:
    run_id: str
    version: str = "v1"
    project: str = "desk"
    complete: bool = True
    kind: str = "run"  # a subset or a rescored run: `subset`, `rescored`


@dataclass
class Listed(RunReferences):
    """Runs newest first, and tags, held in lists: no database anywhere."""

    runs: list[Run]
    tagged: dict[str, str] = field(default_factory=dict)
    path: Path = Path("nowhere/oloproof.db")  # (named by a StoreError)

    def _run_ids(self) -> list[str]:
        return [run.run_id for run in self.runs]

    def _whole_suite_ids(self) -> set[str]:
        return {run.run_id for run in self.runs if run.kind == "run"}

    def _tag_names(self) -> list[str]:
        return sorted(self.tagged)

    def _tagged(self, name: str) -> str | None:
        return self.tagged.get(name)

    def _newest_complete(self, version: str, project: str | None,
                         besides: str | None) -> str | None:
        return next((run.run_id for run in self.runs if run.complete and run.kind == "run"
                     and run.version == version and project in (None, run.project)
                     and run.run_id != besides), None)

    def _complete_versions(self, project: str | None) -> list[str]:
        return sorted({run.version for run in self.runs
                       if run.complete and run.kind == "run" and project in (None, run.project)})


def _three() -> Listed:
    """run_03c is the newest, then run_02b (v2, incomplete), then run_01a (v1)."""
    return Listed([Run("run_03c", "v2"), Run("run_02b", "v2", complete=False),
                   Run("run_01a", "v1")], {"shipped": "run_01a"})


def test_latest_counts_back_from_the_newest() -> None:
    runs = _three()
    assert [runs.resolve_run(ref) for ref in ("latest", "latest~0", "latest~1", "latest~2")] \
        == ["run_03c", "run_03c", "run_02b", "run_01a"]


@pytest.mark.parametrize(("ref", "says"), [
    ("latest~3", "'latest~3' names the run 3 before the newest, and only 3 runs are stored: "
                 "use latest to latest~2"),
    ("latest~-1", "latest~N counts back from the newest run, so N is 0 or more"),
    ("latest~x", "'latest~x': write latest~N with a number N"),
])
def test_a_latest_that_names_no_run_says_which_do(ref: str, says: str) -> None:
    with pytest.raises(UsageError) as error:
        _three().resolve_run(ref)
    assert says in str(error.value)


def test_an_id_is_found_by_a_unique_prefix_or_suffix() -> None:
    runs = _three()
    assert runs.resolve_run("run_02b") == "run_02b"
    assert runs.resolve_run("03") == "run_03c"  # after `run_`
    assert runs.resolve_run("1a") == "run_01a"  # a suffix
    with pytest.raises(UsageError, match=r"'run_0' matches 3 runs .*give more of the id"):
        runs.resolve_run("run_0")
    with pytest.raises(UsageError, match=r"no run matches 'zz'; `oloproof runs` lists them"):
        runs.resolve_run("zz")


def test_a_bare_tag_name_is_told_to_be_written_tag_name() -> None:
    with pytest.raises(UsageError, match=r"\(a tag is written tag:shipped\)"):
        _three().resolve_run("shipped")


def test_a_tag_names_its_run_and_an_unknown_tag_lists_the_tags() -> None:
    runs = _three()
    assert runs.resolve_run("tag:shipped") == "run_01a"
    with pytest.raises(UsageError, match="no run is tagged 'nope'; the tags are shipped"):
        runs.resolve_run("tag:nope")
    with pytest.raises(UsageError, match="no run is tagged yet"):
        Listed(runs.runs).resolve_run("tag:nope")


def test_a_version_is_its_newest_complete_run() -> None:
    runs = _three()
    assert runs.resolve_run("version:v2") == "run_03c"
    assert runs.resolve_baseline("version:v1", "run_03c") == "run_01a"
    with pytest.raises(UsageError) as error:  # run_02b is v2 but did not complete
        runs.resolve_baseline("version:v2", "run_03c")
    assert str(error.value).startswith(
        "baseline 'version:v2': no complete run has system version 'v2' besides the "
        "candidate; complete runs have versions v1, v2")
    with pytest.raises(UsageError, match=r"of project 'other' has system version 'v1'.*no run "
                                         r"is complete yet"):
        runs.resolve_run("version:v1", project="other")


def test_no_runs_at_all_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="no runs are stored yet") as error:
        Listed([]).resolve_run("latest")
    assert error.value.file == "nowhere/oloproof.db"


def test_while_a_run_is_made_it_is_latest_to_its_baseline() -> None:
    runs = _three()
    # `candidate` None: the run being made is not stored yet, and is `latest`.
    assert runs.resolve_baseline("latest~1", None) == "run_03c"
    assert runs.resolve_baseline("latest", None) == "run_03c"  # (the newest before it)
    with pytest.raises(UsageError, match="and only 3 runs are stored besides the run being "
                                         "made: use latest to latest~3"):
        runs.resolve_baseline("latest~4", None)
    with pytest.raises(UsageError, match="no run is stored yet to compare this one with"):
        Listed([]).resolve_baseline("latest~1", None)


def test_a_stored_candidate_is_never_its_own_baseline() -> None:
    runs = _three()
    assert runs.resolve_baseline("latest", "run_03c") == "run_02b"
    assert runs.resolve_baseline("latest~1", "run_03c") == "run_02b"
    with pytest.raises(UsageError, match="names the candidate run itself, and no run started "
                                         "before it"):
        runs.resolve_baseline("run_01a", "run_01a")
    runs.tagged["moved"] = "run_03c"
    with pytest.raises(UsageError, match="'tag:moved' names the candidate run run_03c itself"):
        runs.resolve_baseline("tag:moved", "run_03c")
