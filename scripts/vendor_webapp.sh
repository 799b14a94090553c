#!/usr/bin/env bash
# Refresh the JavaScript library vendored into the web app of `kbgraph serve` (kbgraph/serve/webapp/static/vendor/):
# Cytoscape.js, its ES module build, from the npm registry with `npm pack` (no node_modules, no build step).
# Node.js and npm are needed only here, by whoever refreshes the file; installing or running kbgraph needs neither.
#
#   scripts/vendor_webapp.sh            # the version pinned below
#   scripts/vendor_webapp.sh 3.36.0     # another version (then update CYTOSCAPE_VERSION here and test:
#                                       #   pytest tests/test_webapp_browser.py)
#
# Writes vendor/cytoscape/cytoscape.esm.min.mjs, its LICENSE (MIT) and VERSION.json (package, version, licence,
# the tarball's integrity as npm reports it, and the sha256 of the file shipped).
set -euo pipefail

CYTOSCAPE_VERSION="${1:-3.35.0}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$here/kbgraph/serve/webapp/static/vendor/cytoscape"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

command -v npm >/dev/null || { echo "vendor_webapp.sh: npm is needed to refresh the vendored files" >&2; exit 1; }
(cd "$work" && npm pack --silent --json "cytoscape@${CYTOSCAPE_VERSION}" >pack.json)
tarball="$(cd "$work" && ls cytoscape-*.tgz)"
tar -xzf "$work/$tarball" -C "$work"
pkg="$work/package"
version="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$pkg/package.json")"
licence="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["license"])' "$pkg/package.json")"
integrity="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["integrity"])' "$work/pack.json")"

mkdir -p "$dest"
cp "$pkg/dist/cytoscape.esm.min.mjs" "$dest/cytoscape.esm.min.mjs"
cp "$pkg/LICENSE" "$dest/LICENSE"
sha="$(sha256sum "$dest/cytoscape.esm.min.mjs" | cut -d' ' -f1)"
cat >"$dest/VERSION.json" <<EOF
{
  "package": "cytoscape",
  "version": "$version",
  "license": "$licence",
  "license_file": "LICENSE",
  "source": "https://registry.npmjs.org/cytoscape/-/$tarball",
  "integrity": "$integrity",
  "file": "cytoscape.esm.min.mjs",
  "from": "package/dist/cytoscape.esm.min.mjs",
  "sha256": "$sha",
  "refreshed_by": "scripts/vendor_webapp.sh"
}
EOF
echo "vendored cytoscape $version ($licence) into ${dest#"$here"/}: $(wc -c <"$dest/cytoscape.esm.min.mjs") bytes"
