"""The C preprocessor subset P2 programs use (docs/dialects.md, "Preprocessor").

P2 ran every program through ``cpp -P``; its programs use object-like macros and a few
directives. This module does that much, line by line, keeping lines where they were:

- ``#define NAME value`` and ``#undef NAME``; ``NAME`` is then replaced, as a whole word
  outside strings and comments, by ``value`` (itself expanded). Definitions given from
  outside (``--define NAME=VALUE``, cpp's ``-D``) come first; as in cpp, a ``#define``
  replaces one (with a warning, W206).
- ``#include "file"`` (or ``<file>``), relative to the including file's folder.
- ``#ifdef NAME``, ``#ifndef NAME``, ``#else``, ``#endif``.
- A first line starting ``#!`` is blanked, and comments (P2's ``%%`` line comments too)
  before anything else.

Directive lines and skipped lines become empty lines, so a line of a program without
``#include`` keeps its number. The result's ``origins`` say, for each of its lines, the
file and line it came from; diagnostics report those, with the line as expanded.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from overlog.diagnostics import Diagnostic, Note
from overlog.parser import strip_comments
from overlog.source import Source, Span, UnreadableSource

MAX_INCLUDE_DEPTH = 20
_DIRECTIVE = re.compile(r"[ \t]*#[ \t]*([A-Za-z_]\w*)?(.*)")
_DEFINE = re.compile(r"([A-Za-z_]\w*)(\()?[ \t]*(.*?)[ \t]*")
_INCLUDE = re.compile(r'[ \t]*(?:"([^"]+)"|<([^>]+)>)[ \t]*')
_NAME_ONLY = re.compile(r"[ \t]*([A-Za-z_]\w*)[ \t]*")
# what macro replacement skips or takes: strings, words
_PIECES = re.compile(r'"(?:[^"\\\n]|\\.)*"?|[A-Za-z_]\w*')


class PreprocessError(Exception):
    """A directive the preprocessor cannot follow; ``diagnostic`` says where and why in
    ``source`` (the file it is in)."""

    def __init__(self, diagnostic: Diagnostic, source: Source) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic
        self.source = source


@dataclass(frozen=True, slots=True)
class Preprocessed:
    text: str
    origins: tuple[tuple[str, int], ...]  # per line of ``text``: (file, line) it came from
    macros: dict[str, str]  # the definitions at the end (``--define`` ones included)
    warnings: tuple[Diagnostic, ...] = ()  # (W206)


def preprocess(text: str, path: str, defines: Mapping[str, str] | None = None,
               read: Callable[[str], str] | None = None) -> Preprocessed:
    """Expand ``text`` (read from ``path``). ``read(path)`` reads an included file (by
    default as UTF-8 text); a directive that cannot be followed raises PreprocessError."""
    state = _State(dict(defines or {}), read or _read_file)
    out: list[str] = []
    origins: list[tuple[str, int]] = []
    state.run(text, path, out, origins, depth=0)
    return Preprocessed("\n".join(out), tuple(origins), state.macros, tuple(state.warnings))


def _read_file(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


class _State:
    def __init__(self, macros: dict[str, str], read: Callable[[str], str]) -> None:
        self.macros = macros
        self.given = dict(macros)  # from outside (--define): a #define replacing one warns
        self.read = read
        self.warnings: list[Diagnostic] = []

    def run(self, text: str, path: str, out: list[str], origins: list[tuple[str, int]],
            depth: int) -> None:
        conditions: list[tuple[bool, bool, int]] = []  # (active, seen #else, line) per #if
        if text.startswith("#!"):
            text = text[text.find("\n"):] if "\n" in text else ""
        lines = strip_comments(Source(text, path), percent=True).split("\n")
        for number, line in enumerate(lines, start=1):
            active = all(on for on, _, _ in conditions)
            directive = _DIRECTIVE.fullmatch(line.rstrip("\r")) \
                if line.lstrip().startswith("#") else None
            if directive is None:
                out.append(self.expand(line) if active else "")
                origins.append((path, number))
                continue
            name, rest = directive.group(1) or "", directive.group(2)
            span = Span(number, 1, number, max(1, len(line)))

            def fail(message: str, *notes: Note, span: Span = span) -> PreprocessError:
                return PreprocessError(Diagnostic("E108", message, span, notes=notes),
                                       Source(text, path))

            if not active and name in ("if", "ifdef", "ifndef"):
                conditions.append((False, False, number))  # (nested in a skipped part)
            elif name in ("ifdef", "ifndef"):
                found = _NAME_ONLY.fullmatch(rest)
                if found is None:
                    raise fail(f"`#{name}` takes one macro name")
                defined = found.group(1) in self.macros
                conditions.append((defined if name == "ifdef" else not defined, False, number))
            elif name == "else":
                if not conditions or conditions[-1][1]:
                    raise fail("`#else` without `#ifdef` or `#ifndef`" if not conditions
                               else "a second `#else` for one `#ifdef`")
                on, _, start = conditions[-1]
                conditions[-1] = (not on, True, start)
            elif name == "endif":
                if not conditions:
                    raise fail("`#endif` without `#ifdef` or `#ifndef`")
                conditions.pop()
            elif not active:
                pass  # other directives in a skipped part are skipped with it
            elif name == "define":
                found = _DEFINE.fullmatch(rest.strip())
                if found is None:
                    raise fail("`#define` takes a name and a value: `#define NAME value`")
                macro, function_like, value = found.groups()
                if function_like:
                    raise fail(f"`#define {macro}(...)`: macros with arguments are not "
                               "supported", Note("define a value (`#define NAME value`), or "
                                                 "write a function in Python (functions=)"))
                if macro in self.given and self.macros.get(macro) != value:
                    self.warnings.append(Diagnostic(
                        "W206", f"`#define {macro}` ({os.path.basename(path)}, line {number}) "
                        f"replaces `--define {macro}={self.given[macro]}`, as cpp does",
                        severity="warning",
                        notes=(Note(f"wrap it in `#ifndef {macro}` ... `#endif` to let the "
                                    "command line decide"),)))
                self.macros[macro] = value
            elif name == "undef":
                found = _NAME_ONLY.fullmatch(rest)
                if found is None:
                    raise fail("`#undef` takes one macro name")
                self.macros.pop(found.group(1), None)
            elif name == "include":
                found = _INCLUDE.fullmatch(rest)
                if found is None:
                    raise fail('`#include` takes a file name: `#include "file.olg"`')
                target = os.path.join(os.path.dirname(path), found.group(1) or found.group(2))
                if depth >= MAX_INCLUDE_DEPTH:
                    raise fail(f"`#include` nested more than {MAX_INCLUDE_DEPTH} deep (does a "
                               "file include itself?)")
                try:
                    included = self.read(target)
                except (OSError, UnicodeDecodeError, UnreadableSource) as error:
                    reason = error.strerror if isinstance(error, OSError) else \
                        "not UTF-8 text" if isinstance(error, UnicodeDecodeError) else \
                        str(error).partition(": ")[2]
                    raise fail(f"cannot include {target}: {reason}") from None
                out.append("")  # the directive's own line
                origins.append((path, number))
                self.run(included, target, out, origins, depth + 1)
                continue
            else:
                raise fail(f"`#{name}` is not supported" if name else "a `#` line that is no "
                           "directive", Note("supported: #define, #undef, #include, #ifdef, "
                                             "#ifndef, #else, #endif"))
            out.append("")
            origins.append((path, number))
        if conditions:
            start = conditions[-1][2]
            raise PreprocessError(Diagnostic(
                "E108", "`#ifdef` or `#ifndef` without `#endif`", Span(start, 1, start, 1)),
                Source(text, path))

    def expand(self, line: str, seen: frozenset[str] = frozenset()) -> str:
        """The line with each macro replaced (recursively, each at most once on a path, as
        cpp does); strings left alone."""
        if not self.macros:
            return line
        return _PIECES.sub(lambda found: self.expand(self.macros[found.group()],
                                                     seen | {found.group()})
                           if found.group() in self.macros and found.group() not in seen
                           else found.group(), line)
