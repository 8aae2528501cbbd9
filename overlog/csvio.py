"""CSV facts in and out (design.md 4): one row per line, no header unless asked; a cell that
reads as an integer is an int, as a decimal a float, a quoted cell is always a string, anything
else a string. Written files quote exactly the strings that would otherwise read back as
something else, so that reading a written file gives back the same values."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from overlog.limits import int_text

_INT = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT = re.compile(r"[+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][+-]?[0-9]+)?\Z")


class CsvError(ValueError):
    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")


def parse_line(text: str, path: str = "<csv>", line: int = 1) -> list[Any]:
    cells: list[Any] = []
    i, n = 0, len(text)
    while True:
        if i < n and text[i] == '"':
            j, chunk = i + 1, []
            while True:
                if j >= n:
                    raise CsvError(path, line, "unterminated quoted cell")
                if text[j] == '"':
                    if j + 1 < n and text[j + 1] == '"':
                        chunk.append('"')
                        j += 2
                        continue
                    break
                chunk.append(text[j])
                j += 1
            cells.append("".join(chunk))
            i = j + 1
            if i < n and text[i] != ",":
                raise CsvError(path, line, "text after a closing quote")
        else:
            j = text.find(",", i)
            j = n if j < 0 else j
            cells.append(_bare(text[i:j]))
            i = j
        if i >= n:
            return cells
        i += 1  # the comma


def _bare(cell: str) -> Any:
    if _INT.match(cell):
        return int(cell)
    if _FLOAT.match(cell):
        return float(cell)
    return cell


def read_rows(path: str, arity: int, header: bool = False) -> Iterator[tuple]:
    with open(path, encoding="utf-8-sig", newline="") as f:  # a byte-order mark is skipped
        for number, raw in enumerate(f, start=1):
            text = raw.rstrip("\r\n")
            if (header and number == 1) or not text:
                continue
            row = parse_line(text, path, number)
            if len(row) != arity:
                raise CsvError(path, number, f"expected {arity} fields, got {len(row)}")
            yield tuple(row)


def format_cell(value: Any) -> str:
    if isinstance(value, str):
        plain = (value and _bare(value) == value and value == value.strip()
                 and not any(c in value for c in ',"\r\n'))
        return value if plain else '"' + value.replace('"', '""') + '"'
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, tuple):
        return format_cell(str(list(value)))
    return repr(value) if isinstance(value, float) else int_text(value) \
        if isinstance(value, int) else str(value)


def format_row(row: Iterable[Any]) -> str:
    return ",".join(format_cell(v) for v in row)
