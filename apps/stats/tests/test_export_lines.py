"""The export's CSV lines are what `csv.writer` with minimal quoting writes for the same cells, and its
JSON Lines hold the same values: whatever a channel or a tag holds."""

import csv
import io
import json
from datetime import timedelta

from apps.stats import export

SEP = "\x1f"
GUIDS = ("7" * 32, "8" * 32, "9" * 32)
PAGE = [
    # chat, channel, created, closed, contact guid ("" for none), department, first response ms, duration, messages,
    # accepted, handled, ai->human, human->ai, rating, tags (as the database joins them), assigned by, SLA breached,
    # labels (as the database joins them)
    (
        1,
        "widget",
        "2025-01-15 06:00:00+00",
        None,
        "",
        None,
        None,
        None,
        0,
        "",
        "",
        False,
        False,
        None,
        None,
        None,
        False,
        None,
    ),
    (
        2,
        "tg",
        "2025-01-15 06:00:00.5+00",
        "2025-01-15 07:01:02.999999+00",
        GUIDS[0],
        3,
        1500,
        timedelta(hours=1, seconds=62, microseconds=999_499),
        12,
        "ai",
        "human",
        True,
        False,
        5,
        f"vip{SEP}b2b{SEP}a,b",
        "routing",
        True,
        f"vip{SEP}B2B{SEP}a,b",
    ),
    (
        3,
        'odd,"chan"',
        "2025-01-15 06:00:00.000001",
        None,
        GUIDS[1],
        None,
        1000,
        None,
        1,
        "human",
        "",
        False,
        True,
        1,
        'say "hi"',
        "agent",
        False,
        'q"uote',
    ),
    (
        4,
        "vk",
        "2025-01-15 06:00:00+00",
        None,
        GUIDS[2],
        None,
        7,
        None,
        1,
        "",
        "",
        True,
        True,
        None,
        "line\r\nbreak",
        "",
        True,
        "Éclair",
    ),
]


def reference_cells(row: tuple) -> list:
    (
        chat,
        channel,
        created,
        closed,
        contact,
        department,
        ms,
        duration,
        messages,
        accepted,
        handled,
        a2h,
        h2a,
        rating,
        tags,
        assigned_by,
        sla_breached,
        labels,
    ) = row
    names = sorted(tags.split(SEP)) if tags else []
    label_names = sorted(labels.split(SEP), key=lambda name: (name.casefold(), name)) if labels else []
    return [
        chat,
        channel,
        export._iso(created),
        None if closed is None else export._iso(closed),
        contact or None,
        department,
        None if ms is None else ms / 1000,
        None if duration is None else int(duration.total_seconds()),
        messages,
        accepted or None,
        handled or None,
        a2h,
        h2a,
        rating,
        names,
        assigned_by or None,
        sla_breached,
        label_names,
    ]


def test_csv_lines_are_what_csv_writer_writes():
    out = io.StringIO()
    spell = {True: "true", False: "false"}
    writer = csv.writer(out, lineterminator="\r\n")
    for row in PAGE:
        cells = reference_cells(row)
        cells[11], cells[12], cells[14] = spell[cells[11]], spell[cells[12]], ",".join(cells[14])
        cells[16], cells[17] = spell[cells[16]], ",".join(cells[17])
        writer.writerow(cells)
    assert export.csv_lines(PAGE) == out.getvalue()
    assert list(csv.reader(io.StringIO(export.csv_lines(PAGE)))) == list(csv.reader(io.StringIO(out.getvalue())))


def test_json_lines_hold_every_column():
    lines = export.json_lines(PAGE).decode().splitlines()
    assert [json.loads(line) for line in lines] == [
        dict(zip(export.COLUMNS, reference_cells(row), strict=True)) for row in PAGE
    ]
    assert json.loads(lines[1])["created_at"] == "2025-01-15T06:00:00.500000+00:00"
    assert json.loads(lines[1])["duration_seconds"] == 3662
