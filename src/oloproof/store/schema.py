"""The store's schema and its migrations, in one place.

`PRAGMA user_version` holds the schema version; `migrate` applies every migration above it in
one transaction (a migration's SQL, then its Python step in `AFTER`, if it has one). Add a
migration; never edit one that has shipped.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from oloproof.store.reruns import backfill_suite_digests
from oloproof.store.sql import transaction

JUDGMENT_CASE_KEY = 40
"""A judgment key is a case key (this many characters) followed by the evaluator's key; the
`judgments` table has one row per case key."""

MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
        CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            project TEXT NOT NULL,
            started_at REAL NOT NULL,
            finished_at REAL,
            status TEXT NOT NULL,            -- running | complete | stopped | failed
            pid INTEGER,
            host TEXT,
            system_name TEXT,
            system_version TEXT,
            n_cases INTEGER,
            suite TEXT,                      -- JSON: the suite as run (evaluators, metrics, ...)
            policy TEXT,                     -- JSON: the policy the run was decided under
            summary TEXT                     -- JSON: analysis, decisions, gate, cache, errors
        );
        CREATE INDEX runs_started ON runs(started_at);

        -- Tables with rows of a few hundred bytes keep their rowid: data is appended, and only
        -- the key index takes the random digest order (WITHOUT ROWID is for small rows).
        -- Content-addressed by case digest: the case as it was run.
        CREATE TABLE cases (digest TEXT PRIMARY KEY, body TEXT NOT NULL);

        -- The execution cache: successful system calls only (errors are retried).
        CREATE TABLE executions (
            key TEXT PRIMARY KEY,
            case_digest TEXT NOT NULL,
            output TEXT NOT NULL,
            artifacts TEXT NOT NULL,         -- JSON: kind -> artifact hash
            facts TEXT,                      -- JSON: trajectory facts for slices and quantiles
            latency_ms REAL,
            created_at REAL NOT NULL
        );

        -- Content-addressed artifacts, with `base` set when `body` is a diff against that artifact.
        CREATE TABLE artifacts (
            hash TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            base TEXT,
            body TEXT NOT NULL
        );

        -- The judgment cache: one row per judged case (execution, expected, source), holding
        -- each evaluator's judgment by the evaluator's config digest, so a case costs one row.
        CREATE TABLE judgments (
            key TEXT PRIMARY KEY,
            body TEXT NOT NULL               -- JSON: evaluator digest -> [verdict, reason, details]
        ) WITHOUT ROWID;

        -- Fault replays, keyed by (system version, case digest, fault plan).
        CREATE TABLE replays (key TEXT PRIMARY KEY, body TEXT NOT NULL);

        -- One row per case of a run: what analysis and the reports read.
        CREATE TABLE run_cases (
            run_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            case_id TEXT NOT NULL,
            case_digest TEXT NOT NULL,
            exec_key TEXT,
            outcome TEXT NOT NULL,           -- JSON: verdict codes, reasons, judgment keys, facts
            PRIMARY KEY (run_id, seq)
        );
        CREATE INDEX run_cases_case ON run_cases(run_id, case_id);

        -- Staging: each second's batch of cache rows is appended here (cheap, durable), then
        -- merged into the keyed tables above in key order when the run ends, or when the
        -- store is next opened after a killed run. Keyed tables are indexed by digests, so
        -- writing them batch by batch dirtied pages all over their indexes each second.
        CREATE TABLE stage_cases (digest TEXT NOT NULL, body TEXT NOT NULL);
        CREATE TABLE stage_artifacts (
            hash TEXT NOT NULL, kind TEXT NOT NULL, base TEXT, body TEXT NOT NULL);
        CREATE TABLE stage_executions (
            key TEXT NOT NULL, case_digest TEXT NOT NULL, output TEXT NOT NULL,
            artifacts TEXT NOT NULL, facts TEXT, latency_ms REAL, created_at REAL NOT NULL);
        CREATE TABLE stage_judgments (key TEXT NOT NULL, body TEXT NOT NULL);

        CREATE TABLE run_errors (
            run_id TEXT NOT NULL,
            case_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            message TEXT NOT NULL,
            traceback TEXT
        );
        CREATE INDEX run_errors_run ON run_errors(run_id);
        """,
    ),
    (
        2,
        # Repeated trials (docs/reliability.md): an error belongs to one trial of a case (NULL:
        # trial 1, as every row stored before trials existed). A case's trials share its `run_cases`
        # case id; the outcome names its trial.
        """
        ALTER TABLE run_errors ADD COLUMN trial INTEGER;
        """,
    ),
    (
        3,
        # Tags (docs/cli.md#oloproof-tag): `oloproof tag RUN NAME` names a run; a name is on
        # one run at a time, so giving it to another run moves it.
        """
        CREATE TABLE tags (
            name TEXT PRIMARY KEY,
            run_id TEXT NOT NULL,
            tagged_at REAL NOT NULL
        );
        CREATE INDEX tags_run ON tags(run_id);
        """,
    ),
    (
        4,
        # Retries (docs/failures.md#retries): every attempt's error is kept. `attempt` is which
        # attempt failed (NULL: the first, as every row stored before retries); `retried` is 1
        # when another attempt followed, so the row is not the case's error (NULL: it is).
        """
        ALTER TABLE run_errors ADD COLUMN attempt INTEGER;
        ALTER TABLE run_errors ADD COLUMN retried INTEGER;
        """,
    ),
    (
        5,
        # Judges (docs/judges.md): each verdict a judge gave, as its judge_verdict/v1 record,
        # keyed by the judge's definition and the digest of what it was shown.
        """
        CREATE TABLE judge_verdicts (key TEXT PRIMARY KEY, body TEXT NOT NULL);
        """,
    ),
    (
        6,
        # The record (docs/limits.md#re-runs-and-re-drawn-samples): complete runs are counted
        # per project, system, version, variant and suite. `suite_digest` is the suite's (its
        # evaluators and its cases: `reruns.suite_digest`), set when a run is decided, and for
        # the complete runs stored before, below; `variant` is NULL until variants exist;
        # `kind` is `run` for a run of the whole suite, else the kind its suite description
        # names (`subset`, `rescored`: never counted; for the runs stored before, below);
        # `no_cache` is 1 for a run made with --no-cache (0 for every run stored before). Every
        # labels sample drawn is kept.
        """
        ALTER TABLE runs ADD COLUMN suite_digest TEXT;
        ALTER TABLE runs ADD COLUMN variant TEXT;
        ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'run';
        ALTER TABLE runs ADD COLUMN no_cache INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX runs_version ON runs(project, system_name, system_version);
        CREATE TABLE label_samples (
            project TEXT NOT NULL,
            criterion TEXT NOT NULL,
            seed TEXT NOT NULL,
            n INTEGER NOT NULL,
            suite TEXT NOT NULL,             -- the digest of the case ids it was drawn from
            run_id TEXT NOT NULL,            -- the run whose shown text was written
            file TEXT NOT NULL,              -- the labels file it was written to
            drawn_at REAL NOT NULL
        );
        CREATE INDEX label_samples_criterion ON label_samples(project, criterion);
        """,
    ),
]

#: Python steps of a migration, run after its SQL in the same transaction.
AFTER: dict[int, Callable[[sqlite3.Connection], None]] = {6: backfill_suite_digests}

SCHEMA_VERSION = MIGRATIONS[-1][0]


def migrate(conn: sqlite3.Connection) -> None:
    """Bring the database to SCHEMA_VERSION (one transaction; safe against a racing process)."""
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    if current >= SCHEMA_VERSION:
        return
    with transaction(conn):
        current = conn.execute("PRAGMA user_version").fetchone()[0]
        for version, sql in MIGRATIONS:
            if version > current:
                for statement in sql.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                if version in AFTER:
                    AFTER[version](conn)
                conn.execute(f"PRAGMA user_version = {version}")
