"""`oloproof view`: the project's store in a browser, read-only and live (docs/view.md).

`app` (the pages and the JSON API), `pages` (what each answer is made of: the report's own
code), `serve` (the server, until Ctrl-C). Imported only by the `view` command.
"""
