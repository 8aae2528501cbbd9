"""Text -> AST. ``parse(text, path) -> Program``; raises ParseError with a located diagnostic."""

from __future__ import annotations

import math
import re
from functools import cache
from importlib import resources

from lark import Lark, Token, Transformer_NonRecursive, v_args
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)

from overlog import syntax as s
from overlog.diagnostics import Diagnostic, Note
from overlog.errors import ParseError
from overlog.limits import MAX_INT_DIGITS, MAX_NESTING, int_from_text
from overlog.source import Source, Span

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", '"': '"', "\\": "\\", "'": "'"}


@cache
def _lark() -> Lark:
    grammar = resources.files("overlog").joinpath("grammar.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True)


def parse(text: str, path: str = "<input>", fast_facts: bool = True) -> s.Program:
    """Parse an Overlog program. Raises ParseError (one diagnostic: the first syntax error).

    A line holding just a fact of literals (``link("a", "b", 3).``) is read directly, not by
    the LALR parser (10 MB of facts would take minutes): the same nodes, with the same spans.
    ``fast_facts=False`` parses everything with lark (tests compare the two)."""
    source = Source(text, path)
    stripped = strip_comments(source)
    facts: list[s.Fact] = []
    if fast_facts:
        stripped, facts = _take_facts(stripped)
    try:
        tree = _lark().parse(stripped)
    except UnexpectedInput as error:
        raise ParseError([_syntax_diagnostic(error, stripped)], source) from None
    try:
        statements = _ToAst().transform(tree)
    except VisitError as error:
        if isinstance(error.orig_exc, _LiteralError):
            raise ParseError([error.orig_exc.diagnostic], source) from None
        raise
    if facts:  # in source order: no statement shares a line with a fact read directly
        statements = sorted([*statements, *facts],
                            key=lambda st: (st.span.line, st.span.column))  # type: ignore
    too_deep = _too_deep(statements)
    if too_deep is not None:
        raise ParseError([Diagnostic(
            "E105", f"terms nested more than {MAX_NESTING:,} deep (the limit)", too_deep.span,
            notes=(Note("split the expression with assignments: `T := ...`"),))], source)
    return s.Program(statements=tuple(statements), path=path)


_TERMS = (s.Var, s.Wildcard, s.Const, s.Call, s.BinOp, s.Neg, s.ListExpr, s.Agg)


def _too_deep(statements: list[s.Statement]) -> s.Term | None:
    """The first term nested deeper than MAX_NESTING (counted without recursion)."""
    stack: list[tuple[object, int]] = [
        (statement, 0) for statement in reversed(statements)
        if not (isinstance(statement, s.Fact)  # a fact of literals: nothing nested
                and all(type(a) is s.Const for a in statement.atom.args))]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, _TERMS):
            depth += 1
            if depth > MAX_NESTING:
                return node  # type: ignore[return-value]
        stack.extend((child, depth) for child in reversed(list(s.children(node))))
    return None


# --- facts read directly ------------------------------------------------------------------------

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_FACT_HEAD = re.compile(rf"[ \t\r\f\v]*({_NAME})[ \t\r\f\v]*([(\[])")
_ARGUMENT = re.compile(
    r"[ \t\r\f\v]*(@[ \t\r\f\v]*)?"
    r"(?:(-[ \t\r\f\v]*)?(?:([0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)"
    r"|([0-9]+)|(infinity)(?![A-Za-z0-9_]))"
    r"|(\"[^\"\\\n]*\")|(true|false|null)(?![A-Za-z0-9_]))"
    r"[ \t\r\f\v]*([,)\]])")
_EMPTY = {close: re.compile(rf"[ \t\r\f\v]*\{close}") for close in ")]"}
_FACT_END = re.compile(r"[ \t\r\f\v]*\.[ \t\r\f\v]*")
_KEYWORDS = {"true", "false", "null", "infinity", "notin", "delete", "materialize", "watch",
             "keys"}
_LITERAL_WORDS = {"true": True, "false": False, "null": None}
_STRINGS = re.compile(r'"([^"\\\n]|\\.)*"')
_TERMINATOR = re.compile(r"(?<![0-9])\.|\.(?![0-9])")


def _take_facts(text: str) -> tuple[str, list[s.Fact]]:
    """The facts standing alone on a line, read directly, and the text with those lines
    blanked (so every other position stays where it was)."""
    lines = text.split("\n")
    facts = []
    open_statement = False  # the text so far ends inside a statement
    for number, line in enumerate(lines, start=1):
        fact = None if open_statement else _fact(line, number)
        if fact is not None:
            facts.append(fact)
            lines[number - 1] = " " * len(line)
            continue
        unquoted = _STRINGS.sub(lambda m: "x" * len(m.group()), line)
        ends = [m.end() for m in _TERMINATOR.finditer(unquoted)]
        rest = unquoted[ends[-1]:] if ends else unquoted
        open_statement = bool(rest.strip()) or (open_statement and not ends)
    return "\n".join(lines), facts


def _fact(line: str, number: int) -> s.Fact | None:
    """The fact a line holds, if it is one fact of literals and nothing else."""
    head = _FACT_HEAD.match(line)
    if head is None or head.group(1) in _KEYWORDS or head.group(1).startswith("f_"):
        return None
    event = head.group(2) == "["
    close = "]" if event else ")"
    args: list[s.Term] = []
    locs: list[int] = []
    position = head.end()
    if (empty := _EMPTY[close].match(line, position)) is not None:
        position = empty.end()
    else:
        while True:
            found = _ARGUMENT.match(line, position)
            if found is None:
                return None
            term = _literal(found, number)
            if term is None:
                return None
            if found.group(1):
                locs.append(len(args))
            args.append(term)
            position = found.end()
            if found.group(8) != ",":
                if found.group(8) != close:
                    return None
                break
    end = _FACT_END.fullmatch(line, position)
    if end is None:
        return None
    start = head.start(1) + 1
    atom = s.Atom(name=head.group(1), args=tuple(args), event=event, locs=tuple(locs),
                  span=Span(number, start, number, position))
    dot = line.index(".", position) + 1
    return s.Fact(atom=atom, span=Span(number, start, number, dot))


def _literal(found: re.Match, number: int) -> s.Const | None:
    _, minus, real, integer, _, string, word, _ = found.groups()
    if integer is not None:
        if len(integer) > MAX_INT_DIGITS:
            return None  # the parser reports it
        value: object = int(integer) if len(integer) < 4000 else int_from_text(integer)
        group = 4
    elif string is not None:
        if "\\" in string:
            return None  # escapes: the parser reads them (and reports bad ones)
        value, group = string[1:-1], 6
    elif real is not None:
        value, group = float(real), 3
    elif word is not None:
        value, group = _LITERAL_WORDS[word], 7
    else:
        value, group = math.inf, 5
    if minus:
        value = -value  # type: ignore[operator]
    first = found.start(2) if minus else found.start(group)
    return s.Const(value=value, span=Span(number, first + 1, number, found.end(group)))


# --- comments ---------------------------------------------------------------------------------


def strip_comments(source: Source) -> str:
    """Blank out ``//`` and (nestable) ``/* */`` comments, keeping every line and column."""
    text = source.text
    out: list[str] | None = None  # made on the first comment
    i, n = 0, len(text)
    while i < n:
        found = _COMMENT_OR_STRING.search(text, i)
        if found is None:
            break
        i = found.start()
        if out is None:
            out = list(text)
        if found.group() == '"':  # skip a string literal; the lexer reports it if unterminated
            i = _STRING_BODY.match(text, i + 1).end() + 1  # type: ignore[union-attr]
        elif found.group() == "//":
            end = text.find("\n", i)
            end = n if end < 0 else end
            out[i:end] = " " * (end - i)
            i = end
        else:
            start, depth = i, 0
            while i < n:
                if text.startswith("/*", i):
                    depth += 1
                    out[i] = out[i + 1] = " "
                    i += 2
                elif text.startswith("*/", i):
                    depth -= 1
                    out[i] = out[i + 1] = " "
                    i += 2
                    if depth == 0:
                        break
                else:
                    if text[i] != "\n":
                        out[i] = " "
                    i += 1
            if depth:
                line = text.count("\n", 0, start) + 1
                column = start - (text.rfind("\n", 0, start) + 1) + 1
                span = Span(line, column, line, column + 1)
                diagnostic = Diagnostic("E103", "unterminated comment: `/*` without matching `*/`",
                                        span)
                raise ParseError([diagnostic], source)
    return text if out is None else "".join(out)


_COMMENT_OR_STRING = re.compile(r'"|//|/\*')
_STRING_BODY = re.compile(r'(?:[^"\\\n]|\\[\s\S])*')


# --- syntax errors ----------------------------------------------------------------------------

_WORDS = {
    "NAME": "a name",
    "FUNC": "a function call",
    "INT": "an integer",
    "FLOAT": "a number",
    "STRING": "a string",
    "CMP_OP": "a comparison (==, !=, <, <=, >, >=)",
    "ADD_OP": "an operator",
    "MUL_OP": "an operator",
    "STAR": "`*`",
    "DELETE": "`delete`",
    "$END": "end of file",
}
_EXPRESSION_STARTS = {"NAME", "FUNC", "INT", "FLOAT", "STRING", "TRUE", "FALSE", "NULL",
                      "INFINITY", "MINUS", "LSQB", "LPAR"}


def _describe(name: str) -> str:
    if name in _WORDS:
        return _WORDS[name]
    try:
        pattern = _lark().get_terminal(name).pattern
    except KeyError:
        return name.lower()
    return f"`{pattern.value}`"


def _expected(names: set[str]) -> str:
    names = set(names)
    words = []
    if len(names & _EXPRESSION_STARTS) >= 6:
        names -= _EXPRESSION_STARTS
        words.append("an atom, an expression" if "NOTIN" in names else "an expression")
    if {"ADD_OP", "MUL_OP"} <= names:
        names -= {"ADD_OP", "MUL_OP"}
        words.append("an arithmetic operator")
    words += sorted({_describe(n) for n in names})
    if not words:
        return ""
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def _token_words(token: Token) -> str:
    if token.type == "$END":
        return "end of file"
    return f"`{token.value}`"


def _syntax_diagnostic(error: UnexpectedInput, text: str) -> Diagnostic:
    line, column = error.line, error.column
    if isinstance(error, UnexpectedToken) and error.token.type == "$END" and line >= 1:
        # lark places the end of input on the last token: point just past it
        line, column = error.token.end_line, error.token.end_column
    elif line < 1:
        line, column = text.count("\n") + 1, 1
    if isinstance(error, UnexpectedCharacters):
        char = text[error.pos_in_stream]
        span = Span(line, column, line, column)
        if char == '"':
            return Diagnostic("E102", "unterminated string: missing closing `\"` on this line",
                              span)
        notes = ()
        if char == "=":
            notes = (Note("write `==` to compare or `:=` to assign"),)
        return Diagnostic("E102", f"unexpected character `{char}`", span, notes=notes)
    if isinstance(error, UnexpectedToken):
        token = error.token
        width = max(1, len(str(token.value))) if token.type != "$END" else 1
        span = Span(line, column, line, column + width - 1)
        expected = _expected(error.accepts or error.expected)
        message = f"unexpected {_token_words(token)}"
        if expected:
            message += f"; expected {expected}"
        notes = ()
        previous = error.token_history[-1] if error.token_history else None
        if token.type == "LPAR" and previous is not None and previous.type == "NAME":
            notes = (Note(f"function names start with `f_`: `{previous.value}` is not a "
                          "function here"),)
        elif token.type == "$END":
            notes = (Note("every rule, fact and declaration ends with `.`"),)
        return Diagnostic("E101", message, span, notes=notes)
    assert isinstance(error, UnexpectedEOF)
    span = Span(line, column, line, column)
    return Diagnostic("E101", "unexpected end of file", span)


# --- tree -> AST ------------------------------------------------------------------------------


class _LiteralError(Exception):
    def __init__(self, diagnostic: Diagnostic) -> None:
        self.diagnostic = diagnostic


def _span(meta: object) -> Span | None:
    if getattr(meta, "empty", True):
        return None
    return Span(meta.line, meta.column, meta.end_line, meta.end_column - 1)  # type: ignore[attr-defined]


def _token_span(token: Token) -> Span:
    return Span(token.line, token.column, token.end_line, token.end_column - 1)


def _unescape(token: Token) -> str:
    body = token.value[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt == "u" and _is_hex(body[i + 2 : i + 6]):
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        else:
            column = token.column + 1 + i
            span = Span(token.line, column, token.line, column + 1)
            raise _LiteralError(Diagnostic(
                "E104", f"unknown escape `\\{nxt}` in string", span,
                notes=(Note("known escapes: \\n \\t \\r \\0 \\\" \\' \\\\ and \\uXXXX"),)))
    return "".join(out)


def _is_hex(text: str) -> bool:
    return len(text) == 4 and all(c in "0123456789abcdefABCDEF" for c in text)


def _int(token: Token) -> int:
    """An integer literal's value; one longer than MAX_INT_DIGITS is refused (E106)."""
    if len(token.value) > MAX_INT_DIGITS:
        raise _LiteralError(Diagnostic(
            "E106", f"integer literal of {len(token.value):,} digits (the limit is "
            f"{MAX_INT_DIGITS:,})", _token_span(token)))
    return int_from_text(token.value)


@v_args(meta=True)
class _ToAst(Transformer_NonRecursive):
    """Builds AST nodes; methods are named after grammar rules."""

    def start(self, meta, items):
        return items

    def rule(self, meta, items):
        name, delete, head, body = items
        return s.Rule(head=head, body=tuple(body), name=name.value if name else None,
                      delete=delete is not None, span=_span(meta))

    def fact(self, meta, items):
        return s.Fact(atom=items[0], span=_span(meta))

    def materialize(self, meta, items):
        name, lifetime, size, *keys = items
        return s.Materialize(name=name.value, lifetime=lifetime, size=size,
                             keys=tuple(_int(k) for k in keys if k is not None),
                             span=_span(meta))

    def watch(self, meta, items):
        return s.Watch(name=items[0].value, span=_span(meta))

    def body(self, meta, items):
        return items

    def negation(self, meta, items):
        return s.Negation(atom=items[0], span=_span(meta))

    def assign(self, meta, items):
        name, expr = items
        var = s.Var(name=name.value, span=_token_span(name))
        return s.Assign(var=var, expr=expr, span=_span(meta))

    def comparison(self, meta, items):
        left, op, right = items
        return s.Comparison(op=op.value, left=left, right=right, span=_span(meta))

    def _atom(self, meta, items, event: bool):
        name, args = items
        args = args or []
        locs = tuple(i for i, a in enumerate(args) if isinstance(a, _Located))
        args = tuple(a.term if isinstance(a, _Located) else a for a in args)
        return s.Atom(name=name.value, args=args, event=event, locs=locs, span=_span(meta))

    def persistent_atom(self, meta, items):
        return self._atom(meta, items, event=False)

    def event_atom(self, meta, items):
        return self._atom(meta, items, event=True)

    def args(self, meta, items):
        return items

    def exprs(self, meta, items):
        return items

    def located(self, meta, items):
        return _Located(items[0])

    def aggregate(self, meta, items):
        func, arg = items
        spelling = func.value
        canonical = spelling.lower()
        if canonical.startswith("a_"):
            canonical = canonical[2:]
        var = None if arg.type == "STAR" else s.Var(name=arg.value, span=_token_span(arg))
        return s.Agg(func=canonical, arg=var, spelling=spelling, span=_span(meta))

    def binop(self, meta, items):
        left, op, right = items
        return s.BinOp(op=op.value, left=left, right=right, span=_span(meta))

    def neg(self, meta, items):
        operand = items[0]
        span = _span(meta)
        if isinstance(operand, s.Const) and type(operand.value) in (int, float):
            return s.Const(value=-operand.value, span=span)
        return s.Neg(operand=operand, span=span)

    def var(self, meta, items):
        token = items[0]
        if token.value == "_":
            return s.Wildcard(span=_token_span(token))
        return s.Var(name=token.value, span=_token_span(token))

    def int(self, meta, items):
        return s.Const(value=_int(items[0]), span=_span(meta))

    def float(self, meta, items):
        return s.Const(value=float(items[0].value), span=_span(meta))

    def string(self, meta, items):
        return s.Const(value=_unescape(items[0]), span=_span(meta))

    def true(self, meta, items):
        return s.Const(value=True, span=_span(meta))

    def false(self, meta, items):
        return s.Const(value=False, span=_span(meta))

    def null(self, meta, items):
        return s.Const(value=None, span=_span(meta))

    def bound(self, meta, items):
        if not items:
            return math.inf
        token = items[0]
        return _int(token) if token.type == "INT" else float(token.value)

    def infinity(self, meta, items):
        return s.Const(value=math.inf, span=_span(meta))

    def call(self, meta, items):
        name, args = items
        return s.Call(name=name.value, args=tuple(args or ()), span=_span(meta))

    def list(self, meta, items):
        return s.ListExpr(items=tuple(items[0] or ()), span=_span(meta))


class _Located:
    __slots__ = ("term",)

    def __init__(self, term: s.Term) -> None:
        self.term = term
