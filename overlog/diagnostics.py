"""Diagnostics: a located message with a stable code and located notes, and their rendering.

Rendered as ``path:line:col: error[CODE]: message``, then the source line with carets under
the span, then each note the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from overlog.source import Source, Span


@dataclass(frozen=True, slots=True)
class Note:
    message: str
    span: Span | None = None


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    message: str
    span: Span | None = None
    severity: str = "error"  # "error" | "warning"
    notes: tuple[Note, ...] = field(default=())
    subject: str | None = field(default=None, compare=False)  # the relation it is about

    @property
    def is_error(self) -> bool:
        return self.severity == "error"


def _sort_key(d: Diagnostic) -> tuple[int, int, str]:
    if d.span is None:
        return (0, 0, d.code)
    return (d.span.line, d.span.column, d.code)


def sort_diagnostics(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Diagnostics in source order, as a reader meets them."""
    return sorted(diagnostics, key=_sort_key)


def _excerpt(source: Source, span: Span, indent: str) -> list[str]:
    text = source.line_text(span.line).expandtabs(1)
    if not text and span.line > len(source.text.splitlines()):
        return []
    number = str(source.where(span.line)[1])
    gutter = " " * len(number)
    last = span.end_column if span.end_line == span.line else len(text)
    width = max(1, last - span.column + 1)
    return [
        f"{indent}{number} | {text}",
        f"{indent}{gutter} | {' ' * (span.column - 1)}{'^' * width}",
    ]


def _where(source: Source, span: Span) -> str:
    path, line = source.where(span.line)
    return f"{path}:{line}:{span.column}"


def render(diagnostic: Diagnostic, source: Source) -> str:
    """The diagnostic as the text a user reads on stderr (no trailing newline)."""
    where = source.path
    if diagnostic.span is not None:
        where = _where(source, diagnostic.span)
    lines = [f"{where}: {diagnostic.severity}[{diagnostic.code}]: {diagnostic.message}"]
    if diagnostic.span is not None:
        lines += _excerpt(source, diagnostic.span, "  ")
    for note in diagnostic.notes:
        if note.span is None:
            lines.append(f"  note: {note.message}")
        else:
            where = _where(source, note.span)
            lines.append(f"  {where}: note: {note.message}")
            lines += _excerpt(source, note.span, "    ")
    return "\n".join(lines)


def render_all(diagnostics: list[Diagnostic], source: Source) -> str:
    return "\n".join(render(d, source) for d in sort_diagnostics(diagnostics))
