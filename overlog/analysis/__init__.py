"""Static analysis: AST -> CheckedProgram, or every error of a phase as diagnostics.

Phases: names (catalog), rules (safety), strata. A phase runs only if the ones before it
found no errors, since its findings would rest on a broken program.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass

from overlog import syntax as s
from overlog.analysis.catalog import NativesCheck, Relation, build_catalog
from overlog.analysis.localize import localize
from overlog.analysis.safety import check_statements
from overlog.analysis.strata import RuleInfo, Stratum, stratify, unbounded_recursion
from overlog.diagnostics import Diagnostic
from overlog.errors import SemanticError
from overlog.functions import builtin_functions
from overlog.source import Source

__all__ = ["CheckedProgram", "NativesCheck", "Relation", "RuleInfo", "Stratum", "analyze"]


@dataclass(frozen=True, slots=True)
class CheckedProgram:
    """A program that passed analysis, with what analysis learned about it."""

    program: s.Program
    source: Source
    relations: dict[str, Relation]
    rules: tuple[RuleInfo, ...]
    strata: tuple[Stratum, ...]
    warnings: tuple[Diagnostic, ...]
    dialect: str = "canonical"  # the dialect whose built-in functions it calls

    @property
    def watched(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(st.name for st in self.program.statements
                                   if isinstance(st, s.Watch)))

    def watch_ops(self, name: str) -> tuple[str, ...]:
        """What a watch of relation ``name`` prints: "event" for an event relation;
        "insert", "delete" (or both) for a persistent one, as P2's `watchmod` modes say
        (docs/dialects.md); a plain `watch` prints everything."""
        event = self.relations[name].event
        ops: set[str] = set()
        for st in self.program.statements:
            if not isinstance(st, s.Watch) or st.name != name:
                continue
            if st.modes is None or st.modes == "":
                return ("event",) if event else ("delete", "insert")
            if event and set(st.modes) & set(WATCH_EVENT_MODES):
                ops.add("event")
            if not event and set(st.modes) & set(WATCH_INSERT_MODES):
                ops.add("insert")
            if not event and set(st.modes) & set(WATCH_DELETE_MODES):
                ops.add("delete")
        return tuple(sorted(ops))


# P2's watchmod letters: i insert, a add, d delete, z delete action, c receive, p periodic,
# s send, h head projection (r refresh, b/j join internals: nothing here prints them)
WATCH_EVENT_MODES = "iacpsh"
WATCH_INSERT_MODES = "ia"
WATCH_DELETE_MODES = "dz"


def analyze(program: s.Program, source: Source,
            functions: Mapping[str, tuple[int, float]] | None = None,
            natives: NativesCheck | None = None, dialect: str = "canonical") -> CheckedProgram:
    """Check a parsed program. ``functions`` adds user functions (name -> (fewest, most))
    to the built-in ones of ``dialect``; ``natives`` checks that native handlers' targets
    resolve."""
    user = {} if functions is None else dict(functions) if isinstance(functions, dict) \
        else functions
    registered = getattr(user, "registered", None)  # then `user` answers any other name
    known = ChainMap(user, builtin_functions(dialect)) if registered is None else \
        ChainMap(registered, builtin_functions(dialect), user)
    relations, diagnostics = build_catalog(program, natives)
    diagnostics += check_statements(program, known)
    warnings = [d for d in diagnostics if not d.is_error]
    if len(warnings) != len(diagnostics):
        raise SemanticError(diagnostics, source)
    localized, errors = localize(program, set(relations))
    if errors:
        raise SemanticError(errors + warnings, source)
    if localized is not program:  # generated relations join the catalog
        program = localized
        relations, _ = build_catalog(program, natives)
    infos, strata, errors = stratify(program, relations)
    if errors:
        raise SemanticError(errors + warnings, source)
    warnings += _unfed_relations(program, relations) + unbounded_recursion(infos)
    return CheckedProgram(program=program, source=source, relations=relations, rules=infos,
                          strata=strata, warnings=tuple(warnings), dialect=dialect)


def _unfed_relations(program: s.Program, relations: dict[str, Relation]) -> list[Diagnostic]:
    written = {st.atom.name if isinstance(st, s.Fact) else st.name
               for st in program.statements if isinstance(st, (s.Fact, s.FactRows))}
    written |= {r.head.name for r in program.rules if not r.delete}
    reported: set[str] = set()
    warnings = []
    for rule in program.rules:
        for literal in rule.body:
            atom = literal.atom if isinstance(literal, s.Negation) else literal
            if not isinstance(atom, s.Atom) or atom.name in written | reported:
                continue
            relation = relations.get(atom.name)
            if relation is None or relation.builtin:
                continue
            reported.add(atom.name)
            form = "generate_event" if relation.event else "insert"
            if relation.location is not None:  # another node's program may send it
                form = f"by another node's program, or with {form}"
            else:
                form = f"with {form}"
            warnings.append(Diagnostic(
                "W201", f"relation `{atom.name}` is read but no rule or fact writes it "
                f"(it can only be fed from outside, {form})", atom.span,
                severity="warning", subject=atom.name))
    return warnings
