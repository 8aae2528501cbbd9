"""Source files and spans: where every AST node and diagnostic comes from."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """A region of a source file: 1-based line and column of the first and last character."""

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


@dataclass(frozen=True, slots=True)
class Source:
    """A program's text and the path it is reported under."""

    text: str
    path: str = "<input>"

    def line_text(self, line: int) -> str:
        lines = self.text.splitlines()
        if 1 <= line <= len(lines):
            return lines[line - 1]
        return ""
