"""Regenerates the binary test files here that no library kbgraph depends on can write (run by hand, not by
the suite): ``memo.msg`` (an Outlook message: a body, a text attachment and a WAV voice note) with
aspose-email-foss, and ``ledger.xls`` (a legacy Excel workbook: two sheets, a date cell) with xlwt.

    python -m venv /tmp/fixtures-venv && /tmp/fixtures-venv/bin/pip install aspose-email-foss xlwt
    /tmp/fixtures-venv/bin/python tests/data/make_fixtures.py
"""

from __future__ import annotations

import datetime as dt
import io
import wave
from pathlib import Path

HERE = Path(__file__).resolve().parent


def make_msg(path: Path) -> None:
    from aspose.email_foss import msg

    body = (
        "Hi team,\n\nThe Basel office moves to the Rhine harbour on 3 March 2025. Movers arrive at 8:00.\n\n"
        "Regards,\nAda"
    )
    m = msg.MapiMessage.create("Basel office move", body)
    m.set_property(msg.PropertyId.SENDER_NAME, "Ada Lovelace")
    m.set_property(msg.PropertyId.SENDER_EMAIL_ADDRESS, "ada@example.com")
    m.set_property(msg.PropertyId.MESSAGE_DELIVERY_TIME, dt.datetime(2025, 2, 10, 9, 30, tzinfo=dt.UTC))
    m.add_recipient("grace@example.com", display_name="Grace Hopper")
    plan = b"Floor plan: the archive room is on level 2, next to the kitchen.\n"
    m.add_attachment("floor-plan.txt", plan, mime_type="text/plain")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:  # 0.1 s of silence
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x00" * 800)
    m.add_attachment("voice-note.wav", buf.getvalue(), mime_type="audio/wav")
    m.save(str(path))


def make_xls(path: Path) -> None:
    import xlwt

    wb = xlwt.Workbook()
    revenue = wb.add_sheet("Revenue")
    rows = [
        ("Region", "Quarter", "Revenue (kEUR)"),
        ("Basel", "Q1", 1250),
        ("Basel", "Q2", 1410.5),
        ("Zurich", "Q1", 980),
    ]
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            revenue.write(r, c, value)
    staff = wb.add_sheet("Staff")
    staff.write(0, 0, "Name")
    staff.write(0, 1, "Joined")
    staff.write(1, 0, "Ada Lovelace")
    staff.write(1, 1, dt.date(2021, 4, 1), xlwt.easyxf(num_format_str="YYYY-MM-DD"))
    wb.save(str(path))


if __name__ == "__main__":
    make_msg(HERE / "memo.msg")
    make_xls(HERE / "ledger.xls")
