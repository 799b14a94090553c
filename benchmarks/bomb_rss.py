"""Peak memory and time of parsing the decompression bomb of issue 58 (finding 1: an 18 KB .docx whose
``word/document.xml`` is 12 MB, one paragraph and 2,000,000 empty ``<w:p/>``), with the parse bounds
(kbgraph.ingest.bounds) on and off.

    .venv/bin/python -m benchmarks.bomb_rss [--paragraphs 2000000] [--modes on,off] [--set NAME=VALUE ...]
        [--timeout 900]

Each mode runs in a fresh Python process. It imports the ingest stage, parses a small heading-less .docx first (so
python-docx and unstructured's ``partition_docx``, which a .docx without heading styles falls back to, are loaded,
as in a running server), resets its peak RSS (``/proc/self/clear_refs`` 5), then parses the bomb through
``kbgraph.ingest.compute.parse_source`` (the ingestion's own call) under the settings of the mode: ``on`` = the
defaults, ``off`` = every bound 0 (``KBGRAPH_MAX_EXPANDED_BYTES=0`` ...: the parse before the bounds); ``--set``
changes a setting in every mode (e.g. ``--set max_compression_ratio=0 --paragraphs 990000``: the largest bomb the
element bound lets through, once the ratio is disguised). Output:
one JSON line per mode with the outcome (the refusal's message, or the elements parsed), the seconds, VmRSS before
the parse, VmHWM after it, and the difference in MB. ``seconds`` is wall time, ``cpu_seconds`` the process's CPU
time (what a busy machine does not inflate).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path

from benchmarks.common import REPO, rerun

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
)
RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" '
    'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
    'Target="word/document.xml"/></Relationships>'
)
#: The bounds, by setting; "off" sets each to 0.
BOUNDS = (
    "max_expanded_bytes",
    "max_member_bytes",
    "max_compression_ratio",
    "max_zip_members",
    "max_xml_elements",
    "max_pdf_pages",
    "max_parse_seconds",
)


def bomb(text: str, empty: int) -> bytes:
    """A .docx of one paragraph ``text`` and ``empty`` empty paragraphs (the review's file: 2,000,000)."""
    body = (
        (
            f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="{W}"><w:body>'
            f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>"
        ).encode()
        + b"<w:p/>" * empty
        + b"</w:body></w:document>"
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name, data in (
            ("[Content_Types].xml", TYPES.encode()),
            ("_rels/.rels", RELS.encode()),
            ("word/document.xml", body),
        ):
            z.writestr(zipfile.ZipInfo(name, (2024, 1, 1, 0, 0, 0)), data, compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def _status(field: str) -> float:
    """``field`` (VmRSS, VmHWM) of this process in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def child(path: Path, warm: Path) -> None:
    from kbgraph.errors import IngestError
    from kbgraph.ingest.compute import parse_source
    from kbgraph.settings import Settings

    settings = Settings()
    parse_source(warm, settings)
    Path("/proc/self/clear_refs").write_text("5")  # peak RSS := RSS now
    before = _status("VmRSS")
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        docs = parse_source(path, settings)
        outcome = f"parsed: {len(docs[0].elements)} elements"
    except IngestError as exc:
        outcome = f"refused: {exc}"
    took, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = _status("VmHWM")
    print(
        json.dumps(
            {
                "seconds": round(took, 2),
                "cpu_seconds": round(cpu, 2),
                "rss_before_mb": round(before),
                "peak_mb": round(peak),
                "peak_increase_mb": round(peak - before),
                "outcome": outcome,
            }
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paragraphs", type=int, default=2_000_000, help="empty paragraphs of the bomb")
    ap.add_argument("--modes", default="on,off", help="on (the default bounds), off (every bound 0), in order")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a setting, in every mode")
    ap.add_argument("--timeout", type=float, default=900, help="seconds a mode may take")
    ap.add_argument("--child", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    with tempfile.TemporaryDirectory(prefix="kbgraph-bomb-") as tmp:
        path, warm = Path(tmp) / "bomb.docx", Path(tmp) / "warm.docx"
        path.write_bytes(bomb("The one paragraph of a decompression bomb.", args.paragraphs))
        warm.write_bytes(bomb("A small document without heading styles.", 10))
        with zipfile.ZipFile(path) as z:
            xml_bytes = z.getinfo("word/document.xml").file_size
        print(
            json.dumps(
                {
                    "file_bytes": path.stat().st_size,
                    "document_xml_bytes": xml_bytes,
                    "empty_paragraphs": args.paragraphs,
                }
            )
        )
        for mode in args.modes.split(","):
            env = {k: v for k, v in os.environ.items() if not k.startswith("KBGRAPH_")}
            env["KBGRAPH_CONFIG"] = str(Path(tmp) / "none.toml")
            env.update({f"KBGRAPH_{k.strip().upper()}": v for k, _, v in (s.partition("=") for s in args.set)})
            if mode == "off":
                env.update({f"KBGRAPH_{name.upper()}": "0" for name in BOUNDS})
            elif mode != "on":
                raise SystemExit(f"unknown mode {mode!r}: on or off")
            proc = subprocess.run(
                [*rerun(__file__), "--child", str(path), str(warm)],
                env=env,
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=args.timeout,
                check=False,
            )
            if proc.returncode:
                raise SystemExit(f"mode {mode} failed ({proc.returncode}): {proc.stderr[-2000:]}")
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            print(
                json.dumps({"bounds": mode, "set": args.set, **row})
                if args.set
                else json.dumps({"bounds": mode, **row}),
                flush=True,
            )


if __name__ == "__main__":
    main()
