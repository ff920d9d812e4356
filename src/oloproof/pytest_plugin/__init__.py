"""The pytest plugin (docs/pytest.md): `@pytest.mark.oloproof(trials=50, min=0.8)` runs a test's
body trial by trial until the sequential rule decides, and stores the session's marked tests as
a run of the project. A client of the library, like `cli/`: the statistics are
`oloproof.stats.sequential`'s, the run is made by `oloproof.run`.

`plugin` is what pytest loads (entry point `pytest11`, name `oloproof`) and imports nothing of
the engine; `trials` runs one marked test's trials and decides it; `session_run` stores a
session's marked tests as a run; `recorded` is that run's system, which replays the trials.
"""
