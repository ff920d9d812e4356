"""`python -m benchmarks`: list, run, save, summarise and check the benchmark scenarios.

    python -m benchmarks                      list every scenario: kind, what it measures, targets
    python -m benchmarks NAME [ARGS...]       run one, save its JSON under benchmarks/results/NAME/;
                                              exit 1 when a target is missed
    python -m benchmarks --no-save NAME ...   the same, saving nothing
    python -m benchmarks --quick NAME...      run each at its QUICK arguments, saving nothing;
                                              exit 1 when any target is missed (make bench-check)
    python -m benchmarks --all                run every scenario but those LEFT_OUT, saving each
                                              (make bench); exit 1 when any target is missed
    python -m benchmarks --summary            write benchmarks/RESULTS.md from the saved JSON
    python -m benchmarks --check              exit 1 when RESULTS.md is not what the JSON makes

Run it from the repository's root with the project's environment (`.venv/bin/python`).
"""

from __future__ import annotations

import sys
import textwrap

from benchmarks import _record
from benchmarks._record import ContractError, Scenario


def _targets(targets: dict[str, tuple[str, object]]) -> str:
    return ", ".join(f"{name} {_record.SHOWN_OP[op]} {_record.shown(limit)}"
                     for name, (op, limit) in targets.items()) or "none"


def listing() -> str:
    lines = []
    for one in _record.scenarios():
        lines.append(f"{one.name}  ({one.kind})")
        lines += textwrap.wrap(one.measures, 96, initial_indent="    ",
                               subsequent_indent="    ")
        lines += textwrap.wrap(f"targets: {_targets(one.targets)}", 96, initial_indent="    ",
                               subsequent_indent="        ")
        if one.quick is not None:
            lines.append(f"    make bench-check: {' '.join(one.quick) or '(no arguments)'}")
        if one.left_out:
            lines += textwrap.wrap(f"left out of make bench: {one.left_out}", 96,
                                   initial_indent="    ", subsequent_indent="        ")
    return "\n".join(lines)


def _report(record: dict[str, object], saved: object) -> bool:
    """Print what a run measured; whether every target was met."""
    print(f"\n== {record['scenario']} ({record['kind']}): {record['measures']}")
    figures = _record.flat(record["figures"])  # type: ignore[arg-type]
    targets: dict[str, dict[str, object]] = record["targets"]  # type: ignore[assignment]
    for name, value in figures.items():
        target = targets.get(name)
        mark = ""
        if target is not None:
            mark = (f"   target {_record.SHOWN_OP[str(target['op'])]} "
                    f"{_record.shown(target['limit'])}: {'met' if target['met'] else 'MISSED'}")
        print(f"  {name}: {_record.shown(value)}{mark}")
    for name in targets:
        if name not in figures:
            print(f"  {name}: no such figure: target MISSED")
    print(f"  revision {record['revision']}{' (uncommitted changes)' if record['dirty'] else ''}"
          f", {record['date']}, {record['cpu_count']} CPUs, Python {record['python']}, load "
          f"{record['load']} → {record['load_after']}, {record['seconds']} s")
    if saved is not None:
        print(f"  saved {saved}")
    return bool(record["met"])


def _run(chosen: Scenario, argv: list[str], save: bool) -> bool:
    record, saved = _record.run_scenario(chosen, argv, save=save)
    return _report(record, saved)


def main(args: list[str]) -> int:
    try:
        if not args:
            print(listing())
            return 0
        if args == ["--summary"]:
            text = _record.summary()
            _record.RESULTS_MD.write_text(text, encoding="utf-8")
            print(f"wrote {_record.RESULTS_MD} ({text.count(chr(10))} lines)")
            return 0 if not _record.check() else 1
        if args == ["--check"]:
            problems = _record.check()
            if problems:
                print("\n".join(problems[:80]))
                print("\nbenchmarks/RESULTS.md is not what the saved JSON makes: run "
                      "`python -m benchmarks --summary` and commit it with the JSON")
                return 1
            print("benchmarks/RESULTS.md is what the saved JSON makes")
            return 0
        if args[0] == "--quick":
            names = args[1:]
            if not names:
                names = [s.name for s in _record.scenarios() if s.quick is not None]
            chosen = [_record.scenario(name) for name in names]
            missed = [one.name for one in chosen if not _run(one, one.quick or [], False)]
            print(f"\n{len(chosen) - len(missed)} of {len(chosen)} scenarios met every target"
                  + (f"; missed: {', '.join(missed)}" if missed else ""))
            return 1 if missed else 0
        if args == ["--all"]:
            chosen = [s for s in _record.scenarios() if not s.left_out]
            missed = [one.name for one in chosen if not _run(one, [], True)]
            print(f"\n{len(chosen) - len(missed)} of {len(chosen)} scenarios met every target"
                  + (f"; missed: {', '.join(missed)}" if missed else "")
                  + ". `python -m benchmarks --summary` writes RESULTS.md from them.")
            return 1 if missed else 0
        save = True
        if args[0] == "--no-save":
            save, args = False, args[1:]
        if not args or args[0].startswith("-"):
            print(__doc__, file=sys.stderr)
            return 2
        return 0 if _run(_record.scenario(args[0]), args[1:], save) else 1
    except ContractError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
