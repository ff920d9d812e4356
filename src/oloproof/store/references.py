"""Run references: how a stored run is named (docs/compare.md#pinned-baselines-versions-and-tags).

A run is found by a reference: `latest`, `latest~N` (N runs before the newest), a unique prefix
or suffix of its id, `tag:NAME` (the run `oloproof tag RUN NAME` named; a tag is on one run at
a time), `version:V` (the newest complete run whose system version is V) or `variant:k=v,…`
(the newest complete run of that combination of `system.variants`, its keys in any order:
docs/board.md). A baseline is resolved beside its candidate run
(docs/compare.md#which-run-is-the-baseline).

A run of part of the suite, or a rescored run (their suite description's `kind`), is never
what `version:V` names, nor what `latest~N` counts when it names a baseline (the candidate
itself aside): such a run is a baseline only when named by its id or a tag given to it.

`RunReferences` is the grammar and its errors. What it reads of the store is seven small
lookups (`_run_ids`, `_whole_suite_ids`, `_tag_names`, `_tagged`, `_newest_complete`,
`_complete_versions`, `_complete_variants`), each one query; a class that gives them from lists
has the same grammar without SQLite.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from oloproof.errors import StoreError, UsageError
from oloproof.store.sql import writing

#: What a tag may be: it is written after `tag:` in a reference, and never reads as one.
TAG_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")

# Stands for the run `oloproof run` is about to make, while its baseline is resolved.
_BEING_MADE = "\x00the run being made"

#: A run of the whole suite, in SQL: its stored suite description names no other `kind`
#: (`project.describe`: a subset or a rescored run).
WHOLE_SUITE_SQL = ("coalesce(CASE WHEN json_valid(suite) THEN json_extract(suite, '$.kind') "
                   "END, 'run') = 'run'")


class RunReferences:
    """Run references of a `Store` (which provides `conn`, `path` and `run_record`)."""

    conn: sqlite3.Connection
    path: Path
    run_record: Callable[[str], dict[str, Any]]  # (`RunReads.run_record`)

    def resolve_run(self, ref: str, project: str | None = None,
                    candidate: str | None = None) -> str:
        """`latest`, `latest~N`, a unique prefix or suffix of a run id, `tag:NAME`, or
        `version:V` (the newest complete run of `project` whose system version is V); when the
        run named is a baseline, `candidate` is the run it is compared with (never what
        `version:V` names)."""
        ids = self._run_ids()
        if not ids:
            raise StoreError("no runs are stored yet; run `oloproof run` first", file=self.path)
        named = self._named(ref, project, candidate)
        if named is not None:
            return named
        counted = None if candidate is None else self._baseline_ids(ids, candidate)
        return _resolve_in(ids, ref, tags=self._tag_names(), counted=counted)

    def _named(self, ref: str, project: str | None, candidate: str | None,
               what: str = "") -> str | None:
        """The run a `tag:NAME` or `version:V` reference names (None for other references);
        a UsageError saying what is stored when none is."""
        if ref.startswith("tag:"):
            name = ref[4:]
            tagged = self._tagged(name)
            if tagged is None:
                known = self._tag_names()
                raise UsageError(
                    f"{what}{ref!r}: no run is tagged {name!r}; "
                    + (f"the tags are {', '.join(known)}" if known else "no run is tagged yet")
                    + " (`oloproof tag RUN NAME` tags a run)")
            if tagged == candidate:
                raise UsageError(
                    f"{what}{ref!r} names the candidate run {candidate} itself (the tag was "
                    "moved to it); name the baseline another way (`oloproof runs` lists the "
                    "runs and their tags)")
            return tagged
        if ref.startswith("version:"):
            version = ref[8:]
            found = self._newest_complete(version, project, candidate)
            if found is None:
                versions = self._complete_versions(project)
                raise UsageError(
                    f"{what}{ref!r}: no complete run"
                    + (f" of project {project!r}" if project is not None else "")
                    + f" has system version {version!r}"
                    + (" besides the candidate" if candidate is not None else "")
                    + "; " + (f"complete runs have versions {', '.join(versions)}" if versions
                              else "no run is complete yet")
                    + " (`oloproof runs` lists them)")
            return found
        if ref.startswith("variant:"):
            return self._of_variant(ref, project, candidate, what)
        return None

    def _of_variant(self, ref: str, project: str | None, candidate: str | None,
                    what: str) -> str:
        """The newest complete run of the whole suite (of `project`, other than `candidate`)
        whose variant is the combination `ref` names, its keys in any order."""
        wanted = _variant_pairs(ref[8:])
        if wanted is None:
            raise UsageError(f"{what}{ref!r}: a variant is written variant:key=value,… "
                             "(e.g. variant:model=large,prompt=v2)")
        stored = self._complete_variants(project, candidate)
        for run_id, variant in stored:
            if _variant_pairs(variant) == wanted:
                return run_id
        known = list(dict.fromkeys(v for _, v in stored))
        raise UsageError(
            f"{what}{ref!r}: no complete run"
            + (f" of project {project!r}" if project is not None else "")
            + " is of that variant" + (" besides the candidate" if candidate is not None else "")
            + "; " + (f"complete runs have variants {'; '.join(known)}" if known
                      else "no complete run has a variant")
            + " (`oloproof run --variant` runs one)")

    def resolve_baseline(self, ref: str, candidate: str | None,
                         project: str | None = None) -> str:
        """A baseline reference resolved beside its candidate run
        (docs/compare.md#which-run-is-the-baseline).

        It resolves as every run reference does, with the candidate counted among the runs:
        while `oloproof run` makes the candidate (`candidate` None: not registered yet), the
        run being made is `latest`, so `latest~1` is the newest run before it — the same run
        `latest~1` names once it is stored. A reference that names the candidate itself
        (`latest` in a policy `oloproof run` decides) means the newest run started before it.
        `version:V` is the newest complete run of `project` with that system version other
        than the candidate; `tag:NAME` the run tagged so (never the candidate itself).
        """
        named = self._named(ref, project, candidate, what="baseline ")
        if named is not None:
            return named
        stored = self._run_ids()
        ids = [_BEING_MADE, *stored] if candidate is None else stored
        if candidate is None and not stored:
            raise UsageError(f"baseline {ref!r}: no run is stored yet to compare this one with; "
                             "run the baseline first (without the non_inferiority rule or "
                             "--baseline), then the candidate")
        me = _BEING_MADE if candidate is None else candidate
        # latest~N counts the runs of the whole suite (and the candidate): a subset or a
        # rescored run is a baseline only when named.
        counted = self._baseline_ids(ids, me)
        found = _resolve_in(ids, ref, what="baseline ", counted=counted)
        if found != me:
            return found
        at = counted.index(me)
        if at + 1 >= len(counted):
            raise UsageError(f"baseline {ref!r} names the candidate run itself, and no run "
                             "started before it" + (" but subsets or rescored runs (a baseline "
                                                    "names one by id or tag)"
                                                    if len(counted) < len(ids) else "")
                             + "; run the baseline first")
        return counted[at + 1]

    # ---- tags --------------------------------------------------------------------------------

    def tags(self) -> dict[str, list[str]]:
        """Run id → the names it is tagged with, in name order."""
        out: dict[str, list[str]] = {}
        for name, run_id in self.conn.execute("SELECT name, run_id FROM tags ORDER BY name"):
            out.setdefault(run_id, []).append(name)
        return out

    def tag_run(self, run_id: str, name: str) -> str | None:
        """Tag a run `name` (a tag is on one run at a time: one on another run moves here).
        Returns the run the tag was on before, if another; a UsageError for a bad name."""
        if not TAG_NAME.fullmatch(name) or name == "latest" or name.startswith("run_"):
            raise UsageError(
                f"{name!r} cannot be a tag: a tag is 1 to 64 letters, digits, '.', '_', '+' "
                "or '-', starting with a letter or digit, and neither `latest` nor starting "
                "with `run_` (it is written `tag:NAME` wherever a run is named)")
        self.run_record(run_id)  # a StoreError if it is not stored
        before = self._tagged(name)
        with writing(self.path):
            self.conn.execute(
                "INSERT INTO tags (name, run_id, tagged_at) VALUES (?,?,?) ON CONFLICT(name) "
                "DO UPDATE SET run_id=excluded.run_id, tagged_at=excluded.tagged_at",
                (name, run_id, time.time()))
        return before if before is not None and before != run_id else None

    def latest_variant_runs(self, project: str | None = None) -> list[tuple[str, str]]:
        """(run id, variant) of the newest complete run of the whole suite of each variant
        stored (of `project`), in the order their variants were first run: what
        `oloproof board` takes as its candidates by default (docs/board.md)."""
        newest: dict[frozenset[tuple[str, str]] | str, tuple[str, str]] = {}
        for run_id, variant in reversed(self._complete_variants(project, None)):
            newest[_variant_pairs(variant) or variant] = (run_id, variant)
        return list(newest.values())

    def run_marks(self, run_id: str) -> tuple[str | None, str]:
        """The variant a run was run with (`k=v,…`, or None) and its kind (`run`, `import`,
        …: `store.reruns`)."""
        row = self.conn.execute("SELECT variant, kind FROM runs WHERE run_id=?",
                                (run_id,)).fetchone()
        if row is None:
            return None, "run"
        return (None if row[0] is None else str(row[0])), str(row[1] or "run")

    # ---- what the grammar reads of the store ---------------------------------------------------

    def _run_ids(self) -> list[str]:
        """Every run id, newest first."""
        return [r[0] for r in self.conn.execute(
            "SELECT run_id FROM runs ORDER BY started_at DESC, run_id DESC")]

    def _baseline_ids(self, ids: list[str], candidate: str) -> list[str]:
        """`ids` (newest first) without the runs of part of the suite and the rescored runs,
        but for `candidate`: what `latest~N` counts when it names a baseline."""
        whole = self._whole_suite_ids()
        return [i for i in ids if i == candidate or i in whole]

    def _whole_suite_ids(self) -> set[str]:
        """The runs of the whole suite (not a subset, not rescored)."""
        return {r[0] for r in self.conn.execute(f"SELECT run_id FROM runs WHERE {WHOLE_SUITE_SQL}")}

    def _tag_names(self) -> list[str]:
        """The tags in use, in name order."""
        return [row[0] for row in self.conn.execute("SELECT name FROM tags ORDER BY name")]

    def _tagged(self, name: str) -> str | None:
        """The run tagged `name`, or None."""
        row = self.conn.execute("SELECT run_id FROM tags WHERE name=?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def _newest_complete(self, version: str, project: str | None,
                         besides: str | None) -> str | None:
        """The newest complete run of the whole suite (of `project`, other than `besides`)
        whose system version is `version`, or None."""
        sql = ("SELECT run_id FROM runs WHERE status = 'complete' AND system_version = ? AND "
               + WHOLE_SUITE_SQL + (" AND project = ?" if project is not None else "")
               + (" AND run_id != ?" if besides is not None else "")
               + " ORDER BY started_at DESC, run_id DESC LIMIT 1")
        params = [version, *([project] if project is not None else []),
                  *([besides] if besides is not None else [])]
        found = self.conn.execute(sql, params).fetchone()
        return None if found is None else str(found[0])

    def _complete_variants(self, project: str | None, besides: str | None
                           ) -> list[tuple[str, str]]:
        """(run id, variant) of the complete runs of the whole suite that have a variant (of
        `project`, other than `besides`), newest first."""
        sql = ("SELECT run_id, variant FROM runs WHERE status = 'complete' AND variant IS NOT "
               "NULL AND " + WHOLE_SUITE_SQL
               + (" AND project = ?" if project is not None else "")
               + (" AND run_id != ?" if besides is not None else "")
               + " ORDER BY started_at DESC, run_id DESC")
        params = [*([project] if project is not None else []),
                  *([besides] if besides is not None else [])]
        return [(str(r), str(v)) for r, v in self.conn.execute(sql, params)]

    def _complete_versions(self, project: str | None) -> list[str]:
        """The system versions of the complete runs (of `project`), in order."""
        return [row[0] for row in self.conn.execute(
            "SELECT DISTINCT system_version FROM runs WHERE status = 'complete' AND "
            + WHOLE_SUITE_SQL + (" AND project = ?" if project is not None else "")
            + " ORDER BY system_version", [project] if project is not None else [])]


def _variant_pairs(text: str) -> frozenset[tuple[str, str]] | None:
    """A variant's `k=v,…` as its set of pairs (the order of the keys aside), or None when it
    is not written so (a part without `=`, a key given twice)."""
    pairs = [part.partition("=") for part in text.split(",")]
    if any(not sep or not key.strip() for key, sep, _ in pairs):
        return None
    keys = [key.strip() for key, _, _ in pairs]
    if len(set(keys)) != len(keys):
        return None
    return frozenset((key.strip(), value.strip()) for key, _, value in pairs)


def _resolve_in(ids: list[str], ref: str, what: str = "", tags: list[str] | None = None,
                counted: list[str] | None = None) -> str:
    """`ref` among `ids` (newest first): `latest`, `latest~N`, a unique prefix or suffix;
    `tags` (the names in use) make a bare tag name's error say to write `tag:NAME`. `counted`
    (default `ids`) are the runs `latest~N` counts."""
    if ref == "latest" or ref.startswith("latest~"):
        skipped = 0 if counted is None else len(ids) - len(counted)
        ids = ids if counted is None else counted
        back = 0
        if ref != "latest":
            try:
                back = int(ref.split("~", 1)[1])
            except ValueError:
                raise UsageError(f"{what}{ref!r}: write latest~N with a number N") from None
        if back < 0:
            raise UsageError(f"{what}{ref!r}: latest~N counts back from the newest run, so N "
                             "is 0 or more (latest is the newest run, latest~1 the one before "
                             "it); `oloproof runs` lists them")
        if back >= len(ids):
            being_made = _BEING_MADE in ids
            stored = len(ids) - int(being_made)
            runs = f"{stored} run{'s are' if stored != 1 else ' is'} stored" + (
                " besides the run being made" if being_made else "") + (
                f" (and {skipped} subset or rescored run{'s' if skipped != 1 else ''}, which "
                "a baseline names by id or tag)" if skipped else "")
            newest = "latest" if len(ids) == 1 else f"latest to latest~{len(ids) - 1}"
            raise UsageError(f"{what}{ref!r} names the run {back} before the newest, and only "
                             f"{runs}: use {newest}; `oloproof runs` lists them")
        return ids[back]
    if ref in ids:
        return ref
    matches = [i for i in ids if i.startswith(ref) or i.endswith(ref)
               or i.removeprefix("run_").startswith(ref)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        hint = f" (a tag is written tag:{ref})" if tags and ref in tags else ""
        raise UsageError(f"no run matches {what}{ref!r}{hint}; `oloproof runs` lists them")
    raise UsageError(
        f"{what}{ref!r} matches {len(matches)} runs ({', '.join(matches[:4])}...); "
        "give more of the id"
    )


__all__ = ["TAG_NAME", "RunReferences"]
