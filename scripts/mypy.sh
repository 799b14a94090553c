#!/usr/bin/env bash
# Type-checks kbgraph and its tests with mypy under pyproject.toml [tool.mypy] (strict on kbgraph.query,
# kbgraph.store, kbgraph.llm, kbgraph.serve, kbgraph.kb, kbgraph.eval, kbgraph.ingest, kbgraph.embed and kbgraph.cli,
# and on every test module, so that a test double that is not what it stands in for is found; every other module of
# kbgraph checked without the strict flags).
# kbgraph.ingest, kbgraph.query and kbgraph.cypher live in the folders ingest/, query/ and cypher/ (package-dir in
# pyproject.toml), which mypy cannot map to their import names: so, as scripts/lint_imports.sh does, the package
# is laid out as installed in a folder of symbolic links (.mypy_cache/tree, kept so that mypy's cache stays valid
# between runs) and mypy runs there; tests/ is linked in beside it (the tests import kbgraph.* as installed and
# tests.* as a package).
# The cache is .mypy_cache, or $MYPY_CACHE_DIR (an empty folder there gives the cold check of a fresh clone).
# Errors name paths as installed (kbgraph/query/x.py is query/x.py). Usage: scripts/mypy.sh [PY] [MYPY ARGS...]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
py="${1:-$repo/.venv/bin/python}"
py="$(cd "$(dirname "$py")" && pwd)/$(basename "$py")"  # absolute: mypy runs in another folder
shift || true
tree="$repo/.mypy_cache/tree"
rm -rf "$tree"
mkdir -p "$tree/kbgraph"
for entry in "$repo"/kbgraph/*; do ln -s "$entry" "$tree/kbgraph/"; done
for sub in ingest query cypher; do ln -s "$repo/$sub" "$tree/kbgraph/$sub"; done
ln -s "$repo/tests" "$tree/tests"
cd "$tree"
"$py" -m mypy --config-file "$repo/pyproject.toml" --cache-dir "${MYPY_CACHE_DIR:-$repo/.mypy_cache}" "$@" -p kbgraph -p tests
