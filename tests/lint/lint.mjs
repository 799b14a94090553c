// Lints Cypher statements with the official Neo4j linter (@neo4j-cypher/language-support).
//
//   stdin : JSON array  [{"name": "group/stmt", "query": "MATCH ..."}, ...]
//   stdout: JSON array  [{"name": ..., "statements": N, "diagnostics": [{"severity", "message", "line", "col"}]}, ...]
//
// severity is "Error" | "Warning" | "Information" | "Hint"; line and col are 1-based. "statements" is how many
// ;-separated statements the linter saw: it lints each on its own, but a driver runs only one per query.
// All queries are linted in this one process (loading the linter takes ~1-2 s).
// The schema is neo4j-5.26-schema.json next to this file (override with --schema PATH). Undefined-parameter
// diagnostics are dropped with the package's own isNotParamError: statements get values only at run time.
// Run: npm ci --prefix tests/lint && echo '[{"name":"x","query":"RETURN 1"}]' | node tests/lint/lint.mjs
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lintCypherQuery, isNotParamError } from '@neo4j-cypher/language-support';

const SEVERITY = { 1: 'Error', 2: 'Warning', 3: 'Information', 4: 'Hint' };

const here = dirname(fileURLToPath(import.meta.url));
const schemaArg = process.argv.indexOf('--schema');
const schemaPath =
  schemaArg >= 0 ? process.argv[schemaArg + 1] : join(here, 'neo4j-5.26-schema.json');
const schema = JSON.parse(readFileSync(schemaPath, 'utf8'));
delete schema._comment;

const items = JSON.parse(readFileSync(0, 'utf8'));
if (!Array.isArray(items)) {
  process.stderr.write('lint.mjs: stdin must be a JSON array of {name, query}\n');
  process.exit(2);
}

const out = items.map(({ name, query }) => {
  let diagnostics;
  let statements = 0;
  try {
    const result = lintCypherQuery(String(query), schema, { consoleCommandsEnabled: false });
    statements = result.symbolTables.length;
    diagnostics = result.diagnostics
      .filter(isNotParamError)
      .map((d) => ({
        severity: SEVERITY[d.severity] ?? String(d.severity),
        message: d.message,
        line: d.range.start.line + 1,
        col: d.range.start.character + 1,
      }));
  } catch (err) {
    diagnostics = [
      { severity: 'Error', message: `linter crashed: ${err?.stack ?? err}`, line: 1, col: 1 },
    ];
  }
  return { name, statements, diagnostics };
});

process.stdout.write(JSON.stringify(out) + '\n');
