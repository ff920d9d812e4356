"""The reports show the trajectory facts the engine computed, never their own version of them.

A route and a pair's actions are computed by `AgentTrajectory` (`route()`, `actions()`), once,
in Python: the HTML page is given the route stored with the case's facts, and the pair panel
compares actions as `same_actions` does (a call recorded without arguments is the same call as
one with `{}`).
"""

from __future__ import annotations

import json
import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import oloproof
from oloproof.recording.trajectory import TRAJECTORY_KIND, AgentTrajectory
from oloproof.report.html_data import build_report_data
from oloproof.store.store import Store

EXAMPLES = Path(oloproof.__file__).parent / "examples"


def test_the_page_gets_each_route_as_the_trajectory_computes_it(tmp_path: Path) -> None:
    project = tmp_path / "triage"
    shutil.copytree(EXAMPLES / "triage_agents", project)
    result = oloproof.run(project / "oloproof.yaml", store=tmp_path / "s.sqlite")
    store = Store(tmp_path / "s.sqlite")
    try:
        data = build_report_data(store, result.run_id, result.document, compress=False)
        routes: dict[str, list[str] | None] = {}
        for chunk in data.chunks:
            for case in json.loads(chunk):
                routes[case["case"]] = case.get("route")
        recorded = {}
        for case_id, _digest, key, _outcome in store.iter_run_cases(result.run_id):
            execution = store.load_executions([key]).get(key) or {}
            payload = execution["artifacts"][TRAJECTORY_KIND]
            recorded[case_id] = AgentTrajectory.model_validate(payload).route()
    finally:
        store.close()
    assert len(routes) == 30
    assert routes == recorded
    assert all(route is not None and route[0] == "triage" for route in routes.values())


QUIET_APP = '''
from oloproof import AgentStep, AgentTrajectory, current_case, system


@system(name="quiet-desk", version="v1", records=("agent_trajectory/v1",))
def run(case_input):
    # the same call, recorded without its arguments when the request says "quietly"
    arguments = None if "quietly" in case_input["message"] else {}
    current_case().agent_trajectory(AgentTrajectory(steps=(
        AgentStep(index=1, kind="tool_call", tool_name="lookup_order", arguments=arguments),
        AgentStep(index=2, kind="final", arguments={"answer": "ok"}),
    ), terminal_status="success"))
    return {"answer": "ok"}
'''


def test_the_pair_panel_compares_actions_as_same_actions_does(
    tmp_path: Path, cli: Callable[..., Any]
) -> None:
    (tmp_path / "app.py").write_text(textwrap.dedent(QUIET_APP))
    (tmp_path / "cases.jsonl").write_text(
        json.dumps({"id": "c1", "input": {"message": "look it up"}}) + "\n")
    (tmp_path / "oloproof.yaml").write_text(textwrap.dedent("""\
        version: 1
        project: quiet
        dataset: cases.jsonl
        system: {name: quiet-desk, version: v1, callable: app:run,
                 records: [agent_trajectory/v1]}
        evaluators:
          - {type: metamorphic_relation, relation: same_actions, transform: quiet}
        metamorphic:
          transforms:
            - {name: quiet, field: message, template: "{value} quietly"}
        """))
    (tmp_path / "release.yaml").write_text("version: 1\nrules: []\n")
    code, out, err = cli("run", "--json", cwd=tmp_path)
    assert code == 0, err
    relation = next(m for m in json.loads(out)["metrics"] if m["id"] == "same_actions_under_quiet")
    assert (relation["passed"], relation["observed"]) == (1, 1)
    code, out, err = cli("inspect", "latest", "--case", "c1~quiet", cwd=tmp_path,
                         env={"COLUMNS": "120"})
    assert code == 0, err
    actions = [line for line in out.splitlines() if "actions" in line and "lookup_order" in line]
    assert actions, out
    assert all("≠" not in line for line in actions), out
