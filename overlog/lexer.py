"""A Pygments lexer for Overlog: the canonical dialect, P2's and JOL's (docs/highlighting.md).

``OverlogLexer`` is registered under the ``pygments.lexers`` entry point, so
``pygmentize -l overlog prog.olg``, Sphinx's ``code-block:: overlog`` and Jupyter find it
once the package is installed. It imports nothing of the engine, only Pygments: it reads a
program's words as the grammar (overlog/grammar.lark) and the dialects' front ends do,
without parsing it.

- Comments: ``//``, nesting ``/* */``, P2's ``%%`` and a first line ``#!``. P2's
  preprocessor lines (``#define``, ``#include "file"``, ...) are ``Comment.Preproc``.
- Keywords: ``materialize``, ``keys``, ``watch``, ``delete``, ``notin``; P2's ``watchmod``;
  JOL's ``program``, ``import``, ``define``, ``timer``, ``public`` (and ``async``, which
  the engine refuses). The words a relation may also be named (``watchmod``, ``define``,
  ``timer``, ``keys``) are keywords only in their statements' shapes. ``true``, ``false``,
  ``null``, ``infinity`` are ``Keyword.Constant``; ``in`` is ``Operator.Word``.
- Names: a name before ``(`` or ``[`` is a relation (``Name.Function``), as is the name a
  declaration declares; a rule's name before its head is a ``Name.Label``; a capitalized
  name or ``_...`` is a ``Name.Variable``, another name a ``Name``. Functions ``f_...``,
  aggregates (``min<X>``, ``count<*>``, ``topk<X, 2>``, P2's ``a_MIN<X>`` in any case) and
  the built-in relations ``periodic``, ``error``, ``registerNativeEventHandler`` are
  ``Name.Builtin``; a location ``@X`` is a ``Name.Decorator``; key types (``keys(1:str)``)
  and JOL's column types (``{String, Integer}``) are ``Keyword.Type``.
- What the language has no place for (a lone ``=``, an escape such as ``\\d``, a string not
  closed on its line) is an ``Error``.
"""

from __future__ import annotations

import re

from pygments.lexer import RegexLexer, bygroups, default, include, words
from pygments.token import (
    Comment,
    Error,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Whitespace,
)

__all__ = ["OverlogLexer"]

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
# what follows an aggregate's name: <*>, <X>, <@X>, <X, 3>
_AGGREGATE = (r"(?i:(?:a_)?(?:countdistinct|count|sum|min|max|avg|set|list|topk|bottomk))"
              rf"(?=\s*<\s*(?:\*|@?\s*{_NAME})\s*(?:,\s*[0-9]+\s*)?>)")
_KEY_TYPES = ("int32", "int64", "uint32", "uint64", "int", "long", "double", "float", "string",
              "str", "ipv4", "bool", "list")
_NOTHING = bygroups()  # the action of a zero-width match: no token
_DECLARED = bygroups(Keyword, Whitespace, Punctuation, Whitespace, Name.Function)
_PRAGMA = re.compile(r"^[ \t]*(?://|%%|/\*)[ \t]*dialect[ \t]*[:=][ \t]*(?:canonical|p2|jol)\b",
                     re.I | re.M)
# statements only Overlog has: materialize(name, ..., keys(...)), watch(name).
_STATEMENT = re.compile(rf"\bmaterialize\s*\(\s*{_NAME}\s*,[^()]*,\s*keys\s*\("
                        rf"|^[ \t]*watch\s*\(\s*{_NAME}\s*\)\s*[.;]", re.M)


class OverlogLexer(RegexLexer):
    """Overlog programs (``.olg``), in any of the engine's dialects."""

    name = "Overlog"
    aliases = ["overlog", "olg"]  # noqa: RUF012 (Pygments reads these class attributes)
    filenames = ["*.olg"]  # noqa: RUF012
    mimetypes = ["text/x-overlog"]  # noqa: RUF012
    url = "https://p2.berkeley.intel-research.net/"
    flags = re.MULTILINE

    tokens = {  # noqa: RUF012
        # where a statement may start: declarations, a rule's name, directives
        "root": [
            (r"\A#!.*", Comment.Hashbang),
            (r'^([ \t]*)(#[ \t]*include)([ \t]*)("[^"\n]*"|<[^>\n]*>)',
             bygroups(Whitespace, Comment.Preproc, Whitespace, Comment.PreprocFile),
             "directive"),
            (r'^([ \t]*)(#(?:[ \t]*[^\s/%"]+)*)', bygroups(Whitespace, Comment.Preproc),
             "directive"),
            include("space"),
            (rf"(program)(\s+)({_NAME}(?:::?{_NAME})*)(?=\s*;)",
             bygroups(Keyword.Namespace, Whitespace, Name.Namespace)),
            (r"(import)(\s+)([A-Za-z0-9_.*]+)(?=\s*;)",
             bygroups(Keyword.Namespace, Whitespace, Name.Namespace)),
            (rf"(materialize)(\s*)(\()(\s*)({_NAME})", _DECLARED, "declaration"),
            (rf"(define)(\s*)(\()(\s*)({_NAME})(?=\s*,\s*(?:keys\s*\(|\{{))", _DECLARED,
             "declaration"),
            (rf"(timer)(\s*)(\()(\s*)({_NAME})(\s*)(,)(\s*)(physical|logical)\b",
             bygroups(Keyword, Whitespace, Punctuation, Whitespace, Name.Function, Whitespace,
                      Punctuation, Whitespace, Keyword.Pseudo)),
            (rf'(watchmod)(\s*)(\()(\s*)({_NAME})(?=\s*,\s*")', _DECLARED),
            (rf"(watch)(\s*)(\()(\s*)({_NAME})", _DECLARED),
            (r"(public|async|delete)(?=\s+[A-Za-z_])", Keyword),
            # a rule's name: a word before its head (in JOL, often on the line before)
            (rf"{_NAME}(?=\s+(?:(?:public|delete)\s+)?(?!(?:in|notin|delete|public)\b)"
             rf"{_NAME}\s*[(\[])", Name.Label),
            (r"[.;]", Punctuation),
            default("statement"),
        ],
        # the rest of a statement, to its `.` (`;` in JOL)
        "statement": [
            (r"(?=[.;])", _NOTHING, "#pop"),
            (r"^(?=[ \t]*#)", _NOTHING, "#pop"),  # a directive line
            include("space"),
            include("terms"),
        ],
        # materialize(name, ... and define(name, ...: the rest, to the closing `)`
        "declaration": [
            (r"(?=[.;])", _NOTHING, "#pop:100"),  # (not closed: the statement ends here)
            include("space"),
            (r"keys(?=\s*\()", Keyword),
            (r"\(", Punctuation, "#push"),
            (r"\)", Punctuation, "#pop"),
            include("terms"),
        ],
        "space": [
            (r"\s*\n", Whitespace),  # (up to a line's end: a directive may start the next)
            (r"[^\S\n]+", Whitespace),
            (r"//.*", Comment.Single),
            (r"%%.*", Comment.Single),
            (r"/\*", Comment.Multiline, "comment"),
        ],
        "terms": [
            (r'"[^"\\\n]*"', String.Double),
            (r'"(?=(?:[^"\\\n]|\\.)*")', String.Double, "string"),
            (r'"[^\n]*', Error),  # a string not closed on its line
            (r"0[xX][0-9a-fA-F]+I?", Number.Hex),
            (r"[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+", Number.Float),
            (r"[0-9]+[lL]\b", Number.Integer.Long),
            (r"[0-9]+", Number.Integer),
            (words(("true", "false", "null", "infinity"), suffix=r"\b"), Keyword.Constant),
            (words(("delete", "notin"), suffix=r"\b"), Keyword),
            (r"in\b", Operator.Word),
            (words(("periodic", "error", "registerNativeEventHandler"), suffix=r"(?=\s*[(\[])"),
             Name.Builtin),
            (r"f_[A-Za-z0-9_]*(?=\s*\()", Name.Builtin),
            (_AGGREGATE, Name.Builtin, "aggregate"),
            (rf"(:)(\s*)({'|'.join(_KEY_TYPES)})\b",
             bygroups(Punctuation, Whitespace, Keyword.Type)),
            (rf"@(?!f_){_NAME}", Name.Decorator),
            (r"@", Name.Decorator),
            (rf"{_NAME}(?=\s*[(\[])", Name.Function),
            include("names"),
            (r":-|:=|==|!=|<=|>=|<<|>>|&&|\|\||[<>!+\-*/%]", Operator),
            (r"\{", Punctuation, "types"),
            (r"[()\[\],:}]", Punctuation),
        ],
        "names": [
            (r"[A-Z_][A-Za-z0-9_]*", Name.Variable),
            (r"[a-z][A-Za-z0-9_]*", Name),
        ],
        # <*>, <X>, <@X>, <X, 3> after an aggregate's name (whose lookahead saw the shape)
        "aggregate": [
            (r"\s+", Whitespace),
            (r"<", Punctuation),
            (r"\*", Operator),
            (rf"@{_NAME}", Name.Decorator),
            (r"@", Name.Decorator),
            include("names"),
            (r",", Punctuation),
            (r"[0-9]+", Number.Integer),
            (r">", Punctuation, "#pop"),
        ],
        # JOL's column types: {String, Integer}
        "types": [
            (r"(?=[.;)])", _NOTHING, "#pop"),
            include("space"),
            (r"[A-Za-z_][A-Za-z0-9_.]*", Keyword.Type),
            (r",", Punctuation),
            (r"\}", Punctuation, "#pop"),
        ],
        "string": [
            (r'[^"\\\n]+', String.Double),
            (r"""\\(?:[ntr0"'\\]|u[0-9a-fA-F]{4})""", String.Escape),
            (r"\\.", Error),  # an escape the language does not have (E104)
            (r'"', String.Double, "#pop"),
        ],
        "comment": [
            (r"[^*/]+", Comment.Multiline),
            (r"/\*", Comment.Multiline, "#push"),
            (r"\*/", Comment.Multiline, "#pop"),
            (r"[*/]", Comment.Multiline),
        ],
        # the rest of a directive's line, where a comment may end it
        "directive": [
            (r"\n", Whitespace, "#pop"),
            (r"[^\S\n]+", Whitespace),
            (r"//.*|%%.*", Comment.Single),
            (r"/\*", Comment.Multiline, "comment"),
            (r'"(?:[^"\\\n]|\\.)*"?', Comment.Preproc),
            (r'[^\s/%"]+(?:[ \t]+[^\s/%"]+)*', Comment.Preproc),
            (r"[/%]", Comment.Preproc),
        ],
    }

    def analyse_text(text: str) -> float:  # type: ignore[misc]
        """For ``pygments.lexers.guess_lexer``: sure of a dialect pragma (``// dialect:
        p2``), fairly sure of a ``materialize(name, ..., keys(...))`` or ``watch(name)``."""
        if _PRAGMA.search(text):
            return 1.0
        return 0.6 if _STATEMENT.search(text) else 0.0
