"""Runs of other harnesses, read as plain trials (docs/imports.md).

One module per harness: `inspect_logs` (Inspect AI eval logs, through Inspect's own log API),
`harbor` (a Harbor job folder: each trial's `result.json` and ATIF trajectory), `eee` (Every Eval
Ever's aggregate and per-sample files, by Oloproof's own models of that schema); `records` holds
what they all give back, `ImportedTrial`. The ATIF format itself is read and written in
`oloproof.traces.atif`. No harness is imported until a reader is called.
"""
