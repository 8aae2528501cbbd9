"""CSV facts in and out (design.md 4, docs/csv.md): one row per record, no header unless asked.

A bare cell reads as a value: an integer (`-12`), a decimal (`2.5`, `1e3`), `infinity` or
`-infinity`, `true`, `false`, `null`, or a list written as in Overlog (`[1, "a", [true]]`; the
commas inside its brackets do not split cells); any other bare cell is a string. A quoted cell
(`"..."`, with `""` for a quote) is always a string, and may span lines. Files are written so
that reading them gives back exactly the same values: a string is quoted whenever its bare
reading would be something else (`"007"`, `"true"`, `"a,b"`, `" x"`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from typing import Any

from overlog.errors import ParseError
from overlog.limits import MAX_INT_DIGITS, int_from_text
from overlog.parser import parse
from overlog.printer import format_value
from overlog.source import read_text
from overlog.syntax import Const, ListExpr, Neg
from overlog.values import python

_INT = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT = re.compile(r"[+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][+-]?[0-9]+)?\Z")
_WORDS = {"true": True, "false": False, "null": None, "infinity": math.inf,
          "-infinity": -math.inf}
_CELL_END = re.compile(r"[,\r\n]")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')  # an Overlog string literal inside a list


class CsvError(ValueError):
    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")


class _CellError(ValueError):
    """A cell that cannot be read; its record says where."""


def parse_records(text: str, path: str = "<csv>") -> Iterator[tuple[int, list[Any]]]:
    """(line where it starts, cells) of each record; blank lines are skipped."""
    i, n, line = 0, len(text), 1
    while i < n:
        if text[i] in "\r\n":
            line += text[i] == "\n"
            i += 1
            continue
        start, cells = line, []
        while True:
            if i < n and text[i] == '"':
                j, chunk = i + 1, []
                while True:
                    quote = text.find('"', j)
                    if quote < 0:
                        raise CsvError(path, start, "unterminated quoted cell")
                    chunk.append(text[j:quote])
                    if text.startswith('""', quote):
                        chunk.append('"')
                        j = quote + 2
                        continue
                    break
                cell = "".join(chunk)
                line += cell.count("\n")
                cells.append(cell)
                i = quote + 1
            elif i < n and text[i] == "[":
                j = _list_end(text, i, path, line)
                cells.append(_list_value(text[i:j], path, line))
                i = j
            else:
                end = _CELL_END.search(text, i)
                j = n if end is None else end.start()
                try:
                    cells.append(_bare(text[i:j]))
                except _CellError as error:
                    raise CsvError(path, line, str(error)) from None
                i = j
            if i >= n or text[i] in "\r\n":
                yield start, cells
                break
            if text[i] != ",":
                raise CsvError(path, line, "text after a closing quote or bracket")
            i += 1  # the comma


def _bare(cell: str) -> Any:
    if _INT.match(cell):
        if len(cell.lstrip("+-")) > MAX_INT_DIGITS:  # converting is quadratic in the digits
            raise _CellError(f"an integer of {len(cell.lstrip('+-')):,} digits (the limit "
                             f"is {MAX_INT_DIGITS:,})")
        return int_from_text(cell)
    if _FLOAT.match(cell):
        return float(cell)
    return _WORDS.get(cell, cell)


def _list_end(text: str, i: int, path: str, line: int) -> int:
    """The position after the bracket that closes the list starting at ``i``."""
    depth, j, n = 0, i, len(text)
    while j < n:
        c = text[j]
        if c == '"':
            found = _STRING.match(text, j)
            if found is None:
                raise CsvError(path, line, "unterminated string in a list")
            j = found.end()
            continue
        if c in "\r\n":
            break
        depth += c == "["
        depth -= c == "]"
        j += 1
        if depth == 0:
            return j
    raise CsvError(path, line, "a list without its closing `]`")


def _list_value(cell: str, path: str, line: int) -> tuple:
    try:
        (fact,) = parse(f"cell({cell}).").facts
    except (ParseError, ValueError):
        raise CsvError(path, line, f"not a list of values: {cell}") from None

    def value(term: object) -> Any:
        if isinstance(term, Const):
            return term.value
        if isinstance(term, ListExpr):
            return tuple(value(item) for item in term.items)
        if isinstance(term, Neg) and isinstance(term.operand, Const):
            return -term.operand.value  # type: ignore[operator]
        raise CsvError(path, line, f"not a list of values: {cell}")

    return value(fact.atom.args[0])


def read_rows(path: str, arity: int, header: bool = False) -> Iterator[tuple]:
    """The rows of a CSV file. Raises UnreadableSource (not UTF-8, missing) or CsvError."""
    text = read_text(path)  # a byte-order mark is skipped
    for number, (line, row) in enumerate(parse_records(text, path)):
        if header and number == 0:
            continue
        if len(row) != arity:
            raise CsvError(path, line, f"expected {arity} fields, got {len(row)}")
        yield tuple(row)


def format_cell(value: Any) -> str:
    """A value as a cell: a string bare where it reads back as itself, quoted otherwise;
    anything else as Overlog writes it (a list on one line, its strings escaped)."""
    if isinstance(value, str):
        plain = (value and not (_INT.match(value) or _FLOAT.match(value) or value in _WORDS)
                 and value == value.strip() and not value.startswith("[")
                 and not any(c in value for c in ',"\r\n'))
        return value if plain else '"' + value.replace('"', '""') + '"'
    return format_value(python(value))  # (a P2 identifier as the int it is: it reads back)


def format_cells(values: list) -> list[str]:
    """``format_cell`` of each of ``values`` (a column: ints in bulk)."""
    if set(map(type, values)) == {int}:
        try:
            return list(map(str, values))
        except ValueError:  # past str()'s digits
            pass
    return list(map(format_cell, values))


def format_row(row: Iterable[Any]) -> str:
    return ",".join(format_cell(v) for v in row)
