"""Text -> AST. ``parse(text, path) -> Program``; raises ParseError with a located diagnostic."""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from dataclasses import replace
from functools import cache, lru_cache
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
from overlog.values import RingId

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", '"': '"', "\\": "\\", "'": "'"}


@cache
def _lark() -> Lark:
    grammar = resources.files("overlog").joinpath("grammar.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True,
                cache=_cache_file(grammar))


def _cache_file(grammar: str) -> str | bool:
    """Where lark keeps the parse tables it computed for this grammar (building them takes
    longer than checking a small program): a file in the user's own cache directory
    (``$XDG_CACHE_HOME/overlog`` or ``~/.cache/overlog``, made private), named by the
    grammar's and lark's versions; False (no cache) where that directory cannot be made.
    Not the shared temporary directory: lark's cache is a pickle, which another user must
    not be able to plant."""
    import hashlib
    import os

    import lark

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    directory = os.path.join(base, "overlog")
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        if os.stat(directory).st_uid != os.getuid():
            return False
    except (OSError, AttributeError):  # (no getuid: not a POSIX system)
        return False
    digest = hashlib.sha256(grammar.encode()).hexdigest()[:16]
    return os.path.join(directory, f"grammar-{lark.__version__}-{digest}.lark")


def parse(text: str, path: str = "<input>", fast_facts: bool = True,
          origins: tuple[tuple[str, int], ...] | None = None) -> s.Program:
    """Parse an Overlog program. Raises ParseError (one diagnostic: the first syntax error).

    A line holding just a fact of literals (``link("a", "b", 3).``) is read directly, not by
    the LALR parser (10 MB of facts would take minutes), and consecutive ones of a relation
    and shape make one FactRows: the same facts, with the same spans.
    ``fast_facts=False`` parses everything with lark (tests compare the two). ``origins``
    says where each line came from, for errors (see ``Source``)."""
    source = Source(text, path, origins)
    stripped = strip_comments(source)
    facts: list[s.FactRows] = []
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


_TERMS = (s.Var, s.Wildcard, s.Const, s.Call, s.BinOp, s.Neg, s.ListExpr, s.Agg, s.Logic, s.Not,
          s.InRange, s.Comparison)


def _too_deep(statements: list[s.Statement]) -> s.Term | None:
    """The first term nested deeper than MAX_NESTING (counted without recursion)."""
    stack: list[tuple[object, int]] = [
        (statement, 0) for statement in reversed(statements)
        if not isinstance(statement, s.FactRows)  # facts of literals: nothing nested
        and not (isinstance(statement, s.Fact) and statement.values_only)]
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


def _take_facts(text: str) -> tuple[str, list[s.FactRows]]:
    """The facts standing alone on a line, read directly (runs of one relation and shape as
    one FactRows), and the text with those lines blanked (so every other position stays
    where it was). Once two lines in a row have the same relation, shape and kinds of
    literal, a pattern made for that kind of line matches the next ones whole; any other
    line goes through ``_fact``."""
    lines = text.split("\n")
    runs: list[tuple[tuple, list[tuple], list[tuple[int, ...]]]] = []
    run = None  # the run the next fact line may extend
    pattern: _LinePattern | None = None  # for lines like the last two facts
    last = None  # (shape, kinds) of the last fact ``_fact`` read
    open_statement = False  # the text so far ends inside a statement
    for number, line in enumerate(lines, start=1):
        fact = None
        if not open_statement:
            if pattern is not None:
                fact = pattern.read(line, number)
            if fact is None:
                fact = _fact(line, number)
                like = None if fact is None else (fact[0], fact[3])
                pattern = (_line_pattern(*like[0][:3], like[1])
                           if like is not None and like == last else None)
                last = like
        if fact is not None:
            shape, row, place = fact[:3]
            if run is None or run[0] != shape:
                run = (shape, [], [])
                runs.append(run)
            run[1].append(row)
            run[2].append(place)
            lines[number - 1] = " " * len(line)
            continue
        if line and not line.isspace():
            run = None  # a statement between facts ends their run
        unquoted = _STRINGS.sub(lambda m: "x" * len(m.group()), line)
        ends = [m.end() for m in _TERMINATOR.finditer(unquoted)]
        rest = unquoted[ends[-1]:] if ends else unquoted
        open_statement = bool(rest.strip()) or (open_statement and not ends)
    facts = [s.FactRows(name=name, event=event, locs=locs, rows=tuple(rows),
                        places=tuple(places),
                        span=Span(places[0][0], places[0][1], places[0][0], places[0][3]))
             for (name, event, locs, _), rows, places in runs]
    return "\n".join(lines), facts


_BUILT_IN = {"periodic", "error", "registerNativeEventHandler"}  # facts the analysis inspects
# the group of _ARGUMENT that matched: the kind of literal
_REAL, _INTEGER, _INFINITY, _STRING, _WORD = 3, 4, 5, 6, 7


def _fact(line: str, number: int) -> tuple[tuple, tuple, tuple[int, ...], tuple[int, ...]] | None:
    """(shape, values, places, kinds) of the fact a line holds, if it is one fact of literals
    and nothing else (see FactRows); None otherwise, and for what the parser must report."""
    head = _FACT_HEAD.match(line)
    if head is None:
        return None
    name = head.group(1)
    if name in _KEYWORDS or name in _BUILT_IN or name.startswith("f_"):
        return None
    event = head.group(2) == "["
    close = "]" if event else ")"
    values: list[object] = []
    columns: list[int] = []
    kinds: list[int] = []
    locs: tuple[int, ...] = ()
    position = head.end()
    if (empty := _EMPTY[close].match(line, position)) is not None:
        position = empty.end()
    else:
        while True:
            found = _ARGUMENT.match(line, position)
            if found is None or not _literal(found, values, columns, kinds):
                return None
            if found.group(1):
                if locs or type(values[-1]) is not str:
                    return None  # two `@`, or one on a non-address: the analysis says so
                locs = (len(values) - 1,)
            position = found.end()
            if found.group(8) != ",":
                if found.group(8) != close:
                    return None
                break
    end = _FACT_END.fullmatch(line, position)
    if end is None:
        return None
    start = head.start(1) + 1
    dot = line.index(".", position) + 1
    return ((name, event, locs, len(values)), tuple(values),
            (number, start, position, dot, *columns), tuple(kinds))


def _literal(found: re.Match, values: list[object], columns: list[int],
             kinds: list[int]) -> bool:
    """Append the value an argument holds, its first and end column and its kind; False
    for one the parser must read (escapes) or report (too many digits)."""
    _, minus, real, integer, _, string, word, _ = found.groups()
    if integer is not None:
        if len(integer) > MAX_INT_DIGITS:
            return False
        value: object = int(integer) if len(integer) < 4000 else int_from_text(integer)
        group = _INTEGER
    elif string is not None:
        if "\\" in string:
            return False
        value, group = string[1:-1], _STRING
    elif real is not None:
        value, group = float(real), _REAL
    elif word is not None:
        value, group = _LITERAL_WORDS[word], _WORD
    else:
        value, group = math.inf, _INFINITY
    if minus:
        value = -value  # type: ignore[operator]
    values.append(value)
    columns.append((found.start(2) if minus else found.start(group)) + 1)
    columns.append(found.end(group))
    kinds.append(group)
    return True


_B = r"[ \t\r\f\v]*"
_KIND_PATTERNS = {  # (minus, literal) of each kind, as _ARGUMENT has them
    _REAL: rf"(-{_B})?([0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)",
    _INTEGER: rf"(-{_B})?([0-9]+)",
    _INFINITY: rf"(-{_B})?(infinity)(?![A-Za-z0-9_])",
    _STRING: r'()("[^"\\\n]*")',
    _WORD: r"()(true|false|null)(?![A-Za-z0-9_])"}


class _LinePattern:
    """Reads, in one match, a fact line with the same relation, shape and kinds of literal
    as a given one: what ``_fact`` reads, faster (a function written for those kinds)."""

    def __init__(self, name: str, event: bool, locs: tuple[int, ...],
                 kinds: tuple[int, ...]) -> None:
        opening, closing = ("\\[", "\\]") if event else ("\\(", "\\)")
        args = f"{_B},".join(_B + ("@" + _B if i in locs else "") + _KIND_PATTERNS[kind]
                             for i, kind in enumerate(kinds))
        regex = re.compile(rf"{_B}({name}){_B}{opening}{args}{_B}({closing}){_B}(\.){_B}\Z")
        # group 1: the name; 2 + 2i and 3 + 2i: argument i's minus and literal; then the
        # closing bracket and the dot
        body, values, columns = [], [], []
        for i, kind in enumerate(kinds):
            minus, literal = 2 + 2 * i, 3 + 2 * i
            text = f"g[{literal - 1}]"
            body.append({_INTEGER: f"v{i} = int({text}) if len({text}) < 4000 else None",
                         _STRING: f"v{i} = {text}[1:-1]",
                         _REAL: f"v{i} = float({text})",
                         _WORD: f"v{i} = WORDS[{text}]",
                         _INFINITY: f"v{i} = INF"}[kind])
            if kind == _INTEGER:
                body.append(f"if v{i} is None: return None  # _fact reads or refuses it")
            if kind in (_STRING, _WORD):
                columns += [f"r[{literal}][0] + 1", f"r[{literal}][1]"]
            else:
                body.append(f"if g[{minus - 1}]: v{i} = -v{i}")
                columns += [f"(r[{minus}] if g[{minus - 1}] else r[{literal}])[0] + 1",
                            f"r[{literal}][1]"]
            values.append(f"v{i}")
        after = 2 + 2 * len(kinds)
        source = "\n".join([
            "def read(line, number):",
            "    m = match(line)",
            "    if m is None: return None",
            "    g, r = m.groups(), m.regs",
            *(f"    {line}" for line in body),
            f"    return SHAPE, ({''.join(v + ', ' for v in values)}), (number, r[1][0] + 1, "
            f"r[{after}][1], r[{after + 1}][1], {', '.join(columns)})"])
        namespace = {"match": regex.match, "WORDS": _LITERAL_WORDS, "INF": math.inf,
                     "SHAPE": (name, event, locs, len(kinds))}
        exec(source, namespace)
        self.read: Callable[[str, int], tuple | None] = namespace["read"]


_line_pattern = lru_cache(maxsize=64)(_LinePattern)


# --- comments ---------------------------------------------------------------------------------


def strip_comments(source: Source, percent: bool = False) -> str:
    """Blank out ``//`` and (nestable) ``/* */`` comments, keeping every line and column;
    with ``percent``, P2's ``%%`` line comments too."""
    text = source.text
    out: list[str] | None = None  # made on the first comment
    i, n = 0, len(text)
    no_comment = _NO_COMMENT_PERCENT if percent else _NO_COMMENT
    while i < n:
        i = no_comment.match(text, i).end()  # type: ignore[union-attr]
        if i >= n:
            break
        if text[i] == '"':  # an unterminated string: the lexer reports it
            i = _STRING_BODY.match(text, i + 1).end() + 1  # type: ignore[union-attr]
            continue
        if out is None:
            out = list(text)
        if text.startswith("//", i) or text.startswith("%%", i):
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


# text up to the next comment, string literals included (in C: a program of facts has a
# string on every line); possessive where Python has it (3.11), which keeps no backtracking
# state: five times faster
NO_COMMENT_310 = r'(?:"(?:[^"\\\n]|\\[\s\S])*"|[^"/]+|/(?![/*]))*'  # the same, backtracking
_NO_COMMENT = re.compile(r'(?:"(?:[^"\\\n]|\\[\s\S])*+"|[^"/]++|/(?![/*]))*+'
                         if sys.version_info >= (3, 11) else NO_COMMENT_310)
_NO_COMMENT_PERCENT = re.compile(r'(?:"(?:[^"\\\n]|\\[\s\S])*+"|[^"/%]++|/(?![/*])|%(?!%))*+'
                                 if sys.version_info >= (3, 11)
                                 else r'(?:"(?:[^"\\\n]|\\[\s\S])*"|[^"/%]+|/(?![/*])|%(?!%))*')
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
    "SHIFT_OP": "`<<` or `>>`",
    "HEX": "an integer",
    "IN": "`in`",
    "MUL_OP": "an operator",
    "STAR": "`*`",
    "DELETE": "`delete`",
    "$END": "end of file",
}
_EXPRESSION_STARTS = {"NAME", "FUNC", "INT", "HEX", "FLOAT", "STRING", "TRUE", "FALSE", "NULL",
                      "BANG", "INFINITY", "MINUS", "LSQB", "LPAR"}


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
        names -= {"ADD_OP", "MUL_OP", "SHIFT_OP", "CMP_OP", "IN"}
        names = {n for n in names if _describe(n) not in ("`&&`", "`||`")}
        words.append("an operator")
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
        elif char == "#":
            notes = (Note("`#` starts a preprocessor directive in the P2 dialect: is this a "
                          "P2 program? (--dialect p2)"),)
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
        keys = [k for k in keys if k is not None]
        types = tuple(kind for _, kind in keys)
        return s.Materialize(name=name.value, lifetime=lifetime, size=size,
                             keys=tuple(position for position, _ in keys),
                             key_types=types if any(types) else (), span=_span(meta))

    def key(self, meta, items):
        position, kind = items
        return _int(position), None if kind is None else kind.value

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

    def condition(self, meta, items):
        """A body condition: a comparison filters as it is; any other term must be true."""
        term = items[0]
        if isinstance(term, s.Comparison):
            return term
        if isinstance(term, (s.BinOp, s.Neg, s.ListExpr)) or (
                isinstance(term, s.Const) and term.value.__class__ is not bool):
            raise _LiteralError(Diagnostic(
                "E107", "a body condition must be true or false, and this is "
                f"{'a list' if isinstance(term, s.ListExpr) else 'not a boolean'}",
                term.span, notes=(Note("compare it (`X > 0`), or assign it (`Y := ...`)"),)))
        return s.Comparison(op="==", left=term, right=s.Const(value=True, span=term.span),
                            span=_span(meta))

    def logic_or(self, meta, items):
        return s.Logic(op="||", left=items[0], right=items[1], span=_span(meta))

    def logic_and(self, meta, items):
        return s.Logic(op="&&", left=items[0], right=items[1], span=_span(meta))

    def logic_not(self, meta, items):
        return s.Not(operand=items[0], span=_span(meta))

    def in_range(self, meta, items):
        value, (low, high, low_closed, high_closed) = items
        return s.InRange(value=value, low=low, high=high, low_closed=low_closed,
                         high_closed=high_closed, span=_span(meta))

    def open_open(self, meta, items):
        return (*items, False, False)

    def open_closed(self, meta, items):
        return (*items, False, True)

    def closed_open(self, meta, items):
        return (*items, True, False)

    def closed_closed(self, meta, items):
        return (*items, True, True)

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

    def aggregate_k(self, meta, items):
        """JOL's ``topk<X, K>`` and ``bottomk<X, K>``."""
        func, arg, k = items
        return replace(self.aggregate(meta, [func, arg]), k=_int(k))

    def located_aggregate(self, meta, items):
        """``a_MAX<@Y>``: the aggregate is the atom's location field."""
        return _Located(self.aggregate(meta, items))

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

    def hex(self, meta, items):
        """``0x1F``, and P2's identifier ``0x1FI`` (a ``RingId``: see docs/dialects.md)."""
        digits = items[0].value[2:].rstrip("I")
        if len(digits) > MAX_INT_DIGITS:
            raise _LiteralError(Diagnostic(
                "E106", f"integer literal of {len(digits):,} digits (the limit is "
                f"{MAX_INT_DIGITS:,})", _token_span(items[0])))
        value = int(digits, 16)
        return s.Const(value=RingId(value) if items[0].value.endswith("I") else value,
                       span=_span(meta))

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
