"""Dialects: which Overlog a program is written in, and P2's mapped onto the canonical one.

``choose(text, requested)`` decides: the caller's choice (``--dialect``,
``Engine(dialect=...)``), else a pragma on one of the first lines (``// dialect: p2``),
else what the text leaves no doubt about (a JOL ``program name;`` header; P2-only syntax:
a preprocessor directive, ``watchmod``, ``periodic(...)`` in parentheses, ``%%``
comments), else canonical. A canonical program never changes meaning: each sign of P2 is
something the canonical dialect rejects.

``lower_p2(program)`` gives a parsed P2 program its canonical meaning (docs/dialects.md):
every relation that is not materialized is an event, ``periodic(...)`` is the timer event.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, replace

from overlog import syntax as s
from overlog.diagnostics import Diagnostic, Note
from overlog.source import span_at

DIALECTS = ("canonical", "p2", "jol")
PRAGMA_LINES = 5  # a pragma is on one of the first lines

_PRAGMA = re.compile(r"[ \t]*(?://|%%|/\*)[ \t]*dialect[ \t]*[:=][ \t]*([A-Za-z0-9_]*)"
                     r"[ \t]*(?:\*/)?[ \t\r]*$")
_JOL_HEADER = re.compile(r"\s*program\s+[A-Za-z_][\w:]*\s*;")
_P2_SIGNS = (  # (pattern, what it is, a string it needs): each is a canonical error
    (re.compile(r"^[ \t]*#[ \t]*(define|include|ifdef|ifndef)\b", re.M), "`#{0}`", "#"),
    (re.compile(r'\bwatchmod\s*\(\s*[A-Za-z_]\w*\s*,\s*"[^"\n]*"\s*\)\s*\.'), "`watchmod`",
     "watchmod"),
    (re.compile(r"\bperiodic[ \t]*\("), "`periodic(...)` in parentheses", "periodic"),
    (re.compile(r"^[ \t]*%%", re.M), "`%%` comments", "%%"),
)


class DialectError(ValueError):
    """An unknown dialect name, given or in a pragma (``line``: the pragma's)."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.line = line


_STRINGS = re.compile(r'"(?:[^"\\\n]|\\.)*"?')


def mask_strings(code: str) -> str:
    """``code`` with the inside of each string literal replaced by ``x``s (lines and columns
    kept): what patterns of statements search, so that no string can match them."""
    return _STRINGS.sub(lambda found: '"' + "x" * (len(found.group()) - 2) + '"'
                        if len(found.group()) > 1 else '"', code)


@dataclass(frozen=True, slots=True)
class Choice:
    """The dialect a program is read as, and why (for ``explain`` and the note)."""

    name: str
    how: str  # "given" | "pragma" | "detected" | "default"
    reason: str = ""  # what showed it (detected), or where (pragma)
    line: int = 0  # the line that showed it

    def describe(self) -> str:
        if self.how == "given":
            return f"{self.name} (chosen)"
        if self.how == "pragma":
            return f"{self.name} (its pragma, line {self.line})"
        if self.how == "detected":
            return f"{self.name} (detected: {self.reason}, line {self.line})"
        return self.name

    def note(self) -> Diagnostic | None:
        """A note saying the dialect was detected (None when chosen or canonical)."""
        if self.how != "detected":
            return None
        return Diagnostic(
            "N201", f"read as the {self.name.upper()} dialect: the program uses {self.reason} "
            f"(line {self.line})", severity="note",
            notes=(Note("choose with --dialect canonical|p2|jol, or a first line "
                        f"`// dialect: {self.name}`"),))


def check_name(name: str, pragma_line: int = 0) -> str:
    """``name`` if it names a dialect (a pragma's: in any case); DialectError otherwise."""
    known = name.lower() if pragma_line else name
    if known not in DIALECTS:
        where = " in the pragma" if pragma_line else ""
        raise DialectError(f"unknown dialect {name!r}{where} (known: {', '.join(DIALECTS)})",
                           pragma_line)
    return known


def choose(text: str, requested: str | None = None) -> Choice:
    """The dialect of ``text``: ``requested`` if given, else its pragma, else detected."""
    if requested is not None:
        return Choice(check_name(requested), "given")
    for number, line in enumerate(text.split("\n", PRAGMA_LINES)[:PRAGMA_LINES], start=1):
        found = _PRAGMA.match(line)
        if found is not None:
            return Choice(check_name(found.group(1), number), "pragma", line=number)
    start = _first_code(text)
    if _JOL_HEADER.match(text, start):
        return Choice("jol", "detected", "a `program name;` header",
                      text.count("\n", 0, start) + 1)
    best = None
    masked: dict[bool, str] = {}  # without comments (`%%` ones too, or not) and strings
    for pattern, what, marker in _P2_SIGNS:
        if marker not in text or pattern.search(text) is None:  # (then nothing to mask)
            continue
        percent = "%%" not in what
        if percent not in masked:
            masked[percent] = mask_strings(code_of(text, percent))
        found = pattern.search(masked[percent])
        if found is not None and (best is None or found.start() < best[0]):
            best = (found.start(), what.format(*found.groups()))
    if best is not None:
        return Choice("p2", "detected", best[1], text.count("\n", 0, best[0]) + 1)
    return Choice("canonical", "default")


STDIN = "-"  # the program path that reads standard input


def read_program(path: str, dialect: str | None = None) -> tuple[str, str | None]:
    """A program file's text (``-``: standard input's), and a note to show when it was read
    as Latin-1: a P2 program (``dialect``, or as detected) that is not UTF-8 only in its
    comments, as old P2 files are. Any other file must be UTF-8 (UnreadableSource says
    where it is not)."""
    from overlog.source import UnreadableSource, not_utf8, read_bytes

    data = sys.stdin.buffer.read() if path == STDIN else read_bytes(path)
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as error:
        where = not_utf8(data, error)
    text = data.decode("latin-1")
    try:
        p2 = (dialect or choose(text).name) == "p2"
    except DialectError:  # (compiling it will say so)
        p2 = False
    if p2 and code_of(text).isascii():
        return text, f"{path}: note: read as Latin-1 text: {where}, in a comment"
    raise UnreadableSource(f"cannot read {path}: {where}")


def code_of(text: str, percent: bool = True) -> str:
    """``text`` with its comments (``percent``: P2's ``%%`` ones too) blanked, lines and
    columns kept; as it is where a comment is not closed (the parser says so)."""
    from overlog.errors import ParseError
    from overlog.parser import strip_comments
    from overlog.source import Source

    try:
        return strip_comments(Source(text), percent=percent)
    except ParseError:
        return text


_SKIPPED = re.compile(r"\s*(?://[^\n]*|/\*.*?\*/)", re.S)


def _first_code(text: str) -> int:
    """Where the first statement starts: past leading blank lines and comments."""
    position = 0
    while (found := _SKIPPED.match(text, position)) is not None and found.end() > position:
        position = found.end()
    return len(text) - len(text[position:].lstrip()) if position < len(text) else position


# -- P2 -------------------------------------------------------------------------------------

# P2 statements this engine does not run: (pattern, what to say)
_P2_UNSUPPORTED = (
    (re.compile(r"^[ \t]*(stage)[ \t]*\(", re.M),
     "it runs C++ code through P2's ONI; register a Python function or a native handler "
     "instead"),
    (re.compile(r"^[ \t]*(index)[ \t]*\(", re.M),
     "secondary indexes are not declared: the engine builds the indexes its plans use"),
    (re.compile(r"^[ \t]*(traceTable|trace)[ \t]*\(", re.M),
     "use `watch` or `overlog run --trace`"),
    (re.compile(r"^[ \t]*(namespace)\b", re.M), "write the names in full"),
    (re.compile(r"^[ \t]*(ref|materializeSays|says|strongSays|weakSays)[ \t]*\(", re.M),
     "it belongs to P2's security extensions"),
    (re.compile(r"^[ \t]*(Query)\b", re.M), "read the tables with `watch` or the API"),
)


_WATCHMOD = re.compile(r'\bwatchmod\s*\(\s*([A-Za-z_]\w*)\s*,\s*"([^"\\\n]*)"\s*\)\s*\.')


def p2_watchmods(text: str) -> tuple[str, list[s.Watch]]:
    """P2's ``watchmod(name, "modes").`` statements (not the canonical dialect's: there
    ``watchmod`` may name a relation) as Watch statements, and the text without them
    (blanked in place)."""
    chars = list(text)
    found = []
    for match in _WATCHMOD.finditer(mask_strings(code_of(text))):
        start, end = match.start(), match.end()
        found.append(s.Watch(name=match.group(1), modes=text[match.start(2):match.end(2)],
                             span=span_at(text, start, end)))
        chars[start:end] = [c if c == "\n" else " " for c in text[start:end]]
    return "".join(chars), found


def p2_unsupported(text: str) -> list[Diagnostic]:
    """A located error (E110) for each P2 statement this engine does not run, naming it."""
    found = []
    for pattern, why in _P2_UNSUPPORTED:
        for match in pattern.finditer(text):
            found.append(Diagnostic(
                "E110", f"P2's `{match.group(1)}` is not supported ({why})",
                span_at(text, match.start(1), match.end(1)),
                notes=(Note("docs/dialects.md lists what runs"),)))
    return found


def _string_plus(node: object) -> object:
    """P2's ``"id" + 5``: a ``+`` with a string written on one side joins text (f_concat, the
    number written as Overlog writes it); a ``+`` of two variables is the canonical one."""
    if isinstance(node, s.BinOp) and node.op == "+" and any(
            _is_text(side) for side in (node.left, node.right)):
        return s.Call(name="f_concat", args=(node.left, node.right), span=node.span)
    return node


class _Names:
    """Names for the relations and variables a rewrite adds, unlike any the program uses."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = set(taken)

    def fresh(self, base: str) -> str:
        name, n = base, 1
        while name in self.taken:
            n += 1
            name = f"{base}{n}"
        self.taken.add(name)
        return name


def _aggregates(rule: s.Rule, keys: tuple[int, ...] | None, names: _Names) -> list[s.Rule]:
    """A rule whose head aggregates as P2 and RapidNet do, as canonical rules (the rule
    itself last): several aggregates in one head (``s(G, min<X>, max<X>)``: one helper
    rule each, joined on the group); a min or max into a table keyed on fewer than its
    other fields (RapidNet's argmin, ``best(S, D, min<C>, P)`` keyed on S, D: the row
    that attains the best keeps its other fields; on a tie, the least of them)."""
    head = rule.head
    found = [(i, a) for i, a in enumerate(head.args) if isinstance(a, s.Agg)]
    if not found:
        return [rule]
    if len(found) == 1:
        position, agg = found[0]
        carried = [i for i in range(head.arity) if i != position and keys
                   and i + 1 not in keys]
        if agg.func not in ("min", "max") or not carried or agg.arg is None or not all(
                isinstance(head.args[i], s.Var) for i in range(head.arity) if i != position):
            return [rule]
        return _argmin(rule, position, agg, carried, names)
    event = any(isinstance(b, s.Atom) and b.event for b in rule.body)
    group = [i for i in range(head.arity) if not isinstance(head.args[i], s.Agg)]
    rules, parts = [], []
    shared = [s.Var(name=names.fresh(f"G{k}")) for k in range(len(group))]
    for position, agg in found:
        helper = names.fresh(f"{head.name}_{agg.func}{position + 1}")
        args = (*(head.args[i] for i in group), agg)
        locs = tuple(group.index(i) for i in head.locs if i in group)
        rules.append(replace(rule, name=_helper_name(rule, helper), head=s.Atom(
            name=helper, args=args, event=event, locs=locs, span=head.span)))
        value = s.Var(name=names.fresh(f"A{position + 1}"))
        parts.append(s.Atom(name=helper, args=(*shared, value), event=event, locs=locs,
                            span=head.span))
    values = {position: part.args[-1] for (position, _), part in zip(found, parts,
                                                                     strict=True)}
    args = tuple(values[i] if i in values else shared[group.index(i)]
                 for i in range(head.arity))
    return [*rules, replace(rule, head=replace(head, args=args), body=tuple(parts))]


def _argmin(rule: s.Rule, position: int, agg: s.Agg, carried: list[int],
            names: _Names) -> list[s.Rule]:
    head = rule.head
    event = any(isinstance(b, s.Atom) and b.event for b in rule.body)
    group = [i for i in range(head.arity) if i != position and i not in carried]
    best = names.fresh(f"{head.name}_{agg.func}")
    pick = names.fresh(f"{head.name}_pick")
    group_args = tuple(head.args[i] for i in group)
    locs = tuple(group.index(i) for i in head.locs if i in group)
    value = agg.arg
    assert value is not None
    # the best value of each group
    first = replace(rule, name=_helper_name(rule, best), head=s.Atom(
        name=best, args=(*group_args, agg), event=event, locs=locs, span=head.span))
    # of the bindings that attain it, the least of the carried fields
    chosen = [head.args[i] for i in carried]
    tie = s.Var(name=names.fresh("T"))
    carry = chosen[0] if len(chosen) == 1 else s.ListExpr(items=tuple(chosen))
    # joined on the value where an atom binds it; on a variable of its own, compared after,
    # where the body computes it (`C := C1 + C2`: it cannot be bound before)
    joined = any(isinstance(b, s.Atom) and value in b.args for b in rule.body)
    attained = value if joined else s.Var(name=names.fresh("M"))
    attains = s.Atom(name=best, args=(*group_args, attained), event=event, locs=locs,
                     span=head.span)
    same = () if joined else (s.Comparison(op="==", left=value, right=attained),)
    second = replace(rule, name=_helper_name(rule, pick), head=s.Atom(
        name=pick, args=(*group_args, value, s.Agg(func="min", arg=tie, spelling="min")),
        event=event, locs=locs, span=head.span),
        body=(*rule.body, attains, *same, s.Assign(var=tie, expr=carry)))
    # the head, its carried fields taken from the pick
    picked = s.Atom(name=pick, args=(*group_args, value, tie), event=event, locs=locs,
                    span=head.span)
    body: list[s.Literal] = [picked]
    args = list(head.args)
    args[position] = value
    if len(chosen) > 1:
        rest: s.Term = tie
        for k, i in enumerate(carried):
            var = s.Var(name=names.fresh(f"C{i + 1}"))
            body.append(s.Assign(var=var, expr=s.Call(name="f_car", args=(rest,))))
            args[i] = var
            if k + 1 < len(carried):
                rest = s.Call(name="f_cdr", args=(rest,))
    else:
        args[carried[0]] = tie
    return [first, second, replace(rule, head=replace(head, args=tuple(args)),
                                   body=tuple(body))]


def _helper_name(rule: s.Rule, helper: str) -> str | None:
    return f"{rule.name}_{helper}" if rule.name else None


def _quiet(rule: s.Rule, names: _Names) -> s.Rule:
    """A helper rule with each variable it uses once renamed ``_Name``: the program used it
    elsewhere, so no warning should say it is used once (W202)."""
    counts: dict[str, int] = {}
    for var in s.variables(rule):
        counts[var.name] = counts.get(var.name, 0) + 1
    once = {name: names.fresh("_" + name) for name, n in counts.items()
            if n == 1 and not name.startswith("_")}
    if not once:
        return rule
    return s.rebuild(rule, lambda node: replace(node, name=once[node.name])
                     if isinstance(node, s.Var) and node.name in once else node)


def _is_text(term: s.Term) -> bool:
    return (isinstance(term, s.Const) and isinstance(term.value, str)) or (
        isinstance(term, s.Call) and term.name == "f_concat")


def _relation_names(program: s.Program) -> set[str]:
    """The relations a program's atoms name (a FactRows by its name: facts are many)."""
    return {st.name for st in program.statements if isinstance(st, s.FactRows)} | {
        node.name for st in program.statements if not isinstance(st, s.FactRows)
        for node in s.walk(st) if isinstance(node, s.Atom)}


def _with_atoms(body: tuple[s.Literal, ...], change) -> tuple[s.Literal, ...]:
    """``body`` with ``change`` applied to each atom, negated ones too."""
    return tuple(change(b) if isinstance(b, s.Atom) else replace(b, atom=change(b.atom))
                 if isinstance(b, s.Negation) else b for b in body)


def lower_p2(program: s.Program) -> tuple[s.Program, list[Diagnostic]]:
    """A parsed P2 program with its canonical meaning (``as_canonical``), and the warnings
    that P2 gives where the canonical dialect has errors: a ``watch`` of a relation the
    program does not use is a warning (W205), not E220."""
    used = _relation_names(program)
    warnings = [Diagnostic(
        "W205", f"`watch` names relation `{st.name}`, which the program does not use "
        "(nothing to print)", st.span, severity="warning")
        for st in program.statements if isinstance(st, s.Watch) and st.name not in used]
    program = s.Program(statements=tuple(
        st for st in program.statements if not (isinstance(st, s.Watch)
                                                and st.name not in used)), path=program.path)
    program, errors = _bags(program)
    return as_canonical(program, argmin=True), warnings + errors


def _bags(program: s.Program) -> tuple[s.Program, list[Diagnostic]]:
    """P2's tables without keys (``keys()``) are bags: each insertion is a row of its own,
    so three inserts of a tuple count three. Such a table gets a last field, each row's id
    (``f_rowid()``: 1, 2, 3, ... as the engine inserts them), which its readers ignore and a
    ``delete`` matches whatever it is (every copy goes). A rule with no event writing one
    (a view, maintained, where P2 inserts on each change) is E230."""
    bags = {st.name for st in program.statements
            if isinstance(st, s.Materialize) and not st.keys}
    if not bags:
        return program, []
    declared = {st.name for st in program.statements if isinstance(st, s.Materialize)}
    rules = [st for st in program.statements if isinstance(st, s.Rule)]
    variables = _Names({v.name for rule in rules for v in s.variables(rule)})
    relations = _Names(_relation_names(program) | declared)
    errors = []

    def read(a: s.Atom) -> s.Atom:
        return replace(a, args=(*a.args, s.Wildcard(span=a.span))) if a.name in bags else a

    def fresh_id() -> s.Call:
        return s.Call(name="f_rowid", args=())

    statements: list[s.Statement] = []
    for st in program.statements:
        if isinstance(st, s.FactRows) and st.name in bags:
            facts: tuple[s.Statement, ...] = st.facts()
        else:
            facts = (st,)
        for st in facts:
            if isinstance(st, s.Fact) and st.atom.name in bags:
                st = replace(st, atom=replace(st.atom, args=(*st.atom.args, fresh_id())))
            elif isinstance(st, s.Rule):
                body = _with_atoms(st.body, read)
                head = st.head
                if head.name in bags and st.delete:  # every copy: whatever its id
                    fields = [s.Var(name=variables.fresh(f"F{i + 1}"))
                              for i in range(head.arity + 1)]
                    body = (*body, replace(head, args=tuple(fields)), *(
                        s.Comparison(op="==", left=field, right=arg, span=arg.span)
                        for field, arg in zip(fields, head.args, strict=False)))
                    head = replace(head, args=tuple(fields))
                elif head.name in bags:
                    events = [b for b in st.body if isinstance(b, s.Atom)
                              and (b.event or b.name not in declared)]
                    if not events:
                        errors.append(Diagnostic(
                            "E230", f"`{head.name}` is a table without keys (a bag): only a "
                            "rule triggered by an event can insert into it", st.span,
                            notes=(Note("give the table keys, or trigger the rule with an "
                                        "event (P2 inserts on each change of its body)"),)))
                    if any(isinstance(a, s.Agg) for a in head.args):
                        # aggregate first (into an event of its own), then number the rows
                        helper = relations.fresh(f"{head.name}_rows")
                        values = tuple(s.Var(name=variables.fresh(f"V{i + 1}"))
                                       for i in range(head.arity))
                        statements.append(replace(st, head=replace(head, name=helper),
                                                  body=body))
                        st = replace(st, name=None, body=(replace(
                            head, name=helper, args=values),), head=replace(head, args=values))
                        head, body = st.head, st.body
                    head = replace(head, args=(*head.args, fresh_id()))
                st = replace(st, head=head, body=body)
            statements.append(st)
    return s.Program(statements=tuple(statements), path=program.path), errors


def as_canonical(program: s.Program, argmin: bool) -> s.Program:
    """A P2 or JOL program, parsed, with its canonical meaning: atoms of relations no
    ``materialize`` declares are events (``name(...)`` is ``name[...]``); a ``+`` with a
    string written on one side joins text; several aggregates in one head, and (``argmin``:
    RapidNet's) a min or max into a table keyed on fewer fields, become helper rules."""
    declared = {st.name: st.keys for st in program.statements
                if isinstance(st, s.Materialize)}

    def atom(a: s.Atom) -> s.Atom:
        return a if a.event or a.name in declared else replace(a, event=True)

    rules = [st for st in program.statements if isinstance(st, s.Rule)]
    names = _Names(_relation_names(program) | set(declared)
                   | {v.name for rule in rules for v in s.variables(rule)})
    statements: list[s.Statement] = []
    for st in program.statements:
        st = s.rebuild(st, _string_plus)  # type: ignore[assignment]
        if isinstance(st, s.Rule):
            st = replace(st, head=atom(st.head), body=_with_atoms(st.body, atom))
            *helpers, st = _aggregates(st, declared.get(st.head.name) if argmin else None,
                                       names)
            statements += (_quiet(helper, names) for helper in helpers)
        elif isinstance(st, s.Fact):
            st = replace(st, atom=atom(st.atom))
        elif isinstance(st, s.FactRows) and not st.event and st.name not in declared:
            st = s.FactRows(name=st.name, event=True, locs=st.locs, rows=st.rows,
                            places=st.places, span=st.span)
        statements.append(st)
    return s.Program(statements=tuple(statements), path=program.path)
