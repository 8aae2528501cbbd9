"""The local backend: compiles a plan to a Python function of nested loops over hash indexes.

``compile_plan(plan, tables, functions, mode)`` returns ``run(seed, emit, exclude)``: for
each seed tuple (a driver row, or the values of the pre-bound variables) it calls
``emit(head_row)`` once per binding; joins marked ``old`` skip the rows in
``exclude[relation]`` (the current delta). ``mode="delete"`` reads every table as it was
before the step's removals (rows plus removed rows) and ignores anti-joins: the
over-approximation DRed's over-deletion phase needs. With ``novel=relation``, only head rows
not already in that relation are emitted (semi-naive insertion into a set-semantics table).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

from overlog import syntax as s
from overlog.plan import AntiJoin, Filter, Join, Let, Plan, Scan
from runtime.builtins import divide, remainder
from runtime.store import EMPTY, Table, index_key

Emit = Callable[[tuple], Any]
Runner = Callable[..., None]  # run(seed, emit, exclude={})


class PlanFailure(Exception):
    """An expression failed while evaluating a plan; carries the binding at that point."""

    def __init__(self, cause: BaseException, binding: dict[str, Any]):
        super().__init__(str(cause))
        self.cause = cause
        self.binding = binding


class _Codegen:
    """Writes a plan as the source of one Python function. Rows are unpacked into locals;
    index lookups are set up once, before the loops."""

    def __init__(self, plan: Plan, tables: dict[str, Table], mode: str,
                 novel: str | None) -> None:
        self.plan = plan
        self.novel = novel
        self.tables = tables
        self.deleting = mode == "delete"
        self.namespace: dict[str, Any] = {
            "EMPTY": EMPTY, "NOTHING": {}, "_div": divide, "_mod": remainder, "INF": math.inf,
            "_chain": itertools.chain, "_index_of": _index_of, "PlanFailure": PlanFailure,
        }
        self.prologue: list[str] = []  # set-up lines of the locals, before the loops
        self.locals: dict[tuple, str] = {}
        self.lines: list[str] = []
        self.depth = 0
        self.counter = 0
        self.indexes: list[tuple[str, tuple[int, ...]]] = []
        self.checked = False  # writing the variant that skips excluded (delta) rows

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, value: Any) -> str:
        name = self.name("c")
        self.namespace[name] = value
        return name

    def table(self, relation: str) -> str:
        name = f"t_{relation}"
        self.namespace[name] = self.tables[relation]
        return name

    def local(self, what: tuple, prefix: str, initializer: str) -> str:
        """The local set up in the prologue for ``what`` (one per distinct ``what``)."""
        name = self.locals.get(what)
        if name is None:
            name = self.locals[what] = self.name(prefix)
            self.prologue.append(f"    {name} = {initializer}")
        return name

    def rows(self, relation: str, version: str = "rows") -> str:
        """A local bound to the table's ``rows`` (or ``removed``) set: updated in place."""
        return self.local((version, relation), version,
                          f"{self.table(relation)}.{version}")

    def index(self, relation: str, key: tuple[int, ...]) -> str:
        self.indexes.append((relation, key))
        return self.local(("index", relation, key), "ix",
                          f"{self.table(relation)}.index({key!r})")

    def removed_index(self, relation: str, key: tuple[int, ...]) -> str:
        return self.local(("removed index", relation, key), "rx",
                          f"_index_of({self.table(relation)}.removed, {key!r})")

    def excluded(self, relation: str) -> str:
        return self.local(("excluded", relation), "dx", f"exclude.get({relation!r}, EMPTY)")

    def expr(self, term: s.Term) -> str:
        match term:
            case s.Var(name=name):
                return f"v_{name}"
            case s.Const(value=value):
                if isinstance(value, (int, str, bool)) or value is None:
                    return repr(value)
                return self.const(value)
            case s.BinOp(op=op, left=left, right=right):
                a, b = self.expr(left), self.expr(right)
                if op == "/":
                    return f"_div({a}, {b})"
                if op == "%":
                    return f"_mod({a}, {b})"
                return f"({a} {op} {b})"
            case s.Neg(operand=operand):
                return f"(-{self.expr(operand)})"
            case s.Call(name=name, args=args):
                return f"F_{name}({', '.join(self.expr(a) for a in args)})"
            case s.ListExpr(items=items):
                return self.tuple_expr(items)
        raise TypeError(f"cannot evaluate {term!r}")

    def tuple_expr(self, terms) -> str:
        return "(" + "".join(f"{self.expr(t)}, " for t in terms) + ")"

    def key_expr(self, terms) -> str:
        return self.expr(terms[0]) if len(terms) == 1 else self.tuple_expr(terms)

    def emit_line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def open_loop(self, source: str, arity: int, binds, checks,
                  excluded: str | None = None) -> None:
        """``for`` over the rows of ``source``, unpacked into the bound variables, skipping
        the rows in the set named ``excluded``."""
        names = [f"_u{self.depth}_{c}" for c in range(arity)]
        for column, var in binds:
            names[column] = f"v_{var}"
        target = "(" + "".join(f"{n}, " for n in names) + ")"
        if excluded is None:
            self.emit_line(f"for {target} in {source}:")
            self.depth += 1
        else:
            row = self.name("r")
            self.emit_line(f"for {row} in {source}:")
            self.depth += 1
            self.emit_line(f"if {row} in {excluded}: continue")
            self.emit_line(f"{target} = {row}")
        for column, term in checks:
            self.emit_line(f"if {names[column]} != {self.expr(term)}: continue")

    def scan(self, op: Scan) -> None:
        arity = self.tables[op.relation].arity if op.relation else len(op.binds)
        self.open_loop("seed", arity, op.binds, op.checks)

    def join(self, op: Join) -> None:
        arity = self.tables[op.relation].arity
        skip = op.old and self.checked
        if op.key == tuple(range(arity)):  # every column bound: a membership test
            rows = self.rows(op.relation)
            key = self.tuple_expr(op.key_terms)
            if self.deleting:
                removed = self.rows(op.relation, "removed")
                self.emit_line(f"if not ({key} in {rows} or {key} in {removed}): continue")
            elif skip:
                self.emit_line(f"_r = {key}")
                self.emit_line(f"if _r not in {rows} or _r in "
                               f"{self.excluded(op.relation)}: continue")
            else:
                self.emit_line(f"if {key} not in {rows}: continue")
            return
        if not op.key:
            rows = self.rows(op.relation)
            source = f"_chain({rows}, {self.rows(op.relation, 'removed')})" \
                if self.deleting else rows
        else:
            key = self.key_expr(op.key_terms)
            source = f"{self.index(op.relation, op.key)}.get({key}, EMPTY)"
            if self.deleting:
                rx = self.removed_index(op.relation, op.key)
                source = f"_chain({source}, {rx}.get({key}, EMPTY))"
        self.open_loop(source, arity, op.binds, op.checks,
                       self.excluded(op.relation) if skip else None)

    def antijoin(self, op: AntiJoin) -> None:
        if self.deleting:
            return
        rows = self.rows(op.relation)
        arity = self.tables[op.relation].arity
        if op.key == tuple(range(arity)):
            self.emit_line(f"if {self.tuple_expr(op.key_terms)} in {rows}: continue")
        elif not op.key:
            self.emit_line(f"if {rows}: continue")
        else:
            ix = self.index(op.relation, op.key)
            self.emit_line(f"if {self.key_expr(op.key_terms)} in {ix}: continue")

    def body(self, checked: bool, depth: int) -> list[str]:
        self.lines, self.depth, self.checked = [], depth, checked
        for op in self.plan.operators:
            match op:
                case Scan():
                    self.scan(op)
                case Join():
                    self.join(op)
                case AntiJoin():
                    self.antijoin(op)
                case Filter(op=cmp, left=left, right=right):
                    self.emit_line(f"if not ({self.expr(left)} {cmp} "
                                   f"{self.expr(right)}): continue")
                case Let(var=var, expr=expr):
                    self.emit_line(f"v_{var} = {self.expr(expr)}")
        head = self.tuple_expr(self.plan.head)
        if self.novel is None:
            self.emit_line(f"emit({head})")
        else:
            self.emit_line(f"_h = {head}")
            self.emit_line(f"if _h not in {self.rows(self.novel)}: emit(_h)")
        return self.lines

    def build(self) -> str:
        old = sorted({op.relation for op in self.plan.operators
                      if isinstance(op, Join) and op.old}) if not self.deleting else []
        if old:  # two variants: skip the excluded rows only when there are any
            test = " or ".join(self.excluded(r) for r in old)
            body = [f"        if {test}:", *self.body(True, 3), "        else:",
                    *self.body(False, 3)]
        else:
            body = self.body(False, 2)
        return "\n".join([
            "def run(seed, emit, exclude=NOTHING):", *self.prologue, "    try:", *body,
            "    except Exception as _e:",
            "        _b = {k[2:]: v for k, v in locals().items() if k.startswith('v_')}",
            "        raise PlanFailure(_e, _b) from _e", ""])


def _index_of(rows: set, cols: tuple[int, ...]) -> dict:
    index: dict = {}
    for row in rows:
        index.setdefault(index_key(row, cols), []).append(row)
    return index


def compile_plan(plan: Plan, tables: dict[str, Table], functions: dict[str, Callable],
                 mode: str = "insert", novel: str | None = None) -> Runner:
    gen = _Codegen(plan, tables, mode, novel)
    source = gen.build()
    for relation, cols in gen.indexes:  # create them now: maintained from the start
        tables[relation].index(cols)
    namespace = dict(gen.namespace)
    namespace.update({f"F_{name}": fn for name, fn in functions.items()})
    exec(compile(source, f"<plan rule {plan.rule} {plan.driver} {mode}>", "exec"), namespace)
    return namespace["run"]
