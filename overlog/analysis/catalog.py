"""Names pass: which relations exist, their arity, persistent or event, keys and lifetimes.

Reports arity mismatches, persistent/event conflicts, bad declarations, reserved names, misuse
of the built-in relations, and native handlers that are malformed or (with a ``natives``
checker from the layer that owns them) cannot be resolved.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from overlog import syntax as s
from overlog.diagnostics import Diagnostic, Note
from overlog.printer import plural
from overlog.source import Span
from overlog.values import KEY_TYPES, internal, type_fault

PERIODIC = "periodic"
ERROR = "error"  # error[Step, Relation, Row, Message]: inputs quarantined by a failed step
NATIVE_HANDLER = "registerNativeEventHandler"


@dataclass(frozen=True, slots=True)
class Relation:
    """What the program says of one relation."""

    name: str
    arity: int
    event: bool
    keys: tuple[int, ...]  # 0-based key positions; every field when undeclared
    lifetime: float = math.inf  # seconds
    size: float = math.inf  # row cap
    declared: bool = False  # has a materialize(...) declaration
    builtin: bool = False  # fed by the runtime (periodic)
    span: Span | None = None  # declaration, or first use
    location: int | None = None  # the column its uses mark with `@`: the tuple's address
    types: tuple[tuple[int, str], ...] = ()  # (0-based column, key type): P2's typed keys

    @property
    def keyed(self) -> bool:
        """A persistent relation keyed on fewer than all its fields (one row per key)."""
        return not self.event and len(self.keys) < self.arity


@dataclass(frozen=True, slots=True)
class _Use:
    name: str
    arity: int
    event: bool
    span: Span | None
    role: str  # "head" | "body" | "negated" | "fact"
    loc: int | None = None  # the column marked `@`


def _use(atom: s.Atom, role: str) -> _Use:
    return _Use(atom.name, atom.arity, atom.event, atom.span, role,
                atom.locs[0] if atom.locs else None)


def _uses(program: s.Program) -> list[_Use]:
    uses = []
    for statement in program.statements:
        if isinstance(statement, s.Fact):
            uses.append(_use(statement.atom, "fact"))
        elif isinstance(statement, s.FactRows):  # one shape: its first fact says all
            uses.append(_Use(statement.name, statement.arity, statement.event,
                             statement.atom_span(0), "fact",
                             statement.locs[0] if statement.locs else None))
        elif isinstance(statement, s.Rule):
            uses.append(_use(statement.head, "head"))
            for literal in statement.body:
                if isinstance(literal, s.Atom):
                    uses.append(_use(literal, "body"))
                elif isinstance(literal, s.Negation):
                    uses.append(_use(literal.atom, "negated"))
    return uses


def _kind(event: bool) -> str:
    return "an event" if event else "persistent"


def _form(name: str, event: bool) -> str:
    return f"{name}[...]" if event else f"{name}(...)"


NativesCheck = Callable[[str], "str | None"]  # "module:function" -> None, or what is wrong


# the words of the language, which no relation may be named (E217); `in` is a word only
# after an expression (`X in (A, B]`), and stays a name (`out[X] :- in[X].`)
KEYWORDS = frozenset({"true", "false", "null", "infinity", "materialize", "keys", "watch",
                      "delete", "notin"})


def build_catalog(program: s.Program, natives: NativesCheck | None = None,
                  ) -> tuple[dict[str, Relation], list[Diagnostic]]:
    """The program's relations, in order of first appearance, and the errors found.
    ``natives`` checks the targets of native handlers; without it, only their form is."""
    diagnostics: list[Diagnostic] = []
    first: dict[str, _Use] = {}
    located: dict[str, _Use] = {}  # the first use of each relation with a `@`
    reported_reserved: set[str] = set()

    for use in _uses(program):
        if (use.name.startswith("f_") or use.name in KEYWORDS) and \
                use.name not in reported_reserved:
            reported_reserved.add(use.name)
            why = "names starting with `f_` are functions" if use.name.startswith("f_") \
                else "it is a word of the language"
            diagnostics.append(Diagnostic(
                "E217", f"relation name `{use.name}` is reserved: {why}", use.span))
            continue
        if use.name in (PERIODIC, ERROR):
            problems = _check_builtin_use(use)
            diagnostics += problems
            if not problems:
                first.setdefault(use.name, _Use(use.name, 4, True, use.span, use.role))
            continue
        if use.name == NATIVE_HANDLER:
            if use.role != "fact":
                diagnostics.append(Diagnostic(
                    "E218", f"`{NATIVE_HANDLER}` is a declaration: write it as a fact "
                    f"`{NATIVE_HANDLER}[\"relation\", \"module:function\"].`", use.span))
            continue
        seen = first.get(use.name)
        if seen is None:
            first[use.name] = use
            if use.loc is not None:
                located[use.name] = use
            continue
        if seen.event != use.event:
            diagnostics.append(Diagnostic(
                "E202", f"relation `{use.name}` is used as {_kind(use.event)} relation here "
                f"but as {_kind(seen.event)} relation before",
                use.span,
                notes=(Note(f"first used as `{_form(use.name, seen.event)}` here", seen.span),
                       Note("a relation is persistent `p(...)` or an event `p[...]` in the "
                            "whole program"))))
        elif seen.arity != use.arity:
            diagnostics.append(Diagnostic(
                "E201", f"relation `{use.name}` is used with {plural(use.arity, 'argument')} "
                f"here but with {plural(seen.arity, 'argument')} before",
                use.span,
                notes=(Note(f"first used with {plural(seen.arity, 'argument')} here",
                            seen.span),)))
        if use.loc is None:
            continue
        where = located.setdefault(use.name, use)
        if where.loc != use.loc and seen.event == use.event and seen.arity == use.arity:
            diagnostics.append(Diagnostic(
                "E226", f"relation `{use.name}` has its location specifier `@` on field "
                f"{use.loc + 1} here but on field {where.loc + 1} before", use.span,
                notes=(Note(f"`@` on field {where.loc + 1} here", where.span),
                       Note("a tuple's address is the same field in every use of its "
                            "relation"))))

    declarations: dict[str, s.Materialize] = {}
    for statement in program.statements:
        if isinstance(statement, s.Materialize):
            diagnostics += _check_materialize(statement, declarations, first)
            declarations.setdefault(statement.name, statement)
        elif isinstance(statement, s.Watch) and statement.name not in first:
            diagnostics.append(Diagnostic(
                "E220", f"`watch` names relation `{statement.name}`, which the program does "
                "not use", statement.span))
        elif isinstance(statement, s.Fact) and statement.atom.name == NATIVE_HANDLER:
            diagnostics += _check_native_handler(statement.atom, first, natives)

    relations: dict[str, Relation] = {}
    for name, use in first.items():
        declaration = declarations.get(name)
        keys = tuple(range(use.arity))
        lifetime = size = math.inf
        span = use.span
        types: tuple[tuple[int, str], ...] = ()
        if declaration is not None:
            if declaration.keys and all(1 <= k <= use.arity for k in declaration.keys):
                keys = tuple(k - 1 for k in declaration.keys)
                types = tuple((k - 1, kind) for k, kind in zip(
                    declaration.keys, declaration.key_types, strict=False)
                    if kind in KEY_TYPES)
            lifetime, size, span = declaration.lifetime, declaration.size, declaration.span
        relations[name] = Relation(name=name, arity=use.arity, event=use.event, keys=keys,
                                   lifetime=lifetime, size=size,
                                   declared=declaration is not None,
                                   builtin=name in (PERIODIC, ERROR), span=span,
                                   location=located[name].loc if name in located else None,
                                   types=types)
    diagnostics += _check_typed_facts(program, relations)
    return relations, diagnostics


def _check_typed_facts(program: s.Program, relations: dict[str, Relation]) -> list[Diagnostic]:
    """E229 for a fact's literal in a typed key field that is not of its type."""
    problems = []
    for statement in program.statements:
        if not isinstance(statement, (s.Fact, s.FactRows)):
            continue
        name = statement.atom.name if isinstance(statement, s.Fact) else statement.name
        relation = relations.get(name)
        if relation is None or not relation.types:
            continue
        facts = statement.facts() if isinstance(statement, s.FactRows) else (statement,)
        for fact in facts:
            for column, kind in relation.types:
                arg = fact.atom.args[column] if column < fact.atom.arity else None
                if not isinstance(arg, s.Const):
                    continue
                fault = type_fault(internal(arg.value), kind)
                if fault is not None:
                    problems.append(Diagnostic(
                        "E229", f"field {column + 1} of `{name}` {fault}", arg.span))
    return problems


def _check_builtin_use(use: _Use) -> list[Diagnostic]:
    if use.role in ("head", "fact"):
        return [Diagnostic(
            "E215", f"`{use.name}` is produced by the runtime: it can only be read in a rule "
            "body", use.span)]
    if use.name == PERIODIC and (not use.event or use.arity not in (3, 4)):
        return [Diagnostic(
            "E215", "`periodic` is written `periodic[@Node, Id, Period, Count]` "
            "(Count may be omitted: for ever)", use.span)]
    if use.name == ERROR and (not use.event or use.arity != 4):
        return [Diagnostic(
            "E215", "`error` is written `error[Step, Relation, Row, Message]`", use.span)]
    return []


def _check_materialize(decl: s.Materialize, seen: dict[str, s.Materialize],
                       first: dict[str, _Use]) -> list[Diagnostic]:
    problems = []
    if decl.name in seen:
        problems.append(Diagnostic(
            "E204", f"relation `{decl.name}` is declared twice", decl.span,
            notes=(Note("first declared here", seen[decl.name].span),)))
        return problems
    use = first.get(decl.name)
    if use is None:
        problems.append(Diagnostic(
            "W203", f"`materialize` declares `{decl.name}`, which no rule or fact uses, so its "
            "arity is unknown and it is not created", decl.span, severity="warning"))
    if use is not None and use.event:
        problems.append(Diagnostic(
            "E202", f"`materialize` declares `{decl.name}` persistent, but it is used as an "
            "event relation", decl.span,
            notes=(Note(f"used as `{decl.name}[...]` here", use.span),)))
    if not decl.lifetime > 0:
        problems.append(Diagnostic(
            "E224", f"lifetime of `{decl.name}` must be a positive number of seconds or "
            "`infinity`", decl.span))
    if not (decl.size == math.inf or (isinstance(decl.size, int) and decl.size >= 1)):
        problems.append(Diagnostic(
            "E224", f"size of `{decl.name}` must be a positive whole number of rows or "
            "`infinity`", decl.span))
    if use is not None:
        bad = [k for k in decl.keys if not 1 <= k <= use.arity]
        if bad:
            problems.append(Diagnostic(
                "E203", f"key position {bad[0]} is out of range for `{decl.name}`, which has "
                f"{plural(use.arity, 'field')} (positions are 1-based)", decl.span,
                notes=(Note(f"`{decl.name}` used with {plural(use.arity, 'argument')} here",
                            use.span),)))
    if len(set(decl.keys)) != len(decl.keys):
        problems.append(Diagnostic(
            "E203", f"key positions of `{decl.name}` repeat a position", decl.span))
    unknown = [kind for kind in decl.key_types if kind and kind not in KEY_TYPES]
    if unknown:
        problems.append(Diagnostic(
            "E203", f"unknown key type `{unknown[0]}` in the declaration of `{decl.name}`",
            decl.span, notes=(Note(f"key types: {', '.join(KEY_TYPES)}"),)))
    return problems


def _check_native_handler(atom: s.Atom, first: dict[str, _Use],
                          natives: NativesCheck | None) -> list[Diagnostic]:
    usage = (f"write `{NATIVE_HANDLER}[\"relation\", \"module:function\"].`")
    if not atom.event or atom.arity != 2 or not all(
            isinstance(a, s.Const) and isinstance(a.value, str) for a in atom.args):
        return [Diagnostic("E218", f"malformed `{NATIVE_HANDLER}`: {usage}", atom.span)]
    relation, target = (a.value for a in atom.args)  # type: ignore[union-attr]
    problems = []
    use = first.get(relation)
    if use is None:
        problems.append(Diagnostic(
            "E218", f"native handler bound to `{relation}`, which the program does not use",
            atom.args[0].span))
    elif not use.event:
        problems.append(Diagnostic(
            "E218", f"native handlers listen to event relations; `{relation}` is persistent",
            atom.args[0].span, notes=(Note(f"`{relation}` used here", use.span),)))
    module_name, _, function = target.partition(":")
    error = (f"native handler `{target}` must be written `module:function`"
             if not module_name or not function else natives(target) if natives else None)
    if error:
        problems.append(Diagnostic("E218", error, atom.args[1].span))
    return problems
