#!/usr/bin/env bash
# Checks the import contracts of pyproject.toml ([tool.importlinter]: the layers of docs/architecture.md) with
# import-linter's `lint-imports`. kbgraph.ingest, kbgraph.query and kbgraph.cypher live in the folders ingest/,
# query/ and cypher/ (package-dir in pyproject.toml), and grimp, which builds the import graph, reads a package
# from one folder: so the package is laid out as installed in a temporary folder of symbolic links, and
# lint-imports runs there (it puts its working directory first on sys.path). Usage: scripts/lint_imports.sh [PY]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
py="${1:-$repo/.venv/bin/python}"
py="$(cd "$(dirname "$py")" && pwd)/$(basename "$py")"  # absolute: lint-imports runs in another folder
tree="$(mktemp -d)"
trap 'rm -rf "$tree"' EXIT
mkdir "$tree/kbgraph"
for entry in "$repo"/kbgraph/*; do ln -s "$entry" "$tree/kbgraph/"; done
for sub in ingest query cypher; do ln -s "$repo/$sub" "$tree/kbgraph/$sub"; done
cd "$tree"
"$(dirname "$py")/lint-imports" --no-cache "$repo/pyproject.toml"
