"""`oloproof export atif|eee`: a stored run written in other tools' formats
(docs/imports.md#exporting-a-run).

`export_atif` writes each case's trajectory (each trial's, with trials) as Harbor's Agent
Trajectory Interchange Format, through `oloproof.traces.atif.to_atif`; `export_eee` writes the
run as Every Eval Ever (schema 0.3): the aggregate, one result per pass-rate metric with its
exact interval, and the per-trial rows in the `_samples.jsonl` file it names. Both read the
store only.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oloproof.errors import TraceError, UsageError
from oloproof.recording.trajectory import AgentTrajectory
from oloproof.recording.usage import USAGE_KIND
from oloproof.store.location import open_existing_store

_SEGMENT = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass
class Exported:
    """What an export wrote: the files, and how many trajectories or rows."""

    files: list[Path]
    written: int
    left_out: int  # trajectories without a step, or trials with no verdict (missing, errored)


def _trial_views(config: str | Path, store: str | Path | None, ref: str,
                 case: str | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run's record and the case views of every trial (of `case` only, when given)."""
    from oloproof.report.case_view import case_view, iter_case_views

    with open_existing_store(config, store) as db:
        run_id = db.resolve_run(ref)
        record = db.run_record(run_id)
        firsts = iter_case_views(db, run_id, only_failures=False,
                                 cases=[case] if case is not None else None)
        if case is not None and not firsts:
            raise UsageError(f"run {run_id} has no case {case!r}")
        views: list[dict[str, Any]] = []
        for first in firsts:
            trials = len(first.get("trials") or ()) or 1
            views.append(first if trials == 1 else case_view(db, run_id, first["case"], 1))
            views.extend(case_view(db, run_id, first["case"], t) for t in range(2, trials + 1))
        return record, views


def export_atif(ref: str, path: str | Path, *, case: str | None = None,
                config: str | Path = "oloproof.yaml",
                store: str | Path | None = None) -> Exported:
    """Write the run's trajectories as ATIF to `path`: one document for one case of one
    trial, else a JSON list of them (each named by `session_id`: `RUN/CASE/TRIAL`).

    Raises:
        UsageError: no such run or case; or no trajectory to write.
    """
    from oloproof.traces.atif import to_atif

    record, views = _trial_views(config, store, ref, case)
    documents: list[dict[str, Any]] = []
    left_out = 0
    for view in views:
        trajectory = view.get("trajectory")
        if not trajectory or not trajectory.get("steps"):
            left_out += 1
            continue
        usage = (view.get("other_artifacts") or {}).get(USAGE_KIND)
        documents.append(to_atif(
            AgentTrajectory.model_validate(trajectory), agent_name=record["system_name"],
            agent_version=record["system_version"], usage=usage,
            session_id=f"{record['run_id']}/{view['case']}/{view.get('trial') or 1}"))
    if not documents:
        raise UsageError(f"run {record['run_id']} recorded no trajectory with a step"
                         + (f" for case {case!r}" if case is not None else "")
                         + ": nothing to write as ATIF")
    target = _output(path)
    body: Any = documents[0] if case is not None and len(views) == 1 else documents
    target.write_text(json.dumps(body, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return Exported([target], len(documents), left_out)


def _output(path: str | Path) -> Path:
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{target} is a folder; give a file to write", file=target)
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


def export_eee(ref: str, out: str | Path, *, developer: str = "unknown",
               config: str | Path = "oloproof.yaml",
               store: str | Path | None = None) -> Exported:
    """Write the run as Every Eval Ever under the folder `out`:
    `data/<project>/<developer>/<system>/<uuid>.json` and its `<uuid>_samples.jsonl`, one row
    per case, trial and criterion with a verdict (missing and errored trials have none: they
    are counted in the result's details, never written as a score of 0).

    Raises:
        UsageError: no such run, or a run with no pass-rate figure.
    """
    from importlib.metadata import version

    from oloproof.api.stored import load_run
    from oloproof.harnesses.eee import SCHEMA_VERSION, EeeAggregate, EeeSampleRow

    record, views = _trial_views(config, store, ref, None)
    document = load_run(record["run_id"], config, store).document
    run_id, project = record["run_id"], record["project"]
    model = f"{record['system_name']} {record['system_version']}"
    evaluation_id = f"{project}/{model}/{run_id}"
    ident = str(uuid.UUID(bytes=hashlib.sha256(run_id.encode()).digest()[:16], version=4))
    folder = Path(out) / "data" / _segment(project) / _segment(developer) / _segment(model)
    samples_name = f"{ident}_samples.jsonl"
    rel_samples = f"data/{folder.parts[-3]}/{folder.parts[-2]}/{folder.parts[-1]}/{samples_name}"
    model_id = f"{folder.parts[-2]}/{folder.parts[-1]}"  # where the layout files it
    rows: list[str] = []
    left_out = 0
    for view in views:
        usage = (view.get("other_artifacts") or {}).get(USAGE_KIND) or {}
        tokens = None
        if "input_tokens" in usage and "output_tokens" in usage:
            tokens = {"input_tokens": usage["input_tokens"],
                      "output_tokens": usage["output_tokens"],
                      "total_tokens": usage["input_tokens"] + usage["output_tokens"]}
        for judged in view.get("criteria") or ():
            if judged["verdict"] not in ("passed", "failed"):
                left_out += 1
                continue
            passed = judged["verdict"] == "passed"
            row = {
                "schema_version": SCHEMA_VERSION, "evaluation_id": evaluation_id,
                "model_id": model_id, "evaluation_name": project,
                "evaluation_result_id": judged["criterion"], "sample_id": str(view["case"]),
                "interaction_type": "single_turn",
                "input": {"raw": _text(view.get("input")),
                          "reference": [_text(view["expected"])] if view.get("expected") else []},
                "output": {"raw": [_text(view.get("output"))]},
                "answer_attribution": [],
                "evaluation": {"score": 1.0 if passed else 0.0, "is_correct": passed},
                "metadata": {"trial": str(view.get("trial") or 1), "run_id": run_id},
            }
            if tokens is not None:
                row["token_usage"] = tokens
            EeeSampleRow.model_validate(row)
            rows.append(json.dumps(row, ensure_ascii=False) + "\n")
    results = []
    for metric in document.metrics:
        if metric.kind != "rate" or metric.estimate is None:
            continue
        results.append({
            "evaluation_result_id": metric.id, "evaluation_name": project,
            "source_data": {"dataset_name": project, "source_type": "other",
                            "samples_number": document.cases},
            "metric_config": {
                "evaluation_description": f"pass rate of {metric.id} (Oloproof)",
                "metric_id": metric.id, "metric_name": metric.id, "metric_kind": "pass_rate",
                "metric_unit": "proportion", "lower_is_better": False,
                "score_type": "continuous", "min_score": 0.0, "max_score": 1.0},
            "score_details": {
                "score": metric.estimate,
                "details": {"passed": str(metric.passed), "observed": str(metric.observed),
                            "missing": str(metric.missing), "excluded": str(metric.excluded)},
                "uncertainty": {"num_samples": document.cases, "confidence_interval": {
                    "lower": metric.lower, "upper": metric.upper,
                    "confidence_level": document.confidence_level,
                    "method": metric.method}}},
        })
    if not results:
        raise UsageError(f"run {run_id} has no pass-rate figure to export")
    text = "".join(rows)
    started = f"{record['started_at']}"
    aggregate = {
        "schema_version": SCHEMA_VERSION, "evaluation_id": evaluation_id,
        "evaluation_timestamp": started,
        "retrieved_timestamp": f"{record['finished_at'] or record['started_at']}",
        "source_metadata": {"source_name": "oloproof", "source_type": "evaluation_run",
                            "source_organization_name": project,
                            "evaluator_relationship": "other"},
        "eval_library": {"name": "oloproof", "version": version("oloproof")},
        "model_info": {"name": model, "id": model_id, "developer": developer,
                       "additional_details": {"deployment_type": "unknown",
                                              "model_availability": "unknown"}},
        "evaluation_results": results,
        "detailed_evaluation_results": {
            "format": "jsonl", "file_path": rel_samples, "hash_algorithm": "sha256",
            "checksum": hashlib.sha256(text.encode()).hexdigest(), "total_rows": len(rows)},
    }
    EeeAggregate.model_validate(aggregate)
    folder.mkdir(parents=True, exist_ok=True)
    aggregate_path = folder / f"{ident}.json"
    (folder / samples_name).write_text(text, encoding="utf-8")
    aggregate_path.write_text(json.dumps(aggregate, ensure_ascii=False, indent=2) + "\n",
                              encoding="utf-8")
    return Exported([aggregate_path, folder / samples_name], len(rows), left_out)


def _segment(text: str) -> str:
    """A path segment of Every Eval Ever's layout: what a name cannot hold as `_`."""
    return _SEGMENT.sub("_", text).strip("_.") or "unknown"


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise TraceError(f"a stored value cannot be written as text: {exc}") from None
