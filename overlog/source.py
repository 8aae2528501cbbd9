"""Source files and spans: where every AST node and diagnostic comes from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class Span(NamedTuple):
    """A region of a source file: 1-based line and column of the first and last character.
    (A named tuple: programs of facts make one per value, and tuples are cheap to make.)"""

    line: int
    column: int
    end_line: int
    end_column: int

    def merge(self, other: Span | None) -> Span:
        """The smallest span covering both."""
        if other is None:
            return self
        start = min((self.line, self.column), (other.line, other.column))
        end = max((self.end_line, self.end_column), (other.end_line, other.end_column))
        return Span(start[0], start[1], end[0], end[1])


def span_at(text: str, start: int, end: int) -> Span:
    """The span of ``text[start:end]`` (``end`` past its last character)."""
    line = text.count("\n", 0, start) + 1
    column = start - text.rfind("\n", 0, start)
    last = max(start, end - 1)
    return Span(line, column, text.count("\n", 0, last) + 1, last - text.rfind("\n", 0, last))


@dataclass(frozen=True, slots=True)
class Source:
    """A program's text and the path it is reported under."""

    text: str
    path: str = "<input>"
    # per line of ``text``: the file and line it came from (P2's #include); None: this file
    origins: tuple[tuple[str, int], ...] | None = None

    def where(self, line: int) -> tuple[str, int]:
        """The file and line that line ``line`` of the text came from."""
        if self.origins is not None and 1 <= line <= len(self.origins):
            return self.origins[line - 1]
        return self.path, line

    def line_text(self, line: int) -> str:
        lines = self.text.splitlines()
        if 1 <= line <= len(lines):
            return lines[line - 1]
        return ""


class UnreadableSource(Exception):
    """A program or data file could not be read as text; the message says why."""


def read_text(path: str) -> str:
    """A file's text: UTF-8, a leading byte-order mark skipped. Raises UnreadableSource saying
    what is wrong (missing, unreadable, or not UTF-8, with where)."""
    data = read_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UnreadableSource(f"cannot read {path}: {not_utf8(data, error)}") from None


def read_bytes(path: str) -> bytes:
    """A file's bytes, a leading UTF-8 byte-order mark skipped (UnreadableSource if it
    cannot be read)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as error:
        raise UnreadableSource(f"cannot read {path}: {error.strerror}") from None
    return data[3:] if data.startswith(b"\xef\xbb\xbf") else data


def not_utf8(data: bytes, error: UnicodeDecodeError) -> str:
    """Where ``data`` stops being UTF-8, in words."""
    line = data.count(b"\n", 0, error.start) + 1
    line_start = data.rfind(b"\n", 0, error.start) + 1
    column = len(data[line_start:error.start].decode("utf-8", "replace")) + 1
    return (f"not UTF-8 text (byte 0x{data[error.start]:02x} at line {line}, column "
            f"{column})")
