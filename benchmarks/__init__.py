"""The benchmarks of kbgraph: scripts run from the repository root as modules, ``.venv/bin/python -m
benchmarks.<name> [options]`` (``--help`` for each), importing each other as ``benchmarks.<module>`` and what they
share from :mod:`benchmarks.common` (the repo's sets, the default home). No script edits ``sys.path`` and none
holds a Cypher statement: they run statements of ``cypher/bench/`` (or the library's) by name through the store
(tests/unit/test_benchmarks_package.py checks both). Their figures are in docs/benchmarks.md, their history in
benchmarks/HISTORY.md."""
