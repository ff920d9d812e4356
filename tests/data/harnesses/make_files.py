"""Make the Harbor, ATIF and Every Eval Ever files the tests read, with those projects' own code.

    python tests/data/harnesses/make_files.py [--venv DIR] [--oloproof CMD] [--exported-only]

`harbor` and `every-eval-ever` need Python 3.12 or newer; Oloproof supports 3.11 and depends on
neither. So this script makes a side environment on the Python running it (3.11 will do):
it installs both packages without their dependencies (`--no-deps --ignore-requires-python`),
then what their models, Harbor's trajectory validator, and Every Eval Ever's validator and
Inspect converter import, and a `.pth` shim lending `typing.override` and `typing.TypedDict`
from `typing_extensions` (the two 3.12 names those modules need at import). Then it runs itself
in that environment (`--inside`) and writes, beside itself:

- `harbor-job/`: a Harbor job folder — each trial's `result.json` a `TrialResult` and its
  `config.json` a `TrialConfig` (dumped as Harbor's trial writes them), its
  `agent/trajectory.json` an ATIF `Trajectory` checked by Harbor's `validate_trajectory`; the
  job's `result.json` a `JobResult` whose stats are Harbor's own `JobStats.from_trial_results`.
- `atif/`: standalone ATIF trajectories (several versions, multimodal content, an observation
  naming no call, copied context, an embedded subagent), each checked by `validate_trajectory`.
- `atif-written/`: trajectories written by Oloproof's own `to_atif` (this checkout's `src/`,
  imported in the side environment) from each trajectory of `harbor-job/`, each checked by
  Harbor's `validate_trajectory`; the tests check that the writer still writes exactly these.
- `eee/data/...`: Every Eval Ever's aggregate JSON and `_samples.jsonl` for two Inspect logs
  (the `clean` task of `../../harnesses/inspect_tasks.py`, and its `desk` without the sample
  whose score is NaN, which the converter cannot write), run by Inspect in the side
  environment, made by Every Eval Ever's own Inspect converter and passed by its own
  validator.
- `exported/`: `oloproof import harbor` of `harbor-job/`, then `oloproof export atif` and
  `oloproof export eee` (this checkout's command, `--oloproof`, in its own environment), each
  file passed by Harbor's `validate_trajectory` and Every Eval Ever's validator; the tests
  check that the exports still write exactly these (`--exported-only` makes only these again).
- `manifest.json`: the package versions used, and what each validator said.

The files are committed, so the tests run without this script. Run it again (and commit what
it writes) to move to newer releases: the pins are `HARBOR` and `EEE` below.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
HARBOR = "harbor==0.26.0"
EEE = "every-eval-ever==0.3.0"
# What `harbor.models.*`, `harbor.utils.trajectory_*` and every_eval_ever's validator and
# Inspect converter import, found by importing them in a bare environment.
IMPORTED = ["pydantic>=2.14", "typing_extensions>=4.12", "shortuuid", "toml", "rich<15",
            "requests", "pyyaml", "jsonschema", "inspect-ai"]
SHIM = ("import typing, typing_extensions\n"
        "typing.override = typing_extensions.override\n"
        "typing.TypedDict = typing_extensions.TypedDict\n")


def make_environment(where: Path) -> Path:
    """The side environment's Python, made (once) with both packages and the shim."""
    python = where / "bin" / "python"
    if not python.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(where)
        pip = [str(python), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, "--no-deps", "--ignore-requires-python", HARBOR, EEE], check=True)
        subprocess.run([*pip, *IMPORTED], check=True)
        site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path("
                               "'purelib'))"], check=True, capture_output=True, text=True)
        purelib = Path(site.stdout.strip())
        (purelib / "_oloproof_py312_shim.py").write_text(SHIM)
        (purelib / "_oloproof_py312_shim.pth").write_text("import _oloproof_py312_shim\n")
    return python


# --- inside the side environment ---------------------------------------------------------

T0 = "2026-11-02T09:00:00+00:00"
# Where the files say the job ran (a machine's absolute path would change with every run)
RECORDED_DIR = "/jobs/2026-11-02__09-00-00"


def _clock(minute: int, second: int = 0) -> str:
    return f"2026-11-02T09:{minute:02d}:{second:02d}+00:00"


def harbor_trajectory(task: str, commands: list[tuple[str, str]], answer: str,
                      minute: int) -> Any:
    """An agent's ATIF trajectory as Harbor's Terminus agent records one: the instructions
    (system), the task (user), then one agent step per command — the model's message, a
    `bash_command` call, the terminal's output as the observation, the step's tokens and cost —
    and a last agent step marking the task complete."""
    from harbor.models.trajectories import (
        Agent,
        FinalMetrics,
        Metrics,
        Observation,
        ObservationResult,
        Step,
        ToolCall,
        Trajectory,
    )

    steps = [Step(step_id=1, timestamp=_clock(minute), source="system",
                  message="You are an agent working in a Linux terminal."),
             Step(step_id=2, timestamp=_clock(minute, 1), source="user",
                  message=f"Task {task}: see /app/README.md.")]
    for n, (keystrokes, output) in enumerate(commands, 1):
        call_id = f"call_{n}_1"
        steps.append(Step(
            step_id=len(steps) + 1, timestamp=_clock(minute, 2 + n), source="agent",
            model_name="acme/desk-1", message=f"Running step {n}.",
            tool_calls=[ToolCall(tool_call_id=call_id, function_name="bash_command",
                                 arguments={"keystrokes": keystrokes, "duration": 1.0})],
            observation=Observation(results=[ObservationResult(source_call_id=call_id,
                                                               content=output)]),
            metrics=Metrics(prompt_tokens=1200 + 300 * n, completion_tokens=80 + n,
                            cached_tokens=1000 if n > 1 else None, cost_usd=0.0021 * n)))
    done = f"call_{len(commands) + 1}_task_complete"
    steps.append(Step(
        step_id=len(steps) + 1, timestamp=_clock(minute, 30), source="agent",
        model_name="acme/desk-1", message=answer,
        tool_calls=[ToolCall(tool_call_id=done, function_name="mark_task_complete",
                             arguments={})],
        observation=Observation(results=[ObservationResult(source_call_id=done,
                                                           content="Task marked complete.")]),
        metrics=Metrics(prompt_tokens=2000, completion_tokens=40, cost_usd=0.003)))
    agent_steps = [s for s in steps if s.metrics is not None]
    return Trajectory(
        session_id=f"session-{task}-{minute}",
        agent=Agent(name="terminus-2", version="2.0.0", model_name="acme/desk-1"),
        steps=steps,
        final_metrics=FinalMetrics(
            total_prompt_tokens=sum(s.metrics.prompt_tokens for s in agent_steps),
            total_completion_tokens=sum(s.metrics.completion_tokens for s in agent_steps),
            total_cached_tokens=sum(s.metrics.cached_tokens or 0 for s in agent_steps),
            total_cost_usd=round(sum(s.metrics.cost_usd for s in agent_steps), 6),
            total_steps=len(steps)))


# (task, minute it started, rewards or None, exception type or None, commands)
TRIALS: list[tuple[str, int, dict[str, float] | None, str | None, list[tuple[str, str]]]] = [
    ("fix-permissions", 0, {"reward": 1.0}, None,
     [("chmod 600 /app/key\n", ""), ("ls -l /app/key\n", "-rw------- 1 root root 64 key")]),
    ("fix-permissions", 1, {"reward": 1.0}, None, [("chmod 600 /app/key\n", "")]),
    ("fix-permissions", 2, {"reward": 0.0}, None, [("chmod 644 /app/key\n", "")]),
    ("parse-logs", 3, {"reward": 0.0}, None, [("grep ERROR app.log | wc -l\n", "17")]),
    ("parse-logs", 4, {"reward": 0.5}, None,
     [("grep -c ERROR app.log\n", "17"), ("echo 17 > /app/answer\n", "")]),
    ("parse-logs", 5, {"reward": 0.75}, "AgentTimeoutError", [("sleep 900\n", "")]),
    ("build-index", 6, None, "NonZeroAgentExitCodeError", [("make index\n", "make: *** Error 2")]),
    ("build-index", 7, None, None, [("make index\n", "index built")]),
    ("build-index", 8, None, "ContextWindowExceededError", [("cat huge.log\n", "...")]),
    ("resize-images", 9, None, "VerifierTimeoutError", [("mogrify -resize 50% *.png\n", "")]),
    ("resize-images", 10, {"reward": 1.0}, None, [("mogrify -resize 50% *.png\n", "")]),
]


def make_harbor_job(out: Path) -> list[str]:
    """The job folder; the names of its trials."""
    import shortuuid
    from harbor.models.agent.context import AgentContext
    from harbor.models.job.result import JobResult, JobStats
    from harbor.models.task.id import LocalTaskId
    from harbor.models.trial.config import TaskConfig, TrialConfig
    from harbor.models.trial.paths import TrialPaths
    from harbor.models.trial.result import (
        AgentInfo,
        ExceptionInfo,
        ModelInfo,
        TimingInfo,
        TrialResult,
    )
    from harbor.models.verifier.result import VerifierResult
    from harbor.utils.trajectory_utils import compute_model_usage, format_trajectory_json
    from harbor.utils.trajectory_validator import validate_trajectory

    job = out / "harbor-job"
    shutil.rmtree(job, ignore_errors=True)
    job.mkdir(parents=True)
    results = []
    for n, (task, minute, rewards, exception, commands) in enumerate(TRIALS):
        # Harbor names a trial `task__` and 7 random characters; these are drawn from the
        # trial's own name (uuid5), so a run of this script makes the same names again
        name = f"{task}__{shortuuid.ShortUUID().uuid(name=f'{task}-{minute}')[:7]}"
        paths = TrialPaths(job / name)
        paths.mkdir()
        trajectory = harbor_trajectory(task, commands, f"Done with {task}.", minute)
        document = trajectory.to_json_dict()
        if not validate_trajectory(document):
            raise SystemExit(f"Harbor's validator refused the trajectory of {name}")
        paths.agent_dir.mkdir(parents=True, exist_ok=True)
        (paths.agent_dir / "trajectory.json").write_text(format_trajectory_json(document))
        final = trajectory.final_metrics
        usage = compute_model_usage(trajectory)
        config = TrialConfig(task=TaskConfig(path=Path("tasks") / task), trial_name=name,
                             trials_dir=Path(RECORDED_DIR))
        paths.config_path.write_text(config.model_dump_json(indent=4))
        started = f"2026-11-02T09:{minute:02d}:00+00:00"
        finished = f"2026-11-02T09:{minute:02d}:59+00:00"
        result = TrialResult(
            id=f"00000000-0000-4000-8000-{n:012d}",
            task_name=task, trial_name=name, trial_uri=f"file://{RECORDED_DIR}/{name}",
            task_id=LocalTaskId(path=Path("tasks") / task), source="oloproof-fixtures",
            task_checksum=f"{n:064x}", config=config,
            agent_info=AgentInfo(name="terminus-2", version="2.0.0",
                                 model_info=ModelInfo(name="desk-1", provider="acme")),
            agent_result=AgentContext(
                n_input_tokens=final.total_prompt_tokens,
                n_cache_tokens=final.total_cached_tokens,
                n_output_tokens=final.total_completion_tokens,
                cost_usd=final.total_cost_usd, model_usage=usage),
            verifier_result=VerifierResult(rewards=rewards) if rewards is not None else None,
            exception_info=None if exception is None else ExceptionInfo(
                exception_type=exception, exception_message=f"{exception} in {task}",
                exception_traceback=f"Traceback (most recent call last):\n{exception}\n",
                occurred_at=finished),
            started_at=started, finished_at=finished,
            agent_execution=TimingInfo(started_at=started, finished_at=finished))
        paths.result_path.write_text(result.model_dump_json(indent=4))
        results.append(result)
    stats = JobStats.from_trial_results(results, n_total_trials=len(results))
    job_result = JobResult(id="00000000-0000-4000-8000-00000000beef", started_at=T0,
                           finished_at=_clock(11), n_total_trials=len(results), stats=stats,
                           trial_results=results)
    (job / "result.json").write_text(job_result.model_dump_json(indent=4,
                                                                exclude={"trial_results"}))
    return [r.trial_name for r in results]


def make_atif(out: Path) -> list[str]:
    """Standalone ATIF files, each passed by Harbor's validator; their names."""
    from harbor.models.trajectories import (
        Agent,
        FinalMetrics,
        Metrics,
        Observation,
        ObservationResult,
        Step,
        SubagentTrajectoryRef,
        ToolCall,
        Trajectory,
    )
    from harbor.models.trajectories.content import ContentPart, ImageSource
    from harbor.utils.trajectory_utils import format_trajectory_json
    from harbor.utils.trajectory_validator import validate_trajectory

    folder = out / "atif"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    agent = Agent(name="desk-agent", version="1.4.0", model_name="acme/desk-1",
                  tool_definitions=[{"type": "function", "function": {
                      "name": "find_order", "parameters": {"type": "object"}}}])
    made: dict[str, Trajectory] = {}
    made["v1_0_minimal"] = Trajectory(
        schema_version="ATIF-v1.0", session_id="s-minimal", agent=agent,
        steps=[Step(step_id=1, source="user", message="Where is order A-17?"),
               Step(step_id=2, source="agent", message="It was delivered on Monday.")])
    made["tools_and_observation"] = Trajectory(
        schema_version="ATIF-v1.5", session_id="s-tools", agent=agent,
        steps=[
            Step(step_id=1, source="system", message="You answer customers."),
            Step(step_id=2, source="user", message="Refund order A-17."),
            Step(step_id=3, source="agent", message="", reasoning_content="Look it up first.",
                 tool_calls=[ToolCall(tool_call_id="c1", function_name="find_order",
                                      arguments={"order_id": "A-17"}),
                             ToolCall(tool_call_id="c2", function_name="find_customer",
                                      arguments={"order_id": "A-17"})],
                 observation=Observation(results=[
                     ObservationResult(source_call_id="c1",
                                       content='{"status": "delivered", "total": 42.5}'),
                     ObservationResult(source_call_id="c2", content="Ada Lovelace"),
                     ObservationResult(content="note: customer is a VIP")]),
                 metrics=Metrics(prompt_tokens=300, completion_tokens=20, cost_usd=0.001)),
            Step(step_id=4, source="system", message="",
                 observation=Observation(results=[ObservationResult(
                     content="the refund service is slow today")])),
            Step(step_id=5, source="agent", message="Refunded 42.5 to Ada.",
                 metrics=Metrics(prompt_tokens=400, completion_tokens=12, cost_usd=0.0015)),
        ])
    made["multimodal_copied_context"] = Trajectory(
        schema_version="ATIF-v1.6", agent=agent,
        steps=[
            Step(step_id=1, source="user", message="Summary of the earlier session.",
                 is_copied_context=True),
            Step(step_id=2, source="user", message=[
                ContentPart(type="text", text="What is wrong with this screen?"),
                ContentPart(type="image", source=ImageSource(media_type="image/png",
                                                             path="screens/1.png"))]),
            Step(step_id=3, source="agent", message=[
                ContentPart(type="text", text="The form "),
                ContentPart(type="text", text="has no submit button.")],
                 metrics=Metrics(prompt_tokens=900, completion_tokens=15)),
        ])
    sub = Trajectory(trajectory_id="sub-1", agent=Agent(name="lookup-agent", version="1.0"),
                     steps=[Step(step_id=1, source="user", message="find A-17"),
                            Step(step_id=2, source="agent", message="found")])
    made["subagent"] = Trajectory(
        schema_version="ATIF-v1.7", session_id="s-sub", agent=agent,
        steps=[Step(step_id=1, source="user", message="Where is A-17?"),
               Step(step_id=2, source="agent", message="", llm_call_count=0,
                    tool_calls=[ToolCall(tool_call_id="d1", function_name="delegate",
                                         arguments={"to": "lookup-agent"})],
                    observation=Observation(results=[ObservationResult(
                        source_call_id="d1", content="found",
                        subagent_trajectory_ref=[SubagentTrajectoryRef(
                            trajectory_id="sub-1")])])),
               Step(step_id=3, source="agent", message="A-17 was delivered.",
                    llm_call_count=1)],
        final_metrics=FinalMetrics(total_prompt_tokens=50, total_completion_tokens=9,
                                   total_cost_usd=0.0002, total_steps=3),
        subagent_trajectories=[sub])
    for name, trajectory in made.items():
        document = trajectory.to_json_dict()
        if not validate_trajectory(document):
            raise SystemExit(f"Harbor's validator refused {name}")
        (folder / f"{name}.json").write_text(format_trajectory_json(document))
    return sorted(made)


def write_with_oloproof(out: Path) -> list[str]:
    """Oloproof's `to_atif` output for each trajectory of the job, passed by Harbor's
    validator; the names written."""
    sys.path.insert(0, str(REPO / "src"))
    from harbor.utils.trajectory_validator import validate_trajectory

    from oloproof.traces.atif import read_atif, to_atif

    folder = out / "atif-written"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    names = []
    for source in sorted((out / "harbor-job").glob("*/agent/trajectory.json")):
        reading = read_atif(source)
        document = to_atif(reading.trajectory, agent_name="terminus-2", agent_version="2.0.0",
                           model_name="acme/desk-1",
                           usage=reading.usage.payload() if reading.usage else None,
                           session_id=reading.trace_id)
        if not validate_trajectory(document):
            raise SystemExit(f"Harbor's validator refused Oloproof's ATIF for {source}")
        name = source.parent.parent.name
        (folder / f"{name}.json").write_text(json.dumps(document, indent=2) + "\n")
        names.append(name)
    return names


def export_with_oloproof(out: Path, oloproof: Path) -> dict[str, Any]:
    """`oloproof import harbor` of `harbor-job/`, then `oloproof export atif` and `export eee`
    (the checkout's own command, `oloproof`, run in its own environment), each file passed by
    Harbor's `validate_trajectory` / Every Eval Ever's validator; what each said."""
    from harbor.utils.trajectory_validator import validate_trajectory

    folder = out / "exported"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as scratch:
        for args in (["import", "harbor", str(out / "harbor-job")],
                     ["export", "atif", "-o", str(folder / "harbor-job.atif.json")],
                     ["export", "eee", "-o", str(folder / "eee"), "--developer", "acme"]):
            subprocess.run([str(oloproof), *args], cwd=scratch, check=True,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    documents = json.loads((folder / "harbor-job.atif.json").read_text())
    for document in documents:
        if not validate_trajectory(document):
            raise SystemExit(f"Harbor's validator refused `oloproof export atif`'s "
                             f"{document['session_id']}")
    files = sorted(str(p.relative_to(folder / "eee")) for p in (folder / "eee").rglob("*")
                   if p.is_file())
    checked = subprocess.run([sys.executable, "-m", "every_eval_ever", "validate",
                              "--format", "json", *files], cwd=folder / "eee",
                             capture_output=True, text=True)
    report = json.loads(checked.stdout)
    if checked.returncode != 0 or not all(r["valid"] for r in report):
        raise SystemExit(f"Every Eval Ever's validator refused `oloproof export eee`'s files:"
                         f"\n{checked.stdout}")
    return {"atif": [d["session_id"] for d in documents],
            "eee": {"files": files, "validator": [
                {"file": r["file"], "valid": r["valid"], "warnings": len(r["warnings"])}
                for r in report]}}


def make_eee(out: Path, logs: dict[str, str]) -> dict[str, Any]:
    """Every Eval Ever files from the Inspect logs, by its converter; its validator's word.

    The converter names a model's developer from the provider in the log's model, and knows
    no `mockllm`: each log's header is written again (by Inspect's own reader and writer) with
    the model as an OpenAI-compatible endpoint serving the same model would name it
    (`openai-api/acme/desk-1`); the samples are untouched.
    """
    from inspect_ai.log import read_eval_log, write_eval_log

    folder = out / "eee"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name in ("clean", "desk-eee"):
        log = read_eval_log(logs[name])
        log.eval.model = log.eval.model.replace("mockllm/", "openai-api/", 1)
        relabelled = Path(logs[name]).with_name(f"relabelled-{Path(logs[name]).name}")
        write_eval_log(log, str(relabelled))
        done = subprocess.run([sys.executable, "-m", "every_eval_ever", "convert", "inspect",
                               "--log_path", str(relabelled), "--output_dir", "data",
                               "--source_organization_name", "Oloproof fixtures"],
                              cwd=folder, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"Every Eval Ever's converter failed on {name}:\n{done.stderr}")
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    checked = subprocess.run([sys.executable, "-m", "every_eval_ever", "validate",
                              "--format", "json", *files], cwd=folder, capture_output=True,
                             text=True)
    report = json.loads(checked.stdout)
    if checked.returncode != 0 or not all(r["valid"] for r in report):
        raise SystemExit(f"Every Eval Ever's validator refused the files:\n{checked.stdout}")
    return {"files": files, "validator": [{"file": r["file"], "valid": r["valid"],
                                           "warnings": len(r["warnings"])} for r in report]}


def inside(out: Path, oloproof: Path, exported_only: bool = False) -> None:
    from importlib.metadata import version

    if exported_only:  # the exports of this checkout again, the other files as they are
        manifest = json.loads((out / "manifest.json").read_text())
        manifest["exported"] = export_with_oloproof(out, oloproof)
        (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        return
    sys.path.insert(0, str(REPO / "tests" / "harnesses"))
    import inspect_tasks

    with tempfile.TemporaryDirectory() as scratch:
        logs = inspect_tasks.make_logs(Path(scratch))
        # The converter cannot write Inspect's unscored (NaN) score — it stops with "Out of
        # range float values are not JSON compliant" —, so the desk again without `odd`
        logs["desk-eee"] = inspect_tasks.make_logs(Path(scratch) / "eee", {
            "desk-eee": (inspect_tasks.desk_task(
                [s for s in inspect_tasks.DESK if s.id != "odd"], "desk"), "eval")})["desk-eee"]
        manifest = {
            "python": sys.version.split()[0],
            "packages": {name: version(name) for name in
                         ("harbor", "every-eval-ever", "inspect-ai", "pydantic")},
            "harbor_job": make_harbor_job(out),
            "atif": make_atif(out),
            "atif_written": write_with_oloproof(out),
            "eee": make_eee(out, logs),
        }
    manifest["exported"] = export_with_oloproof(out, oloproof)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path,
                        default=Path(tempfile.gettempdir()) / "oloproof-harness-env")
    parser.add_argument("--oloproof", type=Path, default=REPO / ".venv" / "bin" / "oloproof",
                        help="this checkout's `oloproof` command (its own environment), "
                             "whose exports are validated")
    parser.add_argument("--exported-only", action="store_true",
                        help="only export again and validate (`exported/`)")
    parser.add_argument("--inside", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside is not None:
        inside(args.inside, args.oloproof, args.exported_only)
        return
    python = make_environment(args.venv)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    subprocess.run([str(python), __file__, "--inside", str(HERE), "--oloproof",
                    str(args.oloproof.resolve()),
                    *(["--exported-only"] if args.exported_only else [])], check=True, env=env)
    print(f"made the files under {HERE}")


if __name__ == "__main__":
    main()
