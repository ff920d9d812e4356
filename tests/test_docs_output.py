"""The docs show real output (issue 10 §2): each command a page shows is run, at 80 columns, and
what it prints must be what the page shows (`…` marks lines the page leaves out; run ids and
times are compared as placeholders).

`docs/getting-started.md` is one session from `oloproof init demo` on. From `docs/cli.md`, every
`--help` and every other block is run in the projects the page describes (the starter; the
starter whose desk breaks six cases; the starter with a misspelt evaluator; the
`stateful-agent` example), and its JSON examples are compared with the documents those runs
give. `docs/agents-and-tools.md`, `docs/stateful-agents.md` and `docs/reliability.md` run the
packaged examples they show, and the projects their prose describes (a starter desk that names
its agent on one step only, a two-case sandbox); `docs/concepts.md` its clustered suite;
`docs/configuration.md` each configuration error in the project its prose names;
`docs/compare.md` and `docs/ci.md` the support_agent example as the baseline and the candidate
the page describes (with the Markdown and JUnit files the CI job writes); `docs/scaling.md`
the stateful-agent example on the processes executor and a local Ray instance;
`docs/failures.md` the starter whose order service fails for a while (the page's own code);
`docs/pytest.md` a pytest session of the page's own test file; `docs/board.md` the runs of
every variant of the suite its prose describes.
Each test lists a page's console blocks by their first command, so a block added to a page is
run or excluded here by name, never skipped silently.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path

import fork_server
import pytest
from docs_session import Block, Session, console_blocks, matches, normalised

from oloproof.recording.turns import DEFAULT_PROMPT

DOCS = Path(__file__).resolve().parents[1] / "docs"

pytestmark = pytest.mark.slow


def _check(block: Block, session: Session, page: str, only_help: bool = False,
           but_help: bool = False, before: Callable[[str], None] | None = None) -> list[str]:
    """Runs the block's steps in `session`; what each printed. `before(command)` is called
    before each step (to make what the page says the step finds)."""
    outputs = []
    for step in block.steps:
        if step.command.endswith("--help") and but_help:
            continue  # test_cli_help_blocks_are_the_real_help runs it
        if only_help and not step.command.endswith("--help"):
            continue
        if before is not None:
            before(step.command)
        printed = session.run(step.command)
        assert matches(step.shown, printed), (
            f"docs/{page}:{block.line}: `$ {step.command}` printed, at 80 columns:\n"
            + printed)
        outputs.append(printed)
    return outputs


def _first_commands(blocks: list[Block]) -> list[str]:
    return [b.steps[0].command if b.steps else "" for b in blocks]


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{path.name} no longer holds {old!r}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _new_dir(path: Path) -> Path:
    path.mkdir()
    return path


def _init(where: Path, name: str, *options: str) -> Path:
    session = Session(where)
    printed = session.run(" ".join(("oloproof init", *options, name)))
    assert session.code == 0, printed
    return where / name


def _run_from_home(blocks: list[Block], session: Session, page: str) -> None:
    """The blocks as one session; a block that starts with `oloproof init` starts from `~`."""
    for block in blocks:
        if block.steps[0].command.startswith("oloproof init"):
            session.cwd = session.home
        _check(block, session, page)


def _strict_policy(page: Path) -> str:
    """The ```yaml block the page says is written to strict.yaml."""
    text = page.read_text(encoding="utf-8")
    found = re.search(r"written to `strict\.yaml`:\s*```yaml\n(.*?)```", text, re.S)
    assert found, "getting-started.md shows strict.yaml"
    return found.group(1)


def _iterating(page: Path) -> tuple[str, str]:
    """The check `checks.py` holds and the line it adds to `oloproof.yaml`, as "Iterating on one
    case" shows them."""
    text = page.read_text(encoding="utf-8").split("## Iterating on one case", 1)[1]
    check = re.search(r"in `checks\.py` beside `oloproof\.yaml`:\s*```python\n(.*?)```", text,
                      re.S)
    line = re.search(r"evaluators of `oloproof\.yaml`:\s*```yaml\n(.*?)```", text, re.S)
    assert check and line, "getting-started.md shows checks.py and its line"
    return check.group(1), line.group(1)


def test_getting_started_shows_what_the_commands_print(tmp_path: Path) -> None:
    page = DOCS / "getting-started.md"
    session = Session(tmp_path)
    blocks = console_blocks(page)
    assert len(blocks) >= 8
    check, line = _iterating(page)

    def before(command: str) -> None:
        # "Iterating on one case": the check as the page writes it, then as the reader fixes it.
        if command == "oloproof run --case req-013":
            (session.cwd / "checks.py").write_text(check, encoding="utf-8")
            _edit(session.cwd / "oloproof.yaml", "  - {type: agent_constraints_satisfied}\n",
                  "  - {type: agent_constraints_satisfied}\n" + line)
        elif command == "oloproof rescore":
            _edit(session.cwd / "checks.py", '"decline",', '"declined",')

    for block in blocks:
        if block.steps and block.steps[0].command.startswith(("python3 -m venv", "make demo")):
            continue  # installing: not run here
        if any(s.command.startswith("oloproof gate latest --policy strict.yaml")
               for s in block.steps):
            (session.cwd / "strict.yaml").write_text(_strict_policy(page), encoding="utf-8")
        _check(block, session, "getting-started.md", before=before)
    assert session.code == 3


def test_getting_started_says_what_make_demo_installs() -> None:
    text = " ".join((DOCS / "getting-started.md").read_text(encoding="utf-8").split())
    makefile = (DOCS.parent / "Makefile").read_text(encoding="utf-8")
    demo = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    test = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    # make demo installs the package alone; make test is the target with the test extras.
    assert demo.split("\n", 1)[0].split() == ["install"]
    assert "-e ." in makefile.split("$(VENV)/.installed:", 1)[1].split("\n\n", 1)[0]
    assert ".installed-test" in test
    assert "(with its test extras)" not in text
    assert "the package alone: `make test` is the target that adds the test extras" in text


def test_cli_help_blocks_are_the_real_help(tmp_path: Path) -> None:
    blocks = [b for b in console_blocks(DOCS / "cli.md")
              if b.steps and b.steps[0].command.endswith("--help")]
    assert len(blocks) >= 8
    session = Session(tmp_path)
    for block in blocks:
        _check(block, session, "cli.md", only_help=True)


def test_cli_init_examples_are_real(tmp_path: Path) -> None:
    blocks = console_blocks(DOCS / "cli.md")
    first = next(b for b in blocks if b.steps[0].command == "oloproof init demo")
    assert any(s.command == "oloproof init --example list" for s in first.steps)
    _check(first, Session(tmp_path), "cli.md")
    # In a repository that already has a README.md and a .gitignore:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("# mine\n", encoding="utf-8")
    (repo / ".gitignore").write_text("*.pyc\n", encoding="utf-8")
    second = next(b for b in blocks if b.steps[0].command == "oloproof init")
    _check(second, Session(repo), "cli.md")


def test_agents_and_tools_shows_what_the_examples_print(tmp_path: Path) -> None:
    page = DOCS / "agents-and-tools.md"
    blocks = console_blocks(page)
    assert _first_commands(blocks) == [
        "oloproof run",
        "oloproof init --example support_agent sa && cd sa && oloproof run",
        "oloproof inspect latest --slices all",
        "oloproof init --example triage_agents ta && cd ta && oloproof run",
        "oloproof inspect latest --slices all",
    ]
    # "the starter project's desk named its agent on the first step only, for one case"
    named = _init(tmp_path, "named")
    _edit(named / "app.py", '    steps.message({"text": case_input["message"]})',
          '    named = current_case().case_id == "req-003"\n'
          '    steps.message({"text": case_input["message"]}, agent="desk" if named else None)')
    _check(blocks[0], Session(named), page.name)
    _run_from_home(blocks[1:], Session(_new_dir(tmp_path / "examples")), page.name)


#: The two-case sandbox `docs/stateful-agents.md` describes before its `inspect --case b`: the
#: page's `tiny-store`, whose case `b` refunds `ord-1` and also writes a note on `ord-2`.
TINY_STORE = {
    "app.py": '''import copy

from oloproof import system


@system(name="tiny-store", version="1")
class Store:
    def __init__(self):
        self.state = {}

    def reset(self, state):
        self.state = state

    def snapshot(self):
        return copy.deepcopy(self.state)

    def __call__(self, case_input):
        orders = self.state["orders"]
        orders[case_input["order_id"]]["status"] = "refunded"
        if case_input.get("note"):
            orders["ord-2"]["note"] = "touched"
        return {"answer": "refunded"}


desk = Store()
''',
    "oloproof.yaml": '''version: 1
project: tiny
dataset: data/cases.jsonl
system: {name: tiny-store, version: "1", callable: app:desk}
evaluators:
  - {type: state_matches, mode: changes}
  - {type: state_unchanged, criterion: other_order_untouched, paths: [orders.ord-2, customers.c2]}
''',
    "release.yaml": '''version: 1
rules:
  - {id: end-state, metric: state_matches, min: 0.5}
''',
}


def _tiny_store(where: Path) -> Path:
    for name, text in TINY_STORE.items():
        (where / name).write_text(text, encoding="utf-8")
    state = {"orders": {"ord-1": {"status": "delivered", "amount": 10},
                        "ord-2": {"status": "delivered", "amount": 20}}}
    expected = {"state": {"orders": {"ord-1": {"status": "refunded"}}}}
    (where / "data").mkdir()
    (where / "data" / "cases.jsonl").write_text("".join(
        json.dumps({"id": case, "input": case_input, "initial_state": state,
                    "expected": expected}) + "\n"
        for case, case_input in [("a", {"order_id": "ord-1"}),
                                 ("b", {"order_id": "ord-1", "note": True})]),
        encoding="utf-8")
    return where


def _text_blocks_after(page: Path, marker: str) -> list[str]:
    text = page.read_text(encoding="utf-8")
    at = text.index(marker)
    return re.findall(r"```text\n(.*?)```", text[at:at + 3000], re.S)


def test_stateful_agents_shows_what_the_example_prints(tmp_path: Path) -> None:
    page = DOCS / "stateful-agents.md"
    blocks = console_blocks(page)
    assert _first_commands(blocks) == [
        "oloproof inspect latest --case b",
        # The worked example's `inspect` excerpt, without its command: run and compared by
        # tests/engine/test_replayable_docs.py, which builds the page's sync desk.
        "",
        "oloproof inspect latest --case req-101",
        "oloproof init --example stateful-agent st && cd st && oloproof run",
        "oloproof inspect latest --case 'req-121~injected'",
    ]
    tiny = Session(_tiny_store(_new_dir(tmp_path / "tiny")))
    tiny.run("oloproof run")
    _check(blocks[0], tiny, page.name)

    session = Session(_new_dir(tmp_path / "examples"))
    # The page shows the example's run after the case panels it explains; the run comes first.
    ran = _check(blocks[3], session, page.name)[0]
    for block in (blocks[2], blocks[4]):
        _check(block, session, page.name)

    # "The report prints a line per transform", and after editing one source case (req-101's
    # message) the same suite reads as the second block says.
    checked, stale = _text_blocks_after(page, "The report prints a line per transform")
    assert checked in normalised(ran)
    _edit(session.cwd / "data" / "cases.jsonl", "lid cracked the first time I used it.",
          "lid cracked on the first day.")
    assert stale in normalised(session.run("oloproof run"))


#: The console blocks of docs/cli.md that are not run here, and why.
CLI_NOT_RUN = {
    # Its input is an OTLP file an instrumented agent recorded, with the OpenTelemetry SDK's
    # random trace ids; tests/traces/test_traces_import.py makes one and runs the command.
    "oloproof traces import spans.otlp.json --out prod-suite",
}


def _break_six_cases(starter: Path) -> None:
    """"The starter project's desk raised for two cases, returned a string for two and slept
    past `timeout_s: 1` for two (with `concurrency: 1`)"."""
    _edit(starter / "app.py", "from typing import Any\n", "import time\nfrom typing import Any\n")
    answer = '    """Answer one customer request."""\n'
    _edit(starter / "app.py", answer, answer + '''\
    case_id = current_case().case_id
    if case_id in ("req-005", "req-006"):
        raise RuntimeError("order service unavailable")
    if case_id in ("req-009", "req-010"):
        return "refunded"
    if case_id in ("req-013", "req-014"):
        time.sleep(1.5)
''')
    _edit(starter / "oloproof.yaml", "timeout_s: 30 ", "timeout_s: 1  ")
    _edit(starter / "oloproof.yaml", "concurrency: 8", "concurrency: 1")


def _shown_json(page: Path, after: str) -> object:
    text = page.read_text(encoding="utf-8")
    found = re.search(r"```json\n(.*?)```", text[text.index(after):], re.S)
    assert found, f"{page.name} shows JSON after {after!r}"
    return json.loads(found.group(1))


def _same_value(shown: object, real: object) -> bool:
    """A number or constant the page shows is the real one; an unrounded float's last bits
    are SciPy's and NumPy's, not the page's (a NumPy/SciPy release moved a bound shown as
    -0.024870078059792876 to -0.024870078059793053), so floats agree to 12 digits."""
    if isinstance(shown, float) and isinstance(real, float):
        return math.isclose(shown, real, rel_tol=1e-12)
    return shown == real


def _is_part_of(shown: object, real: object, where: str) -> None:
    """`shown` is `real` trimmed: the same keys in the same order, lists cut to some of their
    items, run ids as placeholders."""
    if isinstance(shown, dict):
        assert isinstance(real, dict) and list(shown) == list(real), (where, list(real))
        for key, value in shown.items():
            _is_part_of(value, real[key], f"{where}.{key}")
    elif isinstance(shown, list):
        assert isinstance(real, list), where
        for item in shown:
            assert any(_matches_json(item, r) for r in real), (where, item, real[:3])
    elif isinstance(shown, str):
        assert normalised(shown) == normalised(real), (where, shown, real)
    else:
        assert _same_value(shown, real), (where, shown, real)


def _matches_json(shown: object, real: object) -> bool:
    try:
        _is_part_of(shown, real, "")
    except AssertionError:
        return False
    return True


def test_cli_blocks_show_what_the_commands_print(tmp_path: Path) -> None:
    page = DOCS / "cli.md"
    blocks = console_blocks(page)
    by_command: dict[str, list[Block]] = {}
    for block in blocks:
        by_command.setdefault(block.steps[0].command, []).append(block)
    assert list(by_command) == [
        "oloproof --help", "oloproof init --help", "oloproof init demo", "oloproof init",
        "oloproof run --help", "oloproof run --concurrency 2 --no-cache", "oloproof run",
        "oloproof run -k expired --limit 3", "oloproof rescore --help", "oloproof rescore",
        "oloproof runs --help", "oloproof tag --help", "oloproof inspect --help",
        "oloproof inspect latest --failures",
        "oloproof inspect nonsense", "oloproof cases --help", "oloproof cases latest",
        "oloproof gate --help", "cat warn.yaml", "oloproof board --help",
        "oloproof report --help",
        "oloproof view --help", "oloproof labels sample --help", "oloproof labels review --help",
        "oloproof labels export --help",
        "oloproof labels export --transform injected | head -1",
        "oloproof traces import --help",
        "oloproof traces import spans.otlp.json --out prod-suite",
        "oloproof import inspect --help", "oloproof import harbor --help",
        "oloproof export atif --help", "oloproof export eee --help", "oloproof run --json",
    ]
    ran: list[str] = []

    def check(command: str, session: Session, nth: int = 0) -> None:
        _check(by_command[command][nth], session, page.name, but_help=True)
        ran.append(command)

    # The starter project, its first run made with options; then the reading commands.
    demo = Session(_init(tmp_path, "demo"))
    check("oloproof run --concurrency 2 --no-cache", demo)
    check("oloproof runs --help", demo)  # its `runs --limit 1`
    check("oloproof tag --help", demo)  # `tag latest shipped`, then `runs --limit 1`
    check("oloproof inspect nonsense", demo)
    shown_policy = by_command["cat warn.yaml"][0].steps[0].shown
    (demo.cwd / "warn.yaml").write_text("\n".join(shown_policy) + "\n", encoding="utf-8")
    check("cat warn.yaml", demo)
    check("oloproof report --help", demo)  # its `report latest --html report.html`
    assert (demo.cwd / "report.html").stat().st_size > 0
    # Part of the suite, then the same outputs scored again.
    check("oloproof run -k expired --limit 3", demo)
    check("oloproof rescore", demo)
    # "Trimmed to one item per list, from the starter project" (a second run: from the cache)
    demo.run("oloproof run")
    _is_part_of(_shown_json(page, "Trimmed to one item per list"),
                json.loads(demo.run("oloproof inspect latest --json")), "document")

    # Six cases break.
    bad = _init(tmp_path, "bad")
    _break_six_cases(bad)
    broken = Session(tmp_path)
    broken.cwd = bad
    check("oloproof run", broken, nth=0)
    check("oloproof inspect latest --failures", broken)
    check("oloproof cases latest", broken)
    _is_part_of(_shown_json(page, "Errored cases, as they appear in `errors`"),
                json.loads(broken.run("oloproof inspect latest --json"))["errors"], "errors")

    # Configuration errors: a misspelt evaluator type, then an unknown key.
    typo = _init(tmp_path, "typo")
    configuration = Session(tmp_path)
    configuration.cwd = typo
    _edit(typo / "oloproof.yaml", "type: exact_match,", "type: exact_matches,")
    check("oloproof run", configuration, nth=1)
    _edit(typo / "oloproof.yaml", "type: exact_matches,", "type: exact_match,")
    _edit(typo / "oloproof.yaml", "{type: agent_tool_sequence}",
          "{type: agent_tool_sequence, order: false}")
    check("oloproof run --json", configuration)

    # Labels: the stateful-agent example's transform `injected`.
    stateful = Session(_init(tmp_path, "st", "--example stateful-agent"))
    check("oloproof labels export --transform injected | head -1", stateful)

    helps = [c for c in by_command if c.endswith("--help")]
    inits = ["oloproof init demo", "oloproof init"]  # test_cli_init_examples_are_real
    assert len(by_command["oloproof run"]) == 2
    assert sorted({*ran, *helps, *inits, *CLI_NOT_RUN}) == sorted(by_command)


def test_concepts_shows_what_a_clustered_suite_prints(tmp_path: Path) -> None:
    """"120 passing cases in 40 clusters of three (each cluster is one customer's three
    phrasings of a request), `oloproof run` at 95%"."""
    page = DOCS / "concepts.md"
    blocks = console_blocks(page)
    assert _first_commands(blocks) == ["oloproof run"]
    (tmp_path / "app.py").write_text(
        "from oloproof import system\n\n\n"
        '@system(name="echo", version="1")\n'
        "def run(case_input):\n"
        '    return {"answer": case_input["answer"]}\n', encoding="utf-8")
    (tmp_path / "oloproof.yaml").write_text(
        "version: 1\nproject: clusters\ndataset: data/cases.jsonl\n"
        'system: {name: echo, version: "1", callable: app:run}\nevaluators:\n'
        "  - {type: exact_match, criterion: answer_correct, field: answer,"
        " expected_field: answer}\n", encoding="utf-8")
    (tmp_path / "release.yaml").write_text(
        "version: 1\nconfidence_level: 0.95\nallow_approximate_methods: true\nrules:\n"
        "  - {id: answers, metric: answer_correct, min: 0.8}\n", encoding="utf-8")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{customer:02d}-{phrasing}", "cluster": f"customer-{customer:02d}",
                    "input": {"answer": "yes"}, "expected": {"answer": "yes"}}) + "\n"
        for customer in range(1, 41) for phrasing in range(1, 4)), encoding="utf-8")
    _check(blocks[0], Session(tmp_path), page.name)


def test_board_shows_the_runs_of_every_variant(tmp_path: Path) -> None:
    """docs/board.md#running-every-variant: "the ten-case suite whose system answers with its
    model — large right, small wrong, open right on half the cases — under one rule,
    answer_correct at least 0.5", the suite's variants the page's."""
    page = DOCS / "board.md"
    blocks = console_blocks(page)
    assert _first_commands(blocks) == ["python app.py > cases.jsonl", "oloproof run"]
    matrix = re.search(r"```yaml\n(system:\n.*?)```", page.read_text(encoding="utf-8"), re.S)
    assert matrix, "board.md shows the suite's system with its variants"
    (tmp_path / "app.py").write_text(
        "from oloproof import current_case\n\n\n"
        "def run(case_input):\n"
        '    model = current_case().variant["model"]\n'
        '    if model == "open":  # right on half the cases\n'
        '        return {"answer": "large" if case_input["n"] % 2 else "open"}\n'
        '    return {"answer": model}\n', encoding="utf-8")
    (tmp_path / "oloproof.yaml").write_text(
        "version: 1\nproject: desk\ndataset: cases.jsonl\n" + matrix.group(1)
        + "evaluators:\n  - {type: exact_match, criterion: answer_correct, field: answer,"
        " expected_field: answer}\n", encoding="utf-8")
    (tmp_path / "release.yaml").write_text(
        "version: 1\nrules:\n  - {id: answers, metric: answer_correct, min: 0.5}\n",
        encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{n}", "input": {"n": n}, "expected": {"answer": "large"}}) + "\n"
        for n in range(1, 11)), encoding="utf-8")
    _check(blocks[1], Session(tmp_path), page.name)


def _plain_blocks(page: Path) -> dict[int, list[str]]:
    """The page's ``` blocks without a language (output shown without its command), by the
    line they start on."""
    found: dict[int, list[str]] = {}
    lines = page.read_text(encoding="utf-8").splitlines()
    at = None
    for number, line in enumerate(lines, 1):
        if at is None and line.startswith("```"):
            at = number if line.strip() == "```" else -number
            if at > 0:
                found[at] = []
        elif at is not None and line.strip() == "```":
            at = None
        elif at is not None and at > 0:
            found[at].append(line)
    return found


def _shows_part_of(shown: list[str], printed: str, where: str) -> None:
    assert matches(["…", *shown, "…"], printed), f"{where} is not in what was printed:\n{printed}"


def test_reliability_shows_what_flaky_agent_prints(tmp_path: Path) -> None:
    page = DOCS / "reliability.md"
    blocks = console_blocks(page)
    assert _first_commands(blocks) == ["oloproof run --trials 8", "oloproof inspect latest --flaky"]
    plain = _plain_blocks(page)
    # The four scripted cases at `trials: 4` (one with errored trials) are described, not
    # packaged: that block is not run here.
    four_cases = next(at for at, lines in plain.items() if "4 cases × 4 trials" in "\n".join(lines))
    flaky = Session(_init(tmp_path, "fl", "--example flaky_agent"))
    printed = flaky.run("oloproof run")
    metrics, decisions, case_panel = (plain[at] for at in sorted(plain) if at != four_cases)
    _shows_part_of(metrics, printed, "docs/reliability.md: the Metrics of flaky_agent")
    _shows_part_of(decisions, printed, "docs/reliability.md: the decisions of flaky_agent")
    _check(blocks[1], flaky, page.name)
    _shows_part_of(case_panel, flaky.run("oloproof inspect latest --case req-004"),
                   "docs/reliability.md: the trials of req-004")
    _check(blocks[0], flaky, page.name)  # raising trials from 5 to 8


CHECKS_TWICE = '''from oloproof import evaluator


@evaluator(name="polite_reply")
def polite_reply(case, output, artifacts):
    return "please" in output.get("reply", "").lower()


@evaluator(name="polite_reply")
def polite_reply_v2(case, output, artifacts):
    return "thank" in output.get("reply", "").lower()
'''


def test_configuration_errors_are_what_the_commands_print(tmp_path: Path) -> None:
    page = DOCS / "configuration.md"
    blocks = console_blocks(page)
    assert [[s.command for s in b.steps] for b in blocks] == [
        ["oloproof run"], ["oloproof run", "echo $?"], ["oloproof run"] * 3, ["oloproof run"]]
    order_key, twice, trials, tools = blocks

    # "the starter project's `{type: agent_tool_sequence}` was given `order: false`"
    bad = _init(tmp_path, "bad")
    _edit(bad / "oloproof.yaml", "{type: agent_tool_sequence}",
          "{type: agent_tool_sequence, order: false}")
    session = Session(tmp_path)
    session.cwd = bad
    _check(order_key, session, page.name)
    # "the starter's third case with `"tools": "lookup_order"`"
    _edit(bad / "oloproof.yaml", "{type: agent_tool_sequence, order: false}",
          "{type: agent_tool_sequence}")
    cases = (bad / "data" / "cases.jsonl").read_text(encoding="utf-8").splitlines(True)
    assert json.loads(cases[2])["id"] == "req-003"
    cases[2] = cases[2].replace('"tools": ["lookup_order", "issue_refund"]',
                                '"tools": "lookup_order"')
    (bad / "data" / "cases.jsonl").write_text("".join(cases), encoding="utf-8")
    _check(tools, session, page.name)

    # "the starter project's suite gained {type: custom, ...}, and its checks.py registers the
    # name twice"
    desk = _init(tmp_path, "desk")
    (desk / "checks.py").write_text(CHECKS_TWICE, encoding="utf-8")
    _edit(desk / "oloproof.yaml", "  - {type: agent_constraints_satisfied}\n",
          "  - {type: agent_constraints_satisfied}\n"
          "  - {type: custom, name: polite_reply, callable: checks:polite_reply}\n")
    session.cwd = desk
    _check(twice, session, page.name)

    # "In the flaky_agent example, with `trials: 0`, then `trials: 3`, then (at `trials: 5`
    # again) `criterion: answer_right` in `answer_pass_hat_2`"
    fa = _init(tmp_path, "fa", "--example flaky_agent")
    session.cwd = fa
    suite = fa / "oloproof.yaml"
    for step, (old, new) in zip(trials.steps, [
            ("\ntrials: 5 ", "\ntrials: 0 "), ("\ntrials: 0 ", "\ntrials: 3 "),
            ("\ntrials: 3 ", "\ntrials: 5 ")], strict=True):
        _edit(suite, old, new)
        if new == "\ntrials: 5 ":
            _edit(suite, "criterion: answer_correct, k: 2", "criterion: answer_right, k: 2")
        assert matches(step.shown, session.run(step.command)) and session.code == 2, step.shown

    # "A policy that means to decide nothing says `rules: []` ... and the report says so"
    plain = _plain_blocks(page)
    warning = next(lines for lines in plain.values() if lines[0].startswith("Warning:"))
    nothing = Session(_init(tmp_path, "nothing"))
    (nothing.cwd / "release.yaml").write_text("version: 1\nrules: []\n", encoding="utf-8")
    _shows_part_of(warning, nothing.run("oloproof run"), "docs/configuration.md: rules: []")
    assert nothing.code == 0


def _candidate(project: Path) -> None:
    """The change `docs/compare.md` makes to the support_agent example: "`REFUND_WINDOW_DAYS =
    14`, the `delete_customer` call removed from `deletes_account`, and the version raised to
    `example-2` both in `@system(...)` and in `oloproof.yaml`"."""
    app = project / "app.py"
    _edit(app, "REFUND_WINDOW_DAYS = 30\n", "REFUND_WINDOW_DAYS = 14\n")
    deletes = app.read_text(encoding="utf-8").split("\ndef deletes_account(", 1)[1]
    call = '    yield "delete_customer", {"customer_id": order["customer_id"]}\n'
    assert call in deletes.split("\ndef ", 1)[0], "deletes_account calls delete_customer"
    _edit(app, "\n" + call, "\n")
    _edit(app, '@system(name="support-agent", version="example-1"',
          '@system(name="support-agent", version="example-2"')
    _edit(project / "oloproof.yaml", "version: example-1 ", "version: example-2 ")


def _shown_block(page: Path, language: str, after: str) -> list[str]:
    """The lines of the first ```LANGUAGE block after `after` on the page."""
    text = page.read_text(encoding="utf-8")
    found = re.search(rf"```{language}\n(.*?)```", text[text.index(after):], re.S)
    assert found, f"{page.name} shows {language} after {after!r}"
    return found.group(1).splitlines()


def _shown_yaml(page: Path, after: str) -> str:
    """The first ```yaml block after `after` on the page, as a file holds it."""
    return "\n".join(_shown_block(page, "yaml", after)) + "\n"


def _trimmed_json(page: Path, after: str) -> object:
    """The ```json block after `after`, its `…` items and `…: …` members read as "…"."""
    text = "\n".join(_shown_block(page, "json", after))
    text = re.sub(r"^(\s*)…: …(,?)$", r'\1"…": "…"\2', text, flags=re.M)
    return json.loads(re.sub(r"^(\s*)…(,?)$", r'\1"…"\2', text, flags=re.M))


def _is_trimmed(shown: object, real: object, where: str) -> None:
    """`shown` is `real` where the page trims with `…`: a list or an object holding "…" shows
    some of its items (in their order), one without shows all; run ids as placeholders."""
    if isinstance(shown, dict):
        assert isinstance(real, dict), where
        keys = [k for k in shown if k != "…"]
        if "…" in shown:
            assert [k for k in real if k in keys] == keys, (where, list(real))
        else:
            assert keys == list(real), (where, list(real))
        for key in keys:
            _is_trimmed(shown[key], real[key], f"{where}.{key}")
    elif isinstance(shown, list):
        assert isinstance(real, list), where
        items = [item for item in shown if item != "…"]
        if "…" not in shown:
            assert len(items) == len(real), (where, len(real))
        at = 0
        for item in items:  # each shown item is a real one, in the real order
            while at < len(real) and not _trims(item, real[at]):
                at += 1
            assert at < len(real), (where, item)
            at += 1
    elif isinstance(shown, str):
        assert isinstance(real, str) and normalised(shown) == normalised(real), (where, real)
    else:
        assert _same_value(shown, real), (where, shown, real)


def _trims(shown: object, real: object) -> bool:
    try:
        _is_trimmed(shown, real, "")
    except AssertionError:
        return False
    return True


#: The policy files `docs/compare.md`'s bad-input block gates with, by the comment of its step.
BAD_POLICIES = {
    "# margin: 2": "version: 1\nbaseline: latest~1\nrules:\n"
                   "  - {id: no-regression, metric: answer_correct, kind: non_inferiority,"
                   " margin: 2}\n",
    "# a non_inferiority rule, no baseline anywhere":
        "version: 1\nrules:\n"
        "  - {id: no-regression, metric: answer_correct, kind: non_inferiority, margin: 0.02}\n",
}


def test_compare_shows_what_the_candidate_and_its_baseline_print(tmp_path: Path) -> None:
    """The support_agent example as the baseline, the page's candidate (14-day window, no
    account deletion, example-2) run after it; then every comparing command the page shows."""
    page = DOCS / "compare.md"
    blocks = console_blocks(page)
    assert _first_commands(blocks) == [
        "oloproof init --example support_agent refunds && cd refunds",
        "oloproof run                # the candidate: support-agent example-2",
        "oloproof compare latest~1 latest",
        "oloproof gate latest --policy ni.yaml",
        "oloproof report latest --baseline latest~1 --html comparison.html",
        "oloproof plan latest --policy ni.yaml",
        "oloproof compare nope latest",
        "oloproof tag latest~1 shipped",
    ]
    session = Session(tmp_path)
    _check(blocks[0], session, page.name)
    _candidate(session.cwd)
    _check(blocks[1], session, page.name)
    _check(blocks[2], session, page.name)
    _is_trimmed(_trimmed_json(page, "`oloproof compare latest~1 latest --json` prints"),
                json.loads(session.run("oloproof compare latest~1 latest --json")), "document")
    (session.cwd / "ni.yaml").write_text(_shown_yaml(page, "## Gating on it"), encoding="utf-8")
    _check(blocks[3], session, page.name)
    assert session.code == 1  # "(exit 1.)"
    _check(blocks[4], session, page.name)
    assert (session.cwd / "comparison.html").stat().st_size > 0
    _check(blocks[5], session, page.name)

    def bad_policy(command: str) -> None:
        for comment, policy in BAD_POLICIES.items():
            if command.endswith(comment):
                (session.cwd / "bad.yaml").write_text(policy, encoding="utf-8")

    assert sum(s.command.endswith(tuple(BAD_POLICIES)) for s in blocks[6].steps) == 2
    _check(blocks[6], session, page.name, before=bad_policy)
    assert session.code == 2
    _check(blocks[7], session, page.name)  # pinned baselines: a tag, a re-run of example-2
    assert session.code == 2


def test_ci_shows_what_the_job_prints_and_writes(tmp_path: Path) -> None:
    """The job's commands as the page ran them: the support_agent example run as `main`, then
    the pull request's agent (compare.md's candidate, with the job's release.yaml) on a copy
    of main's store, `GITHUB_STEP_SUMMARY` pointing at a file."""
    page = DOCS / "ci.md"
    blocks = console_blocks(page)
    assert _first_commands(blocks) == [
        "oloproof init --example support_agent main && (cd main && oloproof run)",
        "mkfifo pipe.xml && oloproof gate latest --junit pipe.xml"]
    job, output_files = blocks
    session = Session(tmp_path)
    summary = tmp_path / "step-summary.md"
    session.env["GITHUB_STEP_SUMMARY"] = str(summary)
    release = _shown_yaml(page, "`release.yaml` for this job is")

    def pull_request(command: str) -> None:
        if command.startswith("oloproof run --junit"):  # "the PR's files copied in"
            _candidate(session.cwd)
            (session.cwd / "release.yaml").write_text(release, encoding="utf-8")

    _check(job, session, page.name, before=pull_request)
    assert summary.is_file()
    shown = _shown_block(page, "markdown", "This is what `$GITHUB_STEP_SUMMARY` held")
    written = summary.read_text(encoding="utf-8")
    assert matches(shown, written), f"docs/ci.md: the summary written is:\n{written}"
    start = _shown_block(page, "xml", "The start of the file (trimmed)")
    junit = (session.cwd / "oloproof-junit.xml").read_text(encoding="utf-8")
    assert matches(start, junit), f"docs/ci.md: the JUnit file written is:\n{junit}"

    # "In the `pr` folder of the job above": the rules every output file follows.
    _check(output_files, session, page.name)
    assert session.code == 0  # `head -1`; the gate's usage error above was exit 2
    assert (session.cwd / "reports").is_symlink() and not Path("/mnt/nowhere").exists()

    # "Before `main` has stored a run there is no baseline, and a policy with a
    # `non_inferiority` rule stops with exit 2"
    first = _init(tmp_path, "first", "--example support_agent")
    (first / "release.yaml").write_text(release, encoding="utf-8")
    fresh = Session(first)
    assert "no run is stored yet to compare this one with; run the baseline first" in " ".join(
        fresh.run("oloproof run").split())
    assert fresh.code == 2


#: The console blocks of docs/scaling.md that are not run here, and why.
SCALING_NOT_RUN = {
    # Installing: the test environment has what it has.
    "pip install -e '.[ray]'",
    # A cluster the way a reader starts one: Ray's default port (6379) and worker ports,
    # `address: auto` (which finds whichever cluster this shared machine has running) and
    # `ray stop`, which stops every Ray process of the machine, anyone's. Its `cat >> …
    # <<'END'` is a here-document, not one command. The same run on a local Ray instance is
    # the block before it, run here; tests/scale/test_ray_cluster.py runs a two-node cluster
    # on free ports of its own, on 127.0.0.1 only, as the page's next section says.
    "ray start --head --num-cpus 2 --include-dashboard=false",
}


def _without(lines: str, *starts: str) -> list[str]:
    return [line for line in normalised(lines).splitlines() if not line.startswith(starts)]


def _without_record(printed: str) -> str:
    """A run's report without its `Record:` line and the indented lines under it."""
    out, under = [], False
    for line in printed.splitlines():
        under = line.startswith("Record:") or (under and line.startswith("  "))
        if not under:
            out.append(line)
    return "\n".join(out) + "\n"


@pytest.mark.ray
def test_scaling_shows_what_the_executors_print(tmp_path: Path) -> None:
    page = DOCS / "scaling.md"
    blocks = console_blocks(page)
    first = _first_commands(blocks)
    assert first == [
        "oloproof init --example stateful-agent st && cd st",
        "pip install -e '.[ray]'",
        "oloproof run --executor ray --workers 2",
        "ray start --head --num-cpus 2 --include-dashboard=false",
    ]
    # Its output blocks: the line a processes run adds, compared below, and the line after a
    # lost worker, not compared: how many cases were in flight when a worker died depends on
    # timing (tests/scale/test_processes.py kills workers and counts what was retried).
    plain: list[list[str]] = []
    fenced: list[str] | None = None  # the lines of a plain block open now
    is_open = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if not line.lstrip().startswith("```"):
            if fenced is not None:
                fenced.append(line.strip())
        elif is_open:
            if fenced is not None:
                plain.append(fenced)
            is_open, fenced = False, None
        else:  # a fence opens, a plain one (in a list item, indented) or a ```LANGUAGE one
            is_open, fenced = True, [] if line.strip() == "```" else None
    assert plain == [
        ["Workers: 2 (processes)"],
        ["Workers: 2 (processes); 3 case(s) retried on another worker after theirs was lost"]]
    workers = plain[0]
    session = Session(tmp_path)
    processes = _check(blocks[0], session, page.name)[1]
    # "The run prints the same report, with one more line"
    assert workers == ["Workers: 2 (processes)"]
    assert normalised(processes).splitlines().count(workers[0]) == 1
    local = session.run("oloproof run")  # on `local`, from the cache the processes filled
    assert "Workers:" not in local
    # (the Cache and Executions lines say this run read the cache the processes filled; the
    # Record lines that it is the second run of the version)
    assert normalised(local).splitlines()[1] == "Record: run 2 of refund-desk example-1"
    assert (_without(processes, "Cache:", "Workers:", "Executions:")
            == _without(_without_record(local), "Cache:", "Executions:"))
    pytest.importorskip("ray", reason="the ray extra is not installed: the Ray block not run")
    _check(blocks[2], session, page.name)
    assert sorted({first[0], first[2], *SCALING_NOT_RUN}) == sorted(first)


def test_judges_shows_what_judged_agent_prints(tmp_path: Path) -> None:
    """docs/judges.md: the judged_agent example run, inspected, its labels put aside, sampled
    and reviewed again into the same file, and run with them: one session."""
    page = DOCS / "judges.md"
    blocks = console_blocks(page)
    assert _first_commands(blocks) == [
        "oloproof init --example judged_agent judged", "oloproof run",
        "mv labels/reply_truthful.jsonl kept.jsonl",
        "oloproof labels sample --criterion reply_truthful --n 30 --seed 20 -o "
        "labels/reply_truthful.jsonl",
        "printf 'p f f p p f p p p f p f p p f p f p p p p f p p p p f f p p' | oloproof "
        "labels review labels/reply_truthful.jsonl",
        "oloproof labels sample --criterion reply_truthful -o labels/reply_truthful.jsonl",
        "oloproof run", "oloproof plan latest"]
    _run_from_home(blocks, Session(tmp_path), page.name)


def test_failures_shows_what_the_flaky_service_prints(tmp_path: Path) -> None:
    """docs/failures.md: the starter whose order service fails for a while (the page's own
    `lookup_order`), run, retried and resumed, its error budget decided on both runs, and a
    run whose every execution errors: one session."""
    page = DOCS / "failures.md"
    blocks = console_blocks(page)
    assert _first_commands(blocks) == [
        "oloproof init demo", "oloproof run", "oloproof run",
        "oloproof gate latest~1 --policy release.yaml",
        "ORDER_SERVICE=down oloproof run --no-cache"]
    session = Session(tmp_path)
    _check(blocks[0], session, page.name)
    demo = session.cwd
    app = demo / "app.py"
    original = app.read_text(encoding="utf-8")
    start = original.index("def lookup_order(")
    end = original.index("\n\n\n", start) + 1
    service = "\n".join(_shown_block(page, "python", "by replacing `lookup_order`")) + "\n"
    app.write_text(original[:start] + service + original[end:], encoding="utf-8")
    _edit(app, "from typing import Any\n", "import os\nfrom typing import Any\n")
    _check(blocks[1], session, page.name)
    timeout = "  timeout_s: 30                      # a case still running after this is " \
        "missing, not failed\n"
    _edit(demo / "oloproof.yaml", timeout,
          timeout + _shown_yaml(page, "Declare which exceptions are transient"))
    resumed = _check(blocks[2], session, page.name)[0]
    (line,) = _shown_block(page, "", "in one line of\nthe terminal report")[:1]
    assert line in normalised(resumed).splitlines()
    shown = _shown_json(page, "in one line of\nthe terminal report")
    assert isinstance(shown, dict)
    real = json.loads(session.run("oloproof gate latest --json"))
    _is_part_of(shown, {key: real[key] for key in shown}, "failures.md")
    with (demo / "release.yaml").open("a", encoding="utf-8") as policy:
        policy.write(_shown_yaml(page, "blocks a run whose executions errored too often"))
    _check(blocks[3], session, page.name)
    _check(blocks[4], session, page.name)
    # "once the service is back, `oloproof run` takes all 33 executions from the cache"
    back = " ".join(session.run("oloproof run").split())
    assert "Executions: 33 cases · 0 ran · 33 cached · 0 errored" in back and session.code == 0


def test_imports_walks_from_an_inspect_task_to_a_comparison(tmp_path: Path) -> None:
    """docs/imports.md: the page's Inspect task run on two scripted models, both logs imported
    and gated under the page's policy, then compared: one session, in an empty folder."""
    page = DOCS / "imports.md"
    blocks = console_blocks(page)
    assert _first_commands(blocks) == ["python desk.py", "oloproof compare latest~1 latest"]
    (tmp_path / "desk.py").write_text(
        "\n".join(_shown_block(page, "python", "in `desk.py`:")) + "\n", encoding="utf-8")
    (tmp_path / "release.yaml").write_text(_shown_yaml(page, "A policy, `release.yaml`"),
                                           encoding="utf-8")
    session = Session(tmp_path)
    fork_server.shared().preload("inspect_ai.log")  # what each `oloproof import` reads with
    for block in blocks:
        _check(block, session, page.name)
    again = session.run("oloproof import inspect logs/desk-1.eval")
    assert "Already imported" in again and session.code == 0


def test_pytest_shows_what_a_session_prints(tmp_path: Path) -> None:
    """docs/pytest.md: the page's own test file run by pytest in a folder of its own, its
    stored run listed, one of its tests inspected and the run planned: one session."""
    page = DOCS / "pytest.md"
    blocks = console_blocks(page)
    assert _first_commands(blocks) == ["pytest -q", "oloproof runs", "oloproof plan"]
    desk = _new_dir(tmp_path / "desk")
    code = "\n".join(_shown_block(page, "python", "## A session")) + "\n"
    (desk / "test_desk.py").write_text(code, encoding="utf-8")
    session = Session(tmp_path)
    session.cwd = desk
    # The async plugins this environment has (and langsmith's) say nothing of the page's test
    # file, but pytest-asyncio warns of its own settings: left out, as the page's reader may
    # have none of them.
    session.env["PYTEST_ADDOPTS"] = ("-p no:asyncio -p no:anyio -p no:langsmith_plugin "
                                     "-p no:cacheprovider")
    for block in blocks:
        _check(block, session, page.name)


def test_conversations_shows_what_the_example_prints(tmp_path: Path) -> None:
    """docs/conversations.md: the conversations example made, run, its broken customer
    inspected turn by turn, and run again (from the cache: 0 simulator calls); one session.
    Its prompt template is the one a simulator is sent, word for word (the page wraps it)."""
    page = DOCS / "conversations.md"
    blocks = console_blocks(page)
    assert _first_commands(blocks) == ["oloproof init --example conversations conversations",
                                       "oloproof run", "oloproof run", "oloproof run"]
    _run_from_home(blocks, Session(tmp_path), page.name)
    shown = _shown_block(page, "", "The default\ntemplate")
    assert " ".join(shown).split() == DEFAULT_PROMPT.split()


def test_board_shows_what_the_six_candidates_print(tmp_path: Path) -> None:
    """docs/board.md: its suite, system and two policies written as the page shows them, each
    combination run, then the board; the candidate the page says its own gate ALLOWs is so."""
    page = DOCS / "board.md"
    blocks = console_blocks(page)
    assert _first_commands(blocks) == ["python app.py > cases.jsonl", "oloproof run"]
    session = Session(tmp_path)
    after = "## A board, step by step"
    yaml_blocks = re.findall(r"```yaml\n(.*?)```", page.read_text(encoding="utf-8")[
        page.read_text(encoding="utf-8").index(after):], re.S)
    for name, text in zip(("oloproof.yaml", "release.yaml", "choose.yaml"), yaml_blocks,
                          strict=False):
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "app.py").write_text("\n".join(_shown_block(page, "python", after)) + "\n",
                                     encoding="utf-8")
    _check(blocks[0], session, page.name)
    gate = json.loads(session.run("oloproof gate variant:model=open,prompt=v2 --policy "
                                  "choose.yaml --json"))
    assert gate["gate"]["action"] == "ALLOW"
    bounds = {d["rule"]: round(d["bound"], 3) for d in gate["decisions"]}
    assert bounds == {"floor": 0.911, "no_worse": -0.024}  # as the page says


def test_every_page_with_console_blocks_is_run_here() -> None:
    """A page that gains a ```console block gets a test here (or says why not)."""
    tested = {"getting-started.md", "cli.md", "agents-and-tools.md", "stateful-agents.md",
              "reliability.md", "concepts.md", "configuration.md", "compare.md", "ci.md",
              "scaling.md", "judges.md", "failures.md", "imports.md", "pytest.md",
              "conversations.md", "board.md"}
    assert {page.name for page in DOCS.glob("*.md") if console_blocks(page)} == tested
