"""The local backend: compiles a plan to a Python function of nested loops over hash indexes.

``compile_plan(plan, tables, functions, mode)`` returns ``run(seed, emit, exclude)``: for
each seed tuple (a driver row, or the values of the pre-bound variables) it calls
``emit(head_row)`` once per binding; joins marked ``old`` skip the rows in
``exclude[relation]`` (the current delta). ``mode="delete"`` reads every table as it was
before the step's removals (rows plus removed rows) and ignores anti-joins: the
over-approximation DRed's over-deletion phase needs.
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
    def __init__(self, plan: Plan, tables: dict[str, Table], mode: str) -> None:
        self.plan = plan
        self.tables = tables
        self.mode = mode
        self.namespace: dict[str, Any] = {
            "EMPTY": EMPTY, "NOTHING": {}, "_div": divide, "_mod": remainder, "INF": math.inf,
            "_chain": itertools.chain, "_index_of": _index_of, "PlanFailure": PlanFailure,
        }
        self.prologue: list[str] = []
        self.lines: list[str] = []
        self.depth = 2
        self.counter = 0
        self.indexes: list[tuple[str, tuple[int, ...]]] = []

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
                return "(" + "".join(f"{self.expr(i)}, " for i in items) + ")"
        raise TypeError(f"cannot evaluate {term!r}")

    def emit_line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def binds_and_checks(self, row: str, binds, checks) -> None:
        for column, var in binds:
            self.emit_line(f"v_{var} = {row}[{column}]")
        for column, term in checks:
            self.emit_line(f"if {row}[{column}] != {self.expr(term)}: continue")

    def scan(self, op: Scan) -> None:
        self.emit_line("for r0 in seed:")
        self.depth += 1
        self.binds_and_checks("r0", op.binds, op.checks)

    def key_expr(self, terms) -> str:
        if len(terms) == 1:
            return self.expr(terms[0])
        return "(" + "".join(f"{self.expr(t)}, " for t in terms) + ")"

    def join(self, op: Join) -> None:
        table = self.table(op.relation)
        arity = self.tables[op.relation].arity
        row = self.name("r")
        old = self.mode == "delete"
        if len(op.key) == arity and op.key == tuple(range(arity)):
            key = "(" + "".join(f"{self.expr(t)}, " for t in op.key_terms) + ")"
            test = f"{key} in {table}.rows" + (f" or {key} in {table}.removed" if old else "")
            self.emit_line(f"{row} = {key}")
            if op.old and not old:
                dx = self.name("dx")
                self.prologue.append(f"{dx} = exclude.get({op.relation!r}, EMPTY)")
                test += f" and {row} not in {dx}"
            self.emit_line(f"if not ({test}): continue")
            return
        if not op.key:
            source = f"_chain({table}.rows, {table}.removed)" if old else f"{table}.rows"
        else:
            ix = self.name("ix")
            self.prologue.append(f"{ix} = {table}.index({op.key!r})")
            self.indexes.append((op.relation, op.key))
            source = f"{ix}.get({self.key_expr(op.key_terms)}, EMPTY)"
            if old:
                rx = self.name("rx")
                self.prologue.append(f"{rx} = _index_of({table}.removed, {op.key!r})")
                source = f"_chain({source}, {rx}.get({self.key_expr(op.key_terms)}, EMPTY))"
        self.emit_line(f"for {row} in {source}:")
        self.depth += 1
        if op.old and not old:
            dx = self.name("dx")
            self.prologue.append(f"{dx} = exclude.get({op.relation!r}, EMPTY)")
            self.emit_line(f"if {row} in {dx}: continue")
        self.binds_and_checks(row, op.binds, op.checks)

    def antijoin(self, op: AntiJoin) -> None:
        if self.mode == "delete":
            return
        table = self.table(op.relation)
        arity = self.tables[op.relation].arity
        if op.key == tuple(range(arity)):
            key = "(" + "".join(f"{self.expr(t)}, " for t in op.key_terms) + ")"
            self.emit_line(f"if {key} in {table}.rows: continue")
        elif not op.key:
            self.emit_line(f"if {table}.rows: continue")
        else:
            ix = self.name("ix")
            self.prologue.append(f"{ix} = {table}.index({op.key!r})")
            self.indexes.append((op.relation, op.key))
            self.emit_line(f"if {self.key_expr(op.key_terms)} in {ix}: continue")

    def build(self) -> str:
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
        head = "(" + "".join(f"{self.expr(t)}, " for t in self.plan.head) + ")"
        self.emit_line(f"emit({head})")
        body = "\n".join(self.lines)
        prologue = "\n".join("    " + line for line in self.prologue)
        return (f"def run(seed, emit, exclude=NOTHING):\n{prologue}\n    try:\n{body}\n"
                "    except Exception as _e:\n"
                "        _b = {k[2:]: v for k, v in locals().items() if k.startswith('v_')}\n"
                "        raise PlanFailure(_e, _b) from _e\n")


def _index_of(rows: set, cols: tuple[int, ...]) -> dict:
    index: dict = {}
    for row in rows:
        index.setdefault(index_key(row, cols), []).append(row)
    return index


def compile_plan(plan: Plan, tables: dict[str, Table], functions: dict[str, Callable],
                 mode: str = "insert") -> Runner:
    gen = _Codegen(plan, tables, mode)
    source = gen.build()
    for relation, cols in gen.indexes:  # create them now: maintained from the start
        tables[relation].index(cols)
    namespace = dict(gen.namespace)
    namespace.update({f"F_{name}": fn for name, fn in functions.items()})
    exec(compile(source, f"<plan rule {plan.rule} {plan.driver} {mode}>", "exec"), namespace)
    return namespace["run"]
