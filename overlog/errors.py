"""The exception tree. Every error overlog raises derives from OverlogError::

    OverlogError
     +-- CompileError            a program was rejected; carries diagnostics with spans
     |    +-- ParseError         lexical and syntax errors (codes E1xx)
     |    +-- SemanticError      analysis errors (codes E2xx)
     +-- OverlogRuntimeError     a failure while running (codes E3xx); carries step, rule, binding
"""

from __future__ import annotations

from overlog.diagnostics import Diagnostic, render_all, sort_diagnostics
from overlog.source import Source


class OverlogError(Exception):
    """Base of every error raised by overlog."""


class CompileError(OverlogError):
    """A program was rejected. ``diagnostics`` holds every error found (and any warnings)."""

    def __init__(self, diagnostics: list[Diagnostic], source: Source) -> None:
        self.diagnostics = sort_diagnostics(diagnostics)
        self.source = source
        super().__init__(self.render())

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]

    def render(self) -> str:
        return render_all(self.diagnostics, self.source)


class ParseError(CompileError):
    """The text is not a well-formed Overlog program."""


class SemanticError(CompileError):
    """The program is well-formed but breaks a rule of the language."""


class OverlogRuntimeError(OverlogError):
    """A failure while running a program."""
