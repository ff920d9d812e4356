"""How many of a case's trials gave a verdict, said alike wherever cases are listed: the
terminal's failing cases, `oloproof cases`, the Markdown summary and the HTML list write
`failed answer_correct (1 of 3 trials)`, as the JUnit cases suite does."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from oloproof.report.escape import safe_line


def trials_note(count: int, trials: int) -> str:
    """` (1 of 3 trials)`; empty for a run without trials."""
    return f" ({count} of {trials} trials)" if trials > 1 else ""


def criteria_text(names: Sequence[str], counts: Mapping[str, int] | None, trials: int,
                  escape: Callable[[str], str] = safe_line) -> str:
    """`answer_correct (1 of 3 trials), agent_route (3 of 3 trials)`: criteria, each with how
    many of the case's trials gave the verdict (the names alone without trials or counts)."""
    if counts is None or trials < 2:
        return ", ".join(escape(n) for n in names)
    return ", ".join(escape(n) + (trials_note(counts[n], trials) if n in counts else "")
                     for n in names)
