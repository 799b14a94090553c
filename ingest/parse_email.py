"""E-mail: RFC 822 ``.eml`` (the standard library's ``email`` package) and Outlook ``.msg`` (python-oxmsg)
-> elements, attachments included.

A message gives one text element with its sender, recipients, date and subject, then its body (the HTML
part when there is one, else the plain text) through ``unstructured``'s ``partition_html`` /
``partition_text``, as text only: an e-mail body has no headings (unstructured's 'Title' there is a greeting
or a signature). Then, in order:

- each **attached or digested message** (``message/rfc822``, a ``multipart/digest``'s parts, an .msg's
  embedded .eml): a level-1 heading "E-mail: <subject>" and its own elements (nested up to ``MAX_DEPTH``);
- each **attachment** of a format kbgraph reads (``parse.parse_bytes``): a level-1 heading
  "Attachment: <file name>" and its elements, headings one level down.

An attachment that cannot be read (an image without OCR, audio without speech-to-text, an unknown type, a
corrupt file) is skipped with a warning naming it (``parse_common.warn``); the message itself is kept. A file whose
bytes start with a UTF-16/UTF-32 byte-order mark (or hold NUL bytes) is decoded first.

Errors: ``IngestError`` when the file is no e-mail (no headers), corrupt, or has no text at all.
"""

from __future__ import annotations

import email
import email.policy
import io
import mimetypes
import re
from collections.abc import Sequence
from email.message import EmailMessage, MIMEPart
from pathlib import Path

from kbgraph.errors import IngestError
from kbgraph.ingest.decode import decode_text
from kbgraph.ingest.parse_common import MIME_TYPES, UNKNOWN_ERROR, RawElement, dispatch, warn, within_file
from kbgraph.text import one_line
from kbgraph.ingest.ocr import OCR_IMAGES
from kbgraph.ingest.parse_unstructured import from_unstructured, quiet_unstructured

#: Messages attached to messages attached to ... are read this deep (the outer message is depth 0).
MAX_DEPTH = 3
_WS = re.compile(r"\s+")


def _header_element(fields: Sequence[tuple[str, object]]) -> list[RawElement]:
    head = [f"{k}: {_WS.sub(' ', str(v)).strip()}" for k, v in fields if v and str(v).strip()]
    return [{"kind": "text", "text": ". ".join(head)}] if head else []


def _nested(label: str, raw: list[RawElement]) -> list[RawElement]:
    """``raw`` under a level-1 heading ``label``, its own headings one level down."""
    out: list[RawElement] = [{"kind": "heading", "text": label, "level": 1}]
    for r in raw:
        out.append({**r, "level": min((r.get("level") or 1) + 1, 6)} if r["kind"] == "heading" else r)
    return out


def _body(html: str | None, text: str | None, where: str) -> list[RawElement]:
    """Elements of a message body: the HTML version when there is one (else, or when it fails, the text)."""
    quiet_unstructured()
    if html and html.strip():
        from unstructured.partition.html import partition_html

        try:
            return from_unstructured(list(partition_html(text=html)), headings=False)
        except Exception as exc:
            warn(
                f"HTML body of {where} unreadable ({type(exc).__name__}: {one_line(exc, 120, empty=UNKNOWN_ERROR)}); "
                f"{'its plain-text version used' if text else 'body skipped'}"
            )
    if text and text.strip():
        from unstructured.partition.text import partition_text

        return from_unstructured(list(partition_text(text=text)), headings=False)
    return []


def _attachment(data: bytes | None, filename: str, ctype: str, depth: int) -> list[RawElement]:
    """Elements of one attached file under an "Attachment: name" heading; [] (and a warning) when skipped."""
    parse_bytes, skip_reason = dispatch()  # kbgraph.ingest.parse's, which imports this module

    label = f"attachment '{filename}' ({ctype})"
    ext = Path(filename).suffix.lower() or (mimetypes.guess_extension(ctype) or "")
    # an image, audio or video attachment needs a model kbgraph does not have, whatever its file name says
    probe = {"image": "x.png", "audio": "x.wav", "video": "x.mp4"}.get(ctype.split("/")[0])
    probe = probe if ext not in MIME_TYPES else None
    reason = skip_reason(Path(probe or f"x{ext}")) if (probe or ext) else "unknown type (no file extension)"
    if reason or (ext not in MIME_TYPES and ext not in OCR_IMAGES):  # (an image: read by OCR when it is on)
        warn(f"{label} skipped: {reason or 'unsupported type'}")
        return []
    if not data or not data.strip():
        warn(f"{label} skipped: empty")
        return []
    try:
        with within_file():  # the attachment's properties are not the e-mail's (kbgraph.ingest.metadata)
            if ext in (".eml", ".msg"):
                title, raw = (parse_eml if ext == ".eml" else parse_msg)(data, filename, depth=depth + 1)
            else:
                title, raw = parse_bytes(data, ext, filename)
    except IngestError as exc:
        warn(f"{label} skipped: {one_line(exc, 160, empty=UNKNOWN_ERROR)}")
        return []
    except Exception as exc:  # a parser bug in one attachment must not lose the message
        warn(f"{label} skipped: {type(exc).__name__}: {one_line(exc, 160, empty=UNKNOWN_ERROR)}")
        return []
    return _nested(f"Attachment: {filename}", raw)


# --- .eml ----------------------------------------------------------------------------------------------


def parse_eml(data: bytes, name: str, *, depth: int = 0) -> tuple[str | None, list[RawElement]]:
    """(subject, elements) of an RFC 822 message and its attachments. Raises IngestError."""
    try:
        if data.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")) or b"\x00" in data[:4096]:
            # a message saved as UTF-16/32 text: its 8-bit body is then UTF-8 (the charset it most likely declares)
            data = decode_text(data, name).encode("utf-8")
        msg = email.message_from_bytes(data, policy=email.policy.default)
    except IngestError:
        raise
    except Exception as exc:
        raise IngestError(f"corrupt or unreadable e-mail {name}: {one_line(exc, 200, empty=UNKNOWN_ERROR)}") from exc
    if not msg.keys():
        raise IngestError(f"not an e-mail: {name} has no RFC 822 headers (From:, To:, Subject:)")
    return _message(msg, name, depth)


def _message(msg: EmailMessage, where: str, depth: int) -> tuple[str | None, list[RawElement]]:
    subject = _WS.sub(" ", str(msg.get("Subject", "") or "")).strip() or None
    raw = _header_element([(k, msg.get(k)) for k in ("From", "To", "Cc", "Date", "Subject")])
    html = text = None
    for pref in (("html",), ("plain",)):
        try:
            part = msg.get_body(preferencelist=pref)
            content = _part_text(part) if part is not None else None
        except Exception as exc:
            why = one_line(exc, 120, empty=UNKNOWN_ERROR)
            warn(f"{pref[0]} body of {where} unreadable: {type(exc).__name__}: {why}")
            content = None
        if pref == ("html",):
            html = content
        else:
            text = content
    raw += _body(html, text, where)
    for i, part in enumerate(_attached_parts(msg), start=1):
        ctype = part.get_content_type()
        if ctype == "message/rfc822":
            inner = _inner_message(part)
            inner_subject = (inner.get("Subject") if inner is not None else None) or f"message {i}"
            if inner is None:
                warn(f"attached e-mail {i} of {where} skipped: unreadable")
            elif depth + 1 > MAX_DEPTH:
                warn(f"attached e-mail '{one_line(inner_subject, 80)}' skipped: nested more than {MAX_DEPTH} deep")
            else:
                _, inner_raw = _message(inner, f"attached e-mail '{one_line(inner_subject, 80)}'", depth + 1)
                raw += _nested(f"E-mail: {one_line(inner_subject, 150)}", inner_raw)
            continue
        filename = part.get_filename() or f"part {i}{mimetypes.guess_extension(ctype) or ''}"
        try:
            payload = part.get_payload(decode=True)
        except Exception as exc:
            warn(f"attachment '{filename}' ({ctype}) skipped: undecodable ({type(exc).__name__})")
            continue
        raw += _attachment(payload if isinstance(payload, bytes) else None, filename, ctype, depth)
    return subject, raw


def _attached_parts(msg: EmailMessage) -> list[MIMEPart]:
    """Attachments and digested messages, in order (``iter_attachments`` skips the body and, in a
    ``multipart/alternative`` or ``related``, its other renderings and inline images)."""
    if not msg.is_multipart():
        return []
    try:
        return list(msg.iter_attachments())
    except Exception:
        return [p for p in msg.iter_parts() if p.get_content_type() == "message/rfc822"]


def _inner_message(part: MIMEPart) -> EmailMessage | None:
    try:
        inner = part.get_content()
    except Exception:
        inner = None
    if isinstance(inner, EmailMessage):
        return inner
    payload = part.get_payload()
    if isinstance(payload, list) and payload and isinstance(payload[0], EmailMessage):
        return payload[0]
    return None


def _part_text(part: MIMEPart) -> str | None:
    """Text of a text/* part: its declared charset, else detected (a wrong or unknown charset is common)."""
    try:
        content = part.get_content()
        if isinstance(content, str):
            return content
    except (LookupError, UnicodeError, ValueError, AssertionError):
        pass
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes) or not payload.strip():
        return None
    return decode_text(payload, "e-mail body")


# --- .msg ----------------------------------------------------------------------------------------------


def parse_msg(data: bytes, name: str, *, depth: int = 0) -> tuple[str | None, list[RawElement]]:
    """(subject, elements) of an Outlook .msg and its attachments (python-oxmsg). Raises IngestError."""
    if not data.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        raise IngestError(f"corrupt or unreadable .msg {name}: not an Outlook message (no OLE header)")
    try:
        from oxmsg import Message
    except ImportError as exc:
        raise IngestError(f"cannot read {name}: .msg needs python-oxmsg (pip install 'kbgraph[ingest]')") from exc
    try:
        msg = Message.load(io.BytesIO(data))
        headers = msg.message_headers or {}
        subject = _WS.sub(" ", msg.subject or "").strip() or None
        sent = msg.sent_date
        to = ", ".join(r.email_address for r in msg.recipients if r.email_address) or headers.get("To")
        html, text = msg.html_body, msg.body
        attachments = list(msg.attachments)
        sender = msg.sender
    except IngestError:
        raise
    except Exception as exc:
        why = one_line(exc, 200, empty=UNKNOWN_ERROR)
        raise IngestError(f"corrupt or unreadable .msg {name}: {type(exc).__name__}: {why}") from exc
    if "encrypted" in str(headers.get("Content-Type", "")):
        raise IngestError(f"cannot read {name}: the message is encrypted (S/MIME); decrypt it in Outlook first")
    fields = [
        ("From", sender),
        ("To", to),
        ("Cc", headers.get("Cc")),
        ("Date", sent.isoformat() if sent else None),
        ("Subject", subject),
    ]
    raw = _header_element(fields) + _body(html, text, name)
    for i, att in enumerate(attachments, start=1):
        try:
            filename = att.file_name or f"attachment {i}"
            ctype = att.mime_type or mimetypes.guess_type(filename)[0] or "application/octet-stream"
            payload = att.file_bytes
        except Exception as exc:
            why = one_line(exc, 100, empty=UNKNOWN_ERROR)
            warn(f"attachment {i} of {name} skipped: unreadable ({type(exc).__name__}: {why})")
            continue
        raw += _attachment(payload, filename, ctype, depth)
    return subject, raw
