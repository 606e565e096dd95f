"""file-source's lines: complete lines read from a file, and a batch of them checked as JSON or
read as CSV at once (`all_json`, `csv_rows`: no Python frame per line) when the batch reads as
the per-line way (`check_json`, the task's `_value`) would read it line by line.

Measured on a million ~100 B lines (docs/performance.md, file-source's task): `json.loads` per
line was 70% of a poll (3.97 of 4.4 CPU s); the batch checked in C 0.66–0.78 CPU s in all; CSV
(4 columns) 9.06 → 2.6 CPU s.
"""

from __future__ import annotations

import csv
import json
from collections import deque
from typing import BinaryIO, Final

import msgspec

CHUNK_BYTES: Final = 1 << 20
_JSON_SYNTAX: Final = msgspec.json.Decoder(msgspec.Raw)  # checks one value's syntax, builds no object
# Writes what json.dumps(…, separators=(",", ":"), ensure_ascii=False) does, ~5x sooner.
JSON_ENCODER: Final = msgspec.json.Encoder()


def read_complete_lines(handle: BinaryIO, position: int, limit: int) -> tuple[list[bytes], int]:
    """Up to `limit` complete lines from byte `position` of an open file (without `\\n`), and
    the position after the last one. A trailing line with no `\\n` yet is left for a later read.
    """
    lines: list[bytes] = []
    handle.seek(position)
    rest = b""
    while len(lines) < limit:
        chunk = handle.read(CHUNK_BYTES)
        if not chunk:
            break
        data = rest + chunk
        parts = data.split(b"\n")
        rest = parts.pop()
        wanted = limit - len(lines)
        if len(parts) > wanted:
            taken = parts[:wanted]
            lines.extend(taken)
            return lines, position + sum(map(len, taken)) + wanted
        lines.extend(parts)
        position += len(data) - len(rest)
    return lines, position


def check_json(raw: bytes) -> None:
    """Raise ValueError unless `raw` is one JSON value as `json.loads` judges it. msgspec's syntax
    check first (measured: 0.17 s per million 100 B lines against json.loads's 3.4 s, most of
    file-source's poll), after a UTF-8 check (msgspec passes a string's bytes unchecked);
    json.loads then judges what msgspec refuses, for what it accepts beyond RFC 8259 (NaN,
    Infinity, a BOM, a lone surrogate's escape), so a line is taken exactly as it was before."""
    try:
        raw.decode("utf-8")
        _JSON_SYNTAX.decode(raw)
    except (UnicodeDecodeError, msgspec.DecodeError, RecursionError):
        try:
            json.loads(raw)
        except RecursionError as exc:  # not a ValueError: it would fail the task with a traceback
            raise ValueError("nested too deeply") from exc


def all_json(lines: list[bytes]) -> bool:
    """Whether every line is valid UTF-8 and one JSON value by msgspec's syntax check, with no
    `\r` to drop: then each is taken as it is (`check_json` would take it), checked in C with no
    Python frame per line. False sends the batch the per-line way (blank lines, `\r\n`
    endings, a bad line and its file:line)."""
    joined = b"\n".join(lines)
    if b"\r" in joined:
        return False
    try:
        joined.decode("utf-8")
        deque(map(_JSON_SYNTAX.decode, lines), maxlen=0)
    except (UnicodeDecodeError, msgspec.DecodeError, RecursionError):
        return False
    return True


def csv_rows(lines: list[bytes], width: int) -> list[list[str]] | None:
    """The lines as CSV rows of `width` fields, read at once as `_value` reads them one by one,
    or None for the per-line way: a blank line to skip, a `\r` to drop, bytes that are not
    UTF-8, a row of another width (a bad line and its file:line), a quoted field running into
    the next line (then there are fewer rows than lines)."""
    joined = b"\n".join(lines)
    if b"\r" in joined or not all(map(bytes.strip, lines)):
        return None
    try:
        rows = list(csv.reader(joined.decode("utf-8").split("\n")))
    except (UnicodeDecodeError, csv.Error):
        return None
    return rows if len(rows) == len(lines) and set(map(len, rows)) == {width} else None
