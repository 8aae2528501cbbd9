"""The exception tree. Every error overlog raises derives from OverlogError::

    OverlogError
     +-- CompileError            a program was rejected; carries diagnostics with spans
     |    +-- ParseError         lexical and syntax errors (codes E1xx)
     |    +-- SemanticError      analysis errors (codes E2xx)
     +-- OverlogRuntimeError     a failure while running
          +-- StepError          a step failed and was rolled back (codes E3xx); carries step,
          |                      rule, binding and the quarantined inputs
          +-- DeliveryError      a delivered tuple was refused (unknown relation, wrong arity
                                 or value type); also a ValueError
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


class StepError(OverlogRuntimeError):
    """A timestep failed and was rolled back; ``quarantined`` lists the inputs removed from it
    as ``(kind, relation, row)`` with kind "event", "insert" or "delete"; the next step
    receives each as an ``error[...]`` event. ``dropped`` names the rule without positive
    atoms that failed the first step and is taken out of the program for good, if that
    was what failed."""

    def __init__(self, code: str, message: str, *, step: int, time: float,
                 path: str = "<input>", rule: str | None = None, span: object = None,
                 binding: dict | None = None,
                 quarantined: tuple[tuple[str, str, tuple], ...] = (),
                 expression: str | None = None, dropped: str | None = None) -> None:
        self.code = code
        self.message = message
        self.step = step
        self.time = time
        self.path = path
        self.rule = rule
        self.span = span
        self.binding = dict(binding or {})
        self.quarantined = quarantined
        self.expression = expression
        self.dropped = dropped
        super().__init__(message)

    def __str__(self) -> str:
        return self.render()

    def render(self) -> str:
        where = self.path
        if self.span is not None:
            where += f":{self.span.line}:{self.span.column}"  # type: ignore[attr-defined]
        text = f"{where}: error[{self.code}]: step {self.step} (time {self.time:g}): {self.message}"
        if self.rule:
            text += f"\n  in rule {self.rule}"
            if self.expression:
                text += f", at `{self.expression}`"
        from overlog.printer import format_tuple, format_value

        if self.binding:
            shown = ", ".join(f"{k}={format_value(v)}" for k, v in sorted(self.binding.items())
                              if not k.startswith("_"))
            text += f"\n  binding: {shown}"
        for kind, relation, row in self.quarantined:
            shown = format_tuple(relation, row, event=kind == "event")
            text += f"\n  quarantined input: {'delete ' if kind == 'delete' else ''}{shown}"
        if self.dropped:
            text += f"\n  dropped for good: rule {self.dropped} (it has no positive atom)"
        return text


class DeliveryError(OverlogRuntimeError, ValueError):
    """``Engine.deliver`` refused a tuple: the program has no such relation (or it is built
    in), the row has the wrong number of fields, or a value is not an Overlog value."""
