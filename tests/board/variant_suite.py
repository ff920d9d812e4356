"""The suite file the tests of `system.variants` share: a desk whose system is `app:run`, one
`exact_match` criterion on `answer`, and the variants matrix put in `{variants}`."""

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
