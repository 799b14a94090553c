"""Dump the procedures and functions of a RUNNING Neo4j server as a schema for the Cypher linter.

    python tests/lint/dump_schema.py --uri bolt://127.0.0.1:7687 --user neo4j --password PW \
        > tests/lint/neo4j-5.26-schema.json

The output is the ``DbSchema`` shape of ``@neo4j-cypher/language-support``:
``{"defaultLanguage": "CYPHER 5", "procedures": {"CYPHER 5": {name: entry}}, "functions": {...}}``, where each
entry is the row of ``SHOW PROCEDURES YIELD *`` / ``SHOW FUNCTIONS YIELD *`` (the same columns the package's
own ``testData.mockSchema`` carries: name, signature, argumentDescription, returnDescription, ...).

Labels, relationship types and property keys are deliberately NOT written: when the schema has no
``labels``/``relationshipTypes`` the linter does not check them at all, and with them it would only warn about
every label the empty dump server does not know. Neo4j 5.26 speaks only Cypher 5, so only "CYPHER 5" is filled.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from neo4j import GraphDatabase, Session

# Per-row columns that describe who may run a routine on the dump server; not needed for linting.
_DROP = {"rolesExecution", "rolesBoostedExecution"}


def _plain(value: Any) -> Any:
    """Neo4j driver values -> JSON-able Python values (lists/maps are already plain; keep it defensive)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _rows(session: Session, query: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for record in session.run(query):
        row = {k: _plain(v) for k, v in record.data().items() if k not in _DROP}
        out[row["name"]] = row
    return dict(sorted(out.items()))


def dump(uri: str, user: str, password: str, database: str | None = None) -> dict[str, Any]:
    with GraphDatabase.driver(uri, auth=(user, password)) as driver:
        driver.verify_connectivity()
        with driver.session(database=database) as session:
            version = session.run(
                "CALL dbms.components() YIELD name, versions, edition RETURN name, versions[0] AS v, edition"
            ).single()
            procedures = _rows(session, "SHOW PROCEDURES YIELD *")
            functions = _rows(session, "SHOW FUNCTIONS YIELD *")
    return {
        "_comment": (
            f"Dumped from {version['name']} {version['v']} {version['edition']} by tests/lint/dump_schema.py "  # type: ignore[index]
            f"({len(procedures)} procedures, {len(functions)} functions). Regenerate, do not edit by hand."
        ),
        "defaultLanguage": "CYPHER 5",
        "procedures": {"CYPHER 5": procedures},
        "functions": {"CYPHER 5": functions},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uri", default="bolt://127.0.0.1:7687")
    parser.add_argument("--user", default="neo4j")
    parser.add_argument("--password", required=True)
    parser.add_argument("--database", default=None)
    args = parser.parse_args(argv)
    schema = dump(args.uri, args.user, args.password, args.database)
    json.dump(schema, sys.stdout, indent=1, sort_keys=False, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
