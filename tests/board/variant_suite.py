"""The suite file the tests of `system.variants` share: a desk whose system is `app:run`, one
`exact_match` criterion on `answer`, and the variants matrix put in `{variants}`; `RECORDED`,
the same suite whose system records its usage (the board's cost per case)."""

SUITE = """\
version: 1
project: desk
dataset: cases.jsonl
system:
  name: desk
  version: "2.1"
  callable: app:run
  variants:
{variants}
evaluators:
  - type: exact_match
    criterion: answer_correct
    field: answer
    expected_field: answer
"""
#: 3 models × 2 prompts: 6 combinations.
MATRIX = "    model: [small, large, open]\n    prompt: [v1, v2]"
#: SUITE whose system records `usage/v1`.
RECORDED = SUITE.replace("  variants:\n", "  records: [usage/v1]\n  variants:\n")
