"""Uploaded files of ``POST /v1/kb/{name}/ingest`` ("paths on the server, or uploaded files").

A ``multipart/form-data`` request carries one or more ``files`` parts (and optionally a ``wait`` field, as in
the JSON form). Each file is kept under the knowledge base's upload folder, :func:`uploads_dir`
(``<home>/<kb>/uploads/``), by its sanitised file name, and the job ingests exactly those files through the
library (``KnowledgeBase.ingest``; PIKE-RAG §5.1-§5.2). Bad input is then the library's business, as for the
CLI: an empty, corrupt, encrypted or non-UTF-8 file ends in the job's IngestReport as failed or skipped with the
CLI's message, and the other files are still ingested.

Identity: a document's id comes from its source path, so the folder is per knowledge base and per file name,
not per job: uploading ``report.pdf`` again **updates** that document (report: ``updated``), or leaves it
``unchanged`` when the bytes are the same; it never adds a duplicate. Two uploads of one name race as two
copies of a file would: the last one written wins, and both jobs (run one after another) end with it ingested.

Safety, in this order:

1. the request size is limited while the body streams in (``KBGRAPH_MAX_UPLOAD_BYTES``; the guard in
   :mod:`kbgraph.serve.guard`: 413, and nothing was written: Starlette spools the parts to anonymous temporary
   files, closed on the error);
2. every file name is checked before anything is written (:func:`clean_filename`: a bare name, no directory,
   ``..``, ``/``, ``\\``, NUL or other control character, no leading dot, 1-255 bytes of UTF-8; two parts of
   one name are refused too): else 400 naming the rule, and nothing is written;
3. each file is copied to a hidden temporary file in the upload folder and renamed over its final name only
   once every file of the request is copied (``os.replace``: a reader sees the old or the new file, never a
   half-written one); when a copy fails the temporary files are removed and nothing is renamed;
4. once the job ends, a file it refused for its type (``evil.exe``, an archive: ``kbgraph.ingest.parse.skip_reason``)
   is removed from the folder (:func:`discard_refused`); its reason stays in the job's report. A file that failed
   for its content (corrupt, empty, encrypted) is kept, as the CLI keeps a bad file where it is.
"""

from __future__ import annotations

import os
import shutil
import unicodedata
import uuid
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile

from kbgraph.errors import ConfigError
from kbgraph.ingest.parse import skip_reason
from kbgraph.ingest.report import IngestReport
from kbgraph.settings import Settings

#: The form field of the files; the only other field taken is ``wait``.
FILES_FIELD = "files"
FIELDS = frozenset({FILES_FIELD, "wait"})
#: Longest file name, in bytes of UTF-8 (the usual file-system limit).
MAX_NAME_BYTES = 255
#: Most files in one request.
MAX_FILES = 1000
_COPY_BLOCK = 1 << 20


class InvalidUpload(ConfigError):
    """An upload request that cannot be taken: a hostile or empty file name, no ``files`` part, an unknown
    field (HTTP 400; nothing was written)."""


def uploads_dir(settings: Settings) -> Path:
    """The upload folder of the knowledge base of ``settings``: ``<home>/<name>/uploads`` (the embedded store's
    folder by default; on Neo4j a folder of its own)."""
    return settings.home / settings.name / "uploads"


def clean_filename(name: object) -> str:
    """``name`` (NFC-normalised) if it is a bare file name: 1-255 bytes of UTF-8, no ``/``, ``\\``, NUL or other
    control character, no ``..``, not starting with a dot and not blank. Raises InvalidUpload (one line naming
    the rule) otherwise."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidUpload("an uploaded file has no name: send each file as a `files` part with a filename")
    name = unicodedata.normalize("NFC", name)
    shown = name.encode("unicode_escape").decode("ascii")[:80]
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise InvalidUpload(f"the file name '{shown}...' is longer than {MAX_NAME_BYTES} bytes")
    if any(c in name for c in "/\\") or ".." in name or name.startswith(".") or _has_control(name):
        raise InvalidUpload(
            f"invalid file name '{shown}': send the bare file name (no directory, '/', '\\', '..', NUL or "
            "control characters; not starting with '.')"
        )
    return name


def _has_control(name: str) -> bool:
    return any(unicodedata.category(c) == "Cc" for c in name)


def _form_flag(form: FormData, field: str) -> bool:
    value = str(form.get(field, "false")).strip().lower()
    if value not in ("true", "false", "1", "0", "yes", "no", "on", "off", ""):
        raise InvalidUpload(f"the form field {field!r} must be true or false, not {value[:20]!r}")
    return value in ("true", "1", "yes", "on")


def check_form(form: FormData) -> tuple[list[tuple[str, UploadFile]], bool]:
    """The ``(clean name, file)`` pairs and the ``wait`` flag of a parsed multipart form. Raises InvalidUpload:
    no ``files`` part, a ``files`` part that is not a file, an unknown field, a bad or repeated name."""
    unknown = sorted({key for key in form.keys() if key not in FIELDS})
    if unknown:
        raise InvalidUpload(f"unknown form field {unknown[0]!r}: send files as `files` parts (and `wait`)")
    parts = form.getlist(FILES_FIELD)
    if not parts:
        raise InvalidUpload("no file to ingest: send one or more `files` parts (curl -F files=@report.pdf)")
    files: list[tuple[str, UploadFile]] = []
    seen: set[str] = set()
    for part in parts:
        if not isinstance(part, UploadFile):
            raise InvalidUpload("a `files` part is not a file (it has no filename)")
        name = clean_filename(part.filename)
        if name in seen:
            raise InvalidUpload(f"the file name {name!r} comes twice in one request")
        seen.add(name)
        files.append((name, part))
    return files, _form_flag(form, "wait")


async def save_uploads(files: list[tuple[str, UploadFile]], folder: Path) -> list[Path]:
    """Write each ``(name, file)`` to ``folder/name`` (module doc, step 3); returns the final paths in request
    order. Raises OSError (the disk is full, the folder not writable); no temporary file is left, and nothing
    is renamed when a copy failed."""
    await run_in_threadpool(folder.mkdir, parents=True, exist_ok=True)
    staged: list[tuple[Path, Path]] = []
    try:
        for name, upload in files:
            temp = folder / f".{uuid.uuid4().hex}.part"
            staged.append((temp, folder / name))
            await upload.seek(0)
            await run_in_threadpool(_copy, upload, temp)
        for temp, final in staged:
            os.replace(temp, final)
    finally:
        for temp, _ in staged:
            temp.unlink(missing_ok=True)
    return [final for _, final in staged]


def _copy(upload: UploadFile, target: Path) -> None:
    with open(target, "xb") as out:
        shutil.copyfileobj(upload.file, out, _COPY_BLOCK)
        out.flush()
        os.fsync(out.fileno())


def discard_refused(paths: list[str], report: IngestReport) -> list[str]:
    """Remove each uploaded file of ``paths`` that the run of ``report`` did not take (failed or skipped) because
    kbgraph does not read its kind of file (module doc, step 4). Returns the removed paths."""
    outcomes = {Path(f.path).resolve(): f.outcome for f in report.files}
    removed = []
    for path in paths:
        if outcomes.get(Path(path).resolve()) in ("failed", "skipped") and skip_reason(Path(path)) is not None:
            Path(path).unlink(missing_ok=True)
            removed.append(path)
    return removed
