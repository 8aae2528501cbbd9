"""The local backend: compiles each plan to a Python function of nested loops over the local
store's hash indexes.

A prepared plan is ``run(seed, exclude={}, cap=UNCAPPED) -> rows``: for each seed (a driver
row, the values of pre-bound variables, or once for a ``Unit`` driver) it walks the
operators and collects the projected rows (a set; a list where the plan's projection is a
bag; a bag, then one row per group, under an ``Aggregate``), raising Overflow between seeds
once they pass ``cap`` (distinct rows, for a bag). A plan whose rows are a recursive
min/max's candidates also gets ``run.improve``, the same loops comparing each candidate with
its group's row as it is derived (``_Codegen.keep_best``). A seed whose
expressions fail is recorded and the batch goes on: the PlanFailure raised at the end
carries every failing seed. Joins on
the ``old`` version skip the rows in ``exclude[relation]``; ``prior`` joins also read the
rows removed in the step. Rows are unpacked into locals and index lookups are set up once per
call, before the loops. The generated source is registered with ``linecache``, so tracebacks
through it show its lines, and only the errors an expression can raise become a PlanFailure:
anything else is a bug of the engine's and propagates as it is.
"""

from __future__ import annotations

import dis
import hashlib
import itertools
import linecache
import re
import threading
import weakref
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, fields, is_dataclass
from functools import partial
from operator import itemgetter
from types import CodeType
from typing import TYPE_CHECKING, Any

from overlog import plan as p
from overlog.limits import recursion_room
from overlog.runtime.backend import (
    UNCAPPED,
    FunctionError,
    Incomparable,
    Overflow,
    PlanFailure,
    guard_functions,
)
from overlog.runtime.builtins import (
    ARITHMETIC,
    COMPARE,
    aggregate,
    evaluate_test,
    in_range,
    negate,
    truth,
    typed,
)
from overlog.runtime.store import EMPTY, LocalStore, Row, index_key
from overlog.values import FALSE, TRUE

if TYPE_CHECKING:
    from overlog.analysis import Relation

# what evaluating an expression may raise: arithmetic, comparing or combining values of the
# wrong types, bad values for a built-in (f_car of an empty list), errors of user functions
EXPRESSION_ERRORS = (ArithmeticError, TypeError, ValueError, FunctionError)


class LocalBackend:
    """The ``Backend`` protocol on a LocalStore. ``functions`` maps every function name the
    program may call to its implementation; those named in ``user`` are the user's (both are
    read when a plan is prepared)."""

    def __init__(self, store: LocalStore, functions: Mapping[str, Callable],
                 user: Collection[str] = frozenset()) -> None:
        self.store = store
        self.functions = functions
        self.user = user

    @classmethod
    def create(cls, relations: Mapping[str, Relation], functions: Mapping[str, Callable],
               user: Collection[str]) -> LocalBackend:
        """A BackendFactory: a local backend on a new store of ``relations``."""
        return cls(LocalStore(relations), functions, user)

    def prepare(self, plan: p.Plan) -> Callable[..., Any]:
        written = _written(plan, self.store)
        namespace = dict(written.namespace)
        store = self.store
        namespace.update({name: store.table(relation) for name, relation in written.tables})
        functions = guard_functions(self.functions, self.user)
        namespace.update({f"F_{name}": fn for name, fn in functions.items()})
        namespace.update({site: namespace[target] for site, target in written.sites})
        if written.plan is not plan:  # (equal: its nodes, spans aside, stand where these do)
            namespace["SITES"] = _Counterparts(namespace["SITES"], written.plan, plan)
        filename = written.filename
        with _lock:  # finalizers may run on any thread
            exec(written.code, namespace)
            run = namespace["run"]
            if "improve" in namespace:  # (a recursive min/max's candidates: see build)
                run.improve = namespace["improve"]
            # the source stays readable in tracebacks while some plan function uses it
            # (counted first: a finalizer running in between must not drop the entry)
            _users[filename] = _users.get(filename, 0) + 1
            if filename not in linecache.cache:
                linecache.cache[filename] = (len(written.source), None,
                                             written.source.splitlines(True), filename)
        weakref.finalize(run, _release, filename)
        return run

    def create_indexes(self, plan: p.Plan) -> None:
        """Build now the hash indexes ``plan`` reads (over the rows there: at the first step,
        none), so that they are maintained from the start rather than built over a large
        table by the first step that runs the plan (a removal's first over-deletion, say).
        Rows arriving in bulk from an offload drop them again (``Store.drop_indexes``)."""
        store = self.store
        for op in plan.operators:
            if isinstance(op, (p.Join, p.AntiJoin)):
                table = store.table(op.relation)
                if 0 < len(op.key) < table.arity:
                    table.index(op.key)

    def values(self, exprs: tuple[p.Expr, ...]) -> tuple:
        functions = guard_functions(self.functions, self.user)
        try:
            with recursion_room():
                return tuple(evaluate(e, functions) for e in exprs)
        except ExpressionFailed as failed:
            raise PlanFailure(failed.cause, {}, expr=failed.expr) from failed.cause


_NO_VARIABLES: Mapping[str, Any] = {}  # (a ground expression's)


class ExpressionFailed(Exception):
    """An expression failed: ``expr`` is the innermost, ``cause`` what it raised."""

    def __init__(self, expr: p.Expr, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.expr = expr
        self.cause = cause


def evaluate(expr: p.Expr, functions: Mapping[str, Callable],
             env: Mapping[str, Any] = _NO_VARIABLES) -> Any:
    """An expression's value, interpreted, its variables' values in ``env`` (facts: once
    each, no code to compile; explanations: runtime/provenance.py). Raises
    ExpressionFailed naming the expression that failed."""
    match expr:
        case p.Var(name=name):
            return env[name]
        case p.Const(value=value):
            return value
        case p.MakeList(items=items):
            return tuple(evaluate(i, functions, env) for i in items)
        case p.Test(op=op, args=args):
            apply = partial(evaluate_test, op, args, lambda a: evaluate(a, functions, env))
        case p.Arith(op=op, left=left, right=right):
            apply = partial(ARITHMETIC[op], evaluate(left, functions, env),
                            evaluate(right, functions, env))
        case p.Negate(operand=operand):
            apply = partial(negate, evaluate(operand, functions, env))
        case p.Call(function=function, args=args):
            apply = partial(functions[function], *(evaluate(a, functions, env) for a in args))
        case _:
            raise AssertionError(f"cannot evaluate {expr!r}")  # analysis ensures it
    try:
        return apply()
    except EXPRESSION_ERRORS as error:
        raise ExpressionFailed(expr, error) from error


_users: dict[str, int] = {}  # linecache entry -> how many live plan functions use it
_lock = threading.RLock()  # reentrant: a finalizer may run while it is held


def _release(filename: str) -> None:
    with _lock:
        _users[filename] -= 1
        if not _users[filename]:
            del _users[filename]
            linecache.cache.pop(filename, None)


def _failed(failures: list | None, error: BaseException, seed: tuple, local: dict[str, Any],
            bindings: dict[int, tuple[tuple[str, str], ...]], sites: Mapping[str | int, Any],
            ) -> list:
    """``failures`` (made on the first) with this seed's: (seed, cause, binding, the
    expression that failed or None)."""
    tb = error.__traceback__
    bound = bindings[tb.tb_lineno]  # type: ignore[union-attr]
    found = [] if failures is None else failures
    found.append((seed, error, {name: local[py] for py, name in bound},
                  _failing_site(tb, sites)))
    return found


_SITE = re.compile(r"_s\d+")
_CACHE = dis.opmap.get("CACHE", -1)  # (Python 3.11+: inline caches after an instruction)


def _failing_site(tb: Any, sites: Mapping[str | int, Any]) -> Any:
    """The expression whose call raised: the generated code calls each expression that may
    fail through a name of its own (``_Codegen.site``), and the traceback says which call
    of the line was running (its columns, Python 3.11+); else the comparison the line
    tests (``sites`` by line number), if it does. ``sites["lines"]``: the code's lines."""
    code = tb.tb_frame.f_code
    positions = getattr(code, "co_positions", None)
    ops, at = code.co_code, tb.tb_lasti
    while at > 0 and ops[at] == _CACHE:  # (the instruction whose inline caches hold it)
        at -= 2
    # (a comparison inline, `_s3(X) > Y`, starts where the call on its left does)
    if positions is not None and dis.opname[ops[at]].startswith("CALL"):
        line, _, column, _ = next(itertools.islice(positions(), tb.tb_lasti // 2, None),
                                  (None,) * 4)
        if line is not None and column is not None:
            found = _SITE.match(sites["lines"][line - 1], column)
            if found:
                node = sites[found.group()]
                if node.span is not None:  # (else as if it were called by its name)
                    return node
    return sites.get(tb.tb_lineno)


def _index_of(rows: set, cols: tuple[int, ...]) -> dict:
    index: dict = {}
    for row in rows:
        index.setdefault(index_key(row, cols), []).append(row)
    return index


def _distinct(rows: list[Row]) -> int:
    """Keep one of each row of a bag, in place (a bag plan's output past its cap: the cap
    counts distinct rows, as a set's would); how many there are."""
    rows[:] = set(rows)
    return len(rows)


@dataclass(frozen=True, slots=True)
class _Written:
    """A plan written as Python and compiled, for any store whose tables have the arities
    in ``arities``: the namespace but for the tables (``tables``: global -> relation) and
    the functions (``sites``: call name -> the global it calls, a function or a helper)."""

    plan: p.Plan  # the plan written (an equal one, spans aside, shares it)
    source: str
    filename: str
    code: CodeType
    namespace: dict[str, Any]
    tables: tuple[tuple[str, str], ...]
    sites: tuple[tuple[str, str], ...]
    arities: tuple[tuple[str, int], ...]


# plans written so far, the one used last at the end (at most WRITTEN_KEPT of them)
_WRITTEN: dict[p.Plan, _Written] = {}
WRITTEN_KEPT = 2048


def _written(plan: p.Plan, store: LocalStore) -> _Written:
    """``plan`` written for ``store``, once per process for plans alike (engines of one
    program, the nodes of a simulation, a test's engines, share it): what differs between
    engines, their tables and functions, is bound by each in a namespace of its own."""
    with _lock:
        found = _WRITTEN.pop(plan, None)
    if found is None or any(store.table(relation).arity != arity
                            for relation, arity in found.arities):
        found = _write(plan, store)
    with _lock:
        _WRITTEN[plan] = found
        if len(_WRITTEN) > WRITTEN_KEPT:
            del _WRITTEN[next(iter(_WRITTEN))]
    return found


class _Counterparts:
    """The ``SITES`` of a plan written for an equal one (``written``): the nodes it names
    are ``plan``'s, found (all at once) when a failure first names one. Spans take no part
    in a plan's equality, and an error reports the span of the engine's own node."""

    __slots__ = ("found", "plan", "sites", "written")

    def __init__(self, sites: dict[str | int, Any], written: p.Plan, plan: p.Plan) -> None:
        self.sites = sites
        self.written = written
        self.plan = plan
        self.found: dict[int, Any] | None = None  # id of a node of written's -> plan's

    def __getitem__(self, key: str | int) -> Any:
        node = self.sites[key]
        if key == "lines":
            return node
        if self.found is None:
            self.found = _counterparts(self.written, self.plan, {
                id(each) for name, each in self.sites.items() if name != "lines"})
        return self.found[id(node)]

    def get(self, key: str | int) -> Any:
        return self[key] if key in self.sites else None


def _counterparts(written: Any, plan: Any, nodes: set[int]) -> dict[int, Any]:
    """For each of ``nodes`` (ids of nodes of ``written``, a plan equal to ``plan``), the
    node of ``plan`` standing where it stands (a walk of both in step)."""
    found: dict[int, Any] = {}
    pairs = [(written, plan)]
    while pairs:
        ours, theirs = pairs.pop()
        if id(ours) in nodes:
            found.setdefault(id(ours), theirs)
        if type(ours) is tuple:  # (not a Span: spans may differ, or be None in one)
            pairs.extend(zip(ours, theirs, strict=True))
        elif is_dataclass(ours):
            pairs.extend((getattr(ours, f.name), getattr(theirs, f.name))
                         for f in fields(ours))
    return found


def _write(plan: p.Plan, store: LocalStore) -> _Written:
    """``plan`` written as Python for a store of ``store``'s arities, and compiled."""
    gen = _Codegen(plan, store)
    with recursion_room():
        source = gen.build()
    namespace = gen.namespace
    namespace["SITES"] = {**{site: node for site, (_, node) in gen.sites.items()},
                          **gen.filters, "lines": source.splitlines()}
    filename = f"<overlog plan {hashlib.sha1(source.encode()).hexdigest()[:12]}>"
    return _Written(plan, source, filename, compile(source, filename, "exec"), namespace,
                    tuple(gen.tables.items()),
                    tuple((site, target) for site, (target, _) in gen.sites.items()),
                    tuple((relation, store.table(relation).arity)
                          for relation in sorted(gen.read)))


def _aggregate(rows: list[Row], position: int, function: str) -> list[Row]:
    """One row per group of the bag ``rows``: every column but ``position`` is the group."""
    last = position == len(rows[0]) - 1 if rows else True
    if function == "count" and last:  # counted in C, the group a slice of each row
        return [(*key, n) for key, n in Counter(map(itemgetter(slice(position)),
                                                      rows)).items()]
    bags: defaultdict[Row, list] = defaultdict(list)
    if last:
        for row in rows:
            bags[row[:position]].append(row[position])
    else:
        for row in rows:
            bags[row[:position] + row[position + 1:]].append(row[position])
    try:
        return [(*key[:position], aggregate(function, values), *key[position:])
                for key, values in bags.items()]
    except EXPRESSION_ERRORS as error:
        raise PlanFailure(error, {}) from error


HOIST = 40  # nesting of generated expressions past which a subexpression is hoisted
STAGE_LOOPS = 12  # joins nested in one stage of a plan (Python allows 20 nested blocks)
SMALL = 10**15  # integers written into generated source; larger ones are constants
# the helper doing each operator's arithmetic where it is not int with int
_HELPERS = {"+": "_plus", "-": "_minus", "*": "_times", "/": "_div", "%": "_mod",
            "<<": "_shl", ">>": "_shr"}


class _Codegen:
    """Writes a plan as the source of a Python function, ``run`` (and ``improve``, for a
    recursive min/max's candidates)."""

    def __init__(self, plan: p.Plan, store: LocalStore) -> None:
        self.plan = plan
        self.store = store
        self.namespace: dict[str, Any] = {
            "EMPTY": EMPTY, "NOTHING": {}, "ONCE": ((),), "_neg": negate,
            "_truth": truth, "_in_range": in_range, "_typed": typed, "TRUE": TRUE,
            "FALSE": FALSE,
            **{f"_cmp{i}": fn for i, fn in enumerate(COMPARE.values())},
            **{_HELPERS[op]: fn for op, fn in ARITHMETIC.items()},
            "_chain": itertools.chain, "_index_of": _index_of, "_aggregate": _aggregate,
            "_distinct": _distinct,
            "PlanFailure": PlanFailure, "_failed": _failed,
            "Overflow": Overflow, "UNCAPPED": UNCAPPED, "Incomparable": Incomparable,
            "EXPRESSION_ERRORS": EXPRESSION_ERRORS,
        }
        self.prologue: list[str] = []  # set-up lines of the locals, before the loops
        self.locals: dict[tuple, str] = {}
        self.vars: dict[str, str] = {}  # plan variable -> Python local
        # the loops' lines, each with what a failure on it reports (``emit_line``)
        self.lines: list[tuple[str, tuple[tuple[str, ...], p.Filter | None] | None]] = []
        self.bound: list[str] = []  # plan variables bound so far, in order
        self.depth = 0
        self.counter = 0
        self.checked = False  # writing the variant that skips excluded (delta) rows
        self.improving = False  # writing ``improve``: see ``keep_best``
        self.sites: dict[str, tuple[str, p.Expr]] = {}  # call name -> (callee, expression)
        self.filters: dict[int, p.Filter] = {}  # line -> the comparison it tests
        self.calls = False  # whether the line being written calls a function
        self.tables: dict[str, str] = {}  # global -> the relation whose table it names
        self.read: set[str] = set()  # the relations whose tables or arities the code uses

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def var(self, name: str) -> str:
        local = self.vars.get(name)
        if local is None:
            local = self.vars[name] = f"v{len(self.vars)}"
        return local

    def const(self, value: Any) -> str:
        name = self.name("c")
        self.namespace[name] = value
        return name

    def local(self, what: tuple, prefix: str, initializer: str) -> str:
        """The local set up in the prologue for ``what`` (one per distinct ``what``)."""
        name = self.locals.get(what)
        if name is None:
            name = self.locals[what] = self.name(prefix)
            self.prologue.append(f"    {name} = {initializer}")
        return name

    def table(self, relation: str) -> str:
        """The global naming ``relation``'s table in the function's namespace."""
        name = f"t_{relation}"
        self.tables[name] = relation  # (bound by each engine: LocalBackend.prepare)
        self.read.add(relation)
        return name

    def arity(self, relation: str) -> int:
        self.read.add(relation)
        return self.store.table(relation).arity

    def rows(self, relation: str, version: str = "rows") -> str:
        """A local bound to the table's ``rows`` (or ``removed``) set: updated in place."""
        return self.local((version, relation), version, f"{self.table(relation)}.{version}")

    def index(self, relation: str, key: tuple[int, ...]) -> str:
        return self.local(("index", relation, key), "ix",
                          f"{self.table(relation)}.index({key!r})")

    def removed_index(self, relation: str, key: tuple[int, ...]) -> str:
        return self.local(("removed index", relation, key), "rx",
                          f"_index_of({self.table(relation)}.removed, {key!r})")

    def excluded(self, relation: str) -> str:
        return self.local(("excluded", relation), "dx", f"exclude.get({relation!r}, EMPTY)")

    def site(self, callee: str, node: p.Expr) -> str:
        """The name through which the code calls ``callee`` for the expression ``node``:
        one of its own, so that a failure can name the expression (``_failing_site``; one
        without a span too, so that the code does not depend on spans: see ``_written``)."""
        name = f"_s{len(self.sites)}"
        self.sites[name] = (callee, node)
        return name

    def expr(self, term: p.Expr) -> str:
        """Python for an expression. A subexpression nested deeper than HOIST goes on a line
        of its own, into a temporary (Python refuses deeply nested source)."""
        return self._expr(term)[0]

    def _expr(self, term: p.Expr) -> tuple[str, int]:
        match term:
            case p.Var(name=name):
                return self.var(name), 0
            case p.Const(value=value):
                if (value.__class__ is str or value is None
                        or (value.__class__ is int and -SMALL < value < SMALL)):
                    return repr(value), 0
                return self.const(value), 0
            case p.Arith(op=op, left=left, right=right):
                (a, da), (b, db) = self._expr(left), self._expr(right)
                text = self.arith(op, ((left, a), (right, b)), term)
                depth = max(da, db) + 1
            case p.Negate(operand=operand):
                text, depth = self._expr(operand)
                text, depth = self.arith("-", ((operand, text),), term), depth + 1
            case p.Call(function=function, args=args):
                parts = [self._expr(a) for a in args]
                self.calls = True
                text = f"{self.site(f'F_{function}', term)}" \
                    f"({', '.join(part for part, _ in parts)})"
                depth = max((d for _, d in parts), default=0) + 1
            case p.MakeList(items=items):
                parts = [self._expr(i) for i in items]
                text = "(" + "".join(f"{part}, " for part, _ in parts) + ")"
                depth = max((d for _, d in parts), default=0) + 1
            case p.Test(op=op, args=args):
                parts = [self._expr(a) for a in args]
                texts = [part for part, _ in parts]
                depth = max(d for _, d in parts) + 1
                if op in ("&&", "||"):  # Python's `and`/`or`: the second only if needed
                    word, truth_ = "and" if op == "&&" else "or", self.site("_truth", term)
                    text = (f"(TRUE if {truth_}({texts[0]}, {op!r}) {word} "
                            f"{truth_}({texts[1]}, {op!r}) else FALSE)")
                elif op == "!":
                    text = f"(FALSE if {self.site('_truth', term)}({texts[0]}, '!') else TRUE)"
                elif op in COMPARE:
                    compare = self.site(f"_cmp{list(COMPARE).index(op)}", term)
                    text = f"{compare}({texts[0]}, {texts[1]})"
                elif op == "type":
                    text = f"{self.site('_typed', term)}({', '.join(texts)})"
                else:
                    text = (f"{self.site('_in_range', term)}({texts[0]}, {texts[1]}, "
                            f"{texts[2]}, {op[2:]!r})")
            case _:
                raise TypeError(f"cannot evaluate {term!r}")
        if depth > HOIST:
            temp = self.name("_t")
            self.emit_line(f"{temp} = {text}", True)
            return temp, 0
        return text, depth

    def arith(self, op: str, operands: tuple[tuple[p.Expr, str], ...], node: p.Expr) -> str:
        """Python for an operator (one operand: negation): int with int inline, anything
        else through the helper that gives it Overlog's meaning (``runtime/builtins.py``).
        An operand that is not a variable or a literal is evaluated once, into a temporary."""
        helper = self.site("_neg" if len(operands) == 1 else _HELPERS[op], node)
        if op in ("/", "%", "<<", ">>") or any(
                isinstance(term, p.Const) and term.value.__class__ is not int
                for term, _ in operands):
            return f"{helper}({', '.join(text for _, text in operands)})"
        tests, names = [], []
        for term, text in operands:
            if isinstance(term, p.Const):  # an int
                names.append(text)
                continue
            if not isinstance(term, p.Var):
                temp = self.name("_t")
                text, term_test = temp, f"({temp} := {text})"
            else:
                term_test = text
            names.append(text)
            tests.append(f"{term_test}.__class__")
        inline = f"{op}{names[0]}" if len(names) == 1 else f"{names[0]} {op} {names[1]}"
        if not tests:
            return f"({inline})"
        return f"({inline} if {' is '.join(tests)} is int else {helper}({', '.join(names)}))"

    def tuple_expr(self, terms: tuple[p.Expr, ...]) -> str:
        return self.expr(p.MakeList(items=terms))

    def key_expr(self, terms: tuple[p.Expr, ...]) -> str:
        return self.expr(terms[0]) if len(terms) == 1 else self.tuple_expr(terms)

    def emit_line(self, text: str, evaluates: bool = False,
                  node: p.Filter | None = None) -> None:
        """A line of the loops; ``evaluates`` marks one that evaluates an expression (an
        error raised elsewhere is the engine's, not the program's): the variables bound
        there are what a failure on it reports, with the comparison it tests (``node``) as
        the expression that failed when no call on the line did. In a plan that finds
        rows (``finds``), a binding failing on a line that calls no function is passed
        over: operators give the same result on the same values, so it failed when its
        rows would have been derived too (a function, a user's above all, need not)."""
        indent = "    " * self.depth
        calls, self.calls = self.calls, False
        if evaluates and self.plan.finds and not calls:
            self.lines += [(indent + "try:", None), (indent + "    " + text, None),
                           (indent + "except EXPRESSION_ERRORS:", None),
                           (indent + "    continue", None)]
            return
        self.lines.append((indent + text, (tuple(self.bound), node) if evaluates else None))

    def unpack(self, arity: int, binds: p.Columns) -> tuple[str, list[str]]:
        """The target unpacking a row into the bound variables, and each column's name."""
        names = [f"_u{self.depth}_{c}" for c in range(arity)]
        for column, var in binds:
            names[column] = self.var(var)
            self.bound.append(var)
        return "(" + "".join(f"{n}, " for n in names) + ")", names

    def open_loop(self, source: str, arity: int, binds: p.Columns, checks: p.Checks,
                  excluded: str | None = None) -> None:
        """``for`` over the rows of ``source``, unpacked into the bound variables, skipping
        the rows in the set named ``excluded``."""
        target, names = self.unpack(arity, binds)
        self.loops += 1
        if excluded is None:
            self.emit_line(f"for {target} in {source}:")
            self.depth += 1
        else:
            row = self.name("r")
            self.emit_line(f"for {row} in {source}:")
            self.depth += 1
            self.emit_line(f"if {row} in {excluded}: continue")
            self.emit_line(f"{target} = {row}")
        self.check(names, checks)

    def check(self, names: list[str], checks: p.Checks) -> None:
        for column, term in checks:
            self.emit_line(f"if {names[column]} != {self.expr(term)}: continue", True)

    def driver(self, driver: p.Driver) -> str:
        """The loop over the seeds; each seed's work is guarded, so that a failing seed is
        recorded and the others go on (one pass finds every failing seed). Returns the
        expression of the current seed."""
        match driver:
            case p.Scan():
                target, names = self.unpack(self.arity(driver.relation),
                                            driver.binds)
                checks = driver.checks
            case p.Seed(vars=variables):
                target, names = self.unpack(len(variables), tuple(enumerate(variables)))
                checks = ()
            case _:
                target, names, checks = "()", [], ()
        self.emit_line(f"for {target} in {'ONCE' if isinstance(driver, p.Unit) else 'seed'}:")
        self.depth += 1
        self.emit_line("try:")
        self.depth += 1
        self.check(names, checks)
        return target

    def join(self, op: p.Join) -> None:
        arity = self.arity(op.relation)
        prior = op.version is p.Version.PRIOR
        skip = op.version is p.Version.OLD and self.checked
        if op.key == tuple(range(arity)):  # every column bound: a membership test
            rows = self.rows(op.relation)
            key = self.tuple_expr(op.key_terms)
            if prior:
                removed = self.rows(op.relation, "removed")
                self.emit_line(f"if not ({key} in {rows} or {key} in {removed}): continue",
                               True)
            elif skip:
                self.emit_line(f"_r = {key}", True)
                self.emit_line(f"if _r not in {rows} or _r in "
                               f"{self.excluded(op.relation)}: continue")
            else:
                self.emit_line(f"if {key} not in {rows}: continue", True)
            return
        if not op.key:
            rows = self.rows(op.relation)
            source = f"_chain({rows}, {self.rows(op.relation, 'removed')})" if prior else rows
        else:
            key = self.key_expr(op.key_terms)
            if not all(isinstance(t, (p.Var, p.Const)) for t in op.key_terms):
                computed = self.name("_k")  # evaluated on its own line, not in the loop's
                self.emit_line(f"{computed} = {key}", True)
                key = computed
            source = f"{self.index(op.relation, op.key)}.get({key}, EMPTY)"
            if prior:
                rx = self.removed_index(op.relation, op.key)
                source = f"_chain({source}, {rx}.get({key}, EMPTY))"
        self.open_loop(source, arity, op.binds, op.checks,
                       self.excluded(op.relation) if skip else None)

    def antijoin(self, op: p.AntiJoin) -> None:
        rows = self.rows(op.relation)
        arity = self.arity(op.relation)
        if op.key == tuple(range(arity)):
            self.emit_line(f"if {self.tuple_expr(op.key_terms)} in {rows}: continue", True)
        elif not op.key:
            self.emit_line(f"if {rows}: continue")
        else:
            ix = self.index(op.relation, op.key)
            self.emit_line(f"if {self.key_expr(op.key_terms)} in {ix}: continue", True)

    def body(self, checked: bool, depth: int) -> list[tuple[str, tuple[str, ...] | None]]:
        self.lines, self.depth, self.checked, self.bound = [], depth, checked, []
        self.base, self.loops = depth, 0
        self.seed = self.driver(self.plan.driver)
        for op in self.plan.operators:
            match op:
                case p.Join():
                    if self.loops == STAGE_LOOPS:
                        self.next_stage()
                    self.join(op)
                case p.AntiJoin():
                    self.antijoin(op)
                case p.Filter(op=cmp, left=left, right=right):
                    self.emit_line(f"if not ({self.expr(left)} {cmp} "
                                   f"{self.expr(right)}): continue", True, op)
                case p.Let(var=var, expr=expr):
                    self.emit_line(f"{self.var(var)} = {self.expr(expr)}", True)
                    self.bound.append(var)
        project = self.plan.project
        if self.improving:
            self.keep_best(project)
            self.close_stage()
            return self.lines
        head = self.tuple_expr(project.terms)
        if project.unless_in is None:
            self.emit_line(f"_add({head})", True)
        else:
            self.emit_line(f"_h = {head}", True)
            self.emit_line(f"if _h not in {self.rows(project.unless_in)}: _add(_h)")
        self.close_stage()
        return self.lines

    def close_stage(self) -> None:
        """End the loops of the seeds (or of a stage's bindings): record what failed."""
        self.depth = self.base + 1
        self.emit_line("except EXPRESSION_ERRORS as _e:")
        self.emit_line("    if _e.__traceback__.tb_lineno not in BINDINGS:")
        self.emit_line("        raise  # not from an expression: a bug of the engine's")
        self.emit_line(f"    failures = _failed(failures, _e, {self.seed}, locals(), BINDINGS, "
                       "SITES)")
        if self.improving:  # the groups improved: distinct already
            self.emit_line("if len(_improved) > cap: raise Overflow(len(_improved))")
        elif self.plan.project.bag and self.plan.aggregate is None:  # distinct rows count
            self.emit_line("if len(out) > cap and _distinct(out) > cap: raise Overflow(len(out))")
        else:
            self.emit_line("if len(out) > cap: raise Overflow(len(out))")

    def next_stage(self) -> None:
        """Python nests at most 20 blocks: a plan with more joins runs in stages, each
        collecting the bindings (and the seed they came from) that the next one loops over."""
        stage = self.local(("stage", len(self.locals)), "stage", "[]")
        names = [self.var(v) for v in dict.fromkeys(self.bound)]
        row = "(" + "".join(f"{n}, " for n in [self.seed, *names]) + ")"
        self.emit_line(f"{stage}.append({row})")
        self.close_stage()
        self.depth = self.base
        self.seed = "_seed"
        self.emit_line(f"for (_seed, {''.join(f'{n}, ' for n in names)}) in {stage}:")
        self.emit_line("    try:")
        self.depth += 2
        self.loops = 0

    def copies(self) -> bool:
        """Whether the plan only copies its seed rows: a rule whose head repeats its one
        atom, such as ``best(Y, min<C>) :- hop(Y, C)`` or ``reach(X, Y) :- link(X, Y)``."""
        plan, driver = self.plan, self.plan.driver
        if plan.operators or plan.aggregate is not None or not isinstance(driver, p.Scan) \
                or driver.checks:
            return False
        arity = self.arity(driver.relation)
        return [column for column, _ in driver.binds] == list(range(arity)) and \
            plan.project.terms == tuple(p.Var(name=var) for _, var in driver.binds)

    def keep_best(self, project: p.Project, built: str | None = None) -> None:
        """Instead of collecting a recursive min/max's candidate row, compare it with its
        group's row at once (``improve``): a row better than the group's (or the first of
        its group) replaces it in ``_best`` and ``_improved``, and ``_before`` keeps the
        group's row from before the first replacement (None: it had none). Values of kinds
        that do not compare raise Incomparable (the fixpoint's E301, as when it compares
        them itself: no expression of the program's failed) once the seeds are done, if no
        expression failed: as when the candidates were listed first. ``built``: the local
        holding the row already."""
        best = project.best
        assert best is not None
        position, terms = best.position, project.terms
        if built is None and all(isinstance(t, (p.Var, p.Const)) for t in terms):  # (no
            # row built to compare)
            names = [self.expr(t) for t in terms]
            value, row = names[position], self.tuple_expr(terms)
            others = names[:position] + names[position + 1:]
            key = others[0] if len(others) == 1 else "(" + "".join(f"{n}, " for n in others) + ")"
        else:
            if built is None:
                built = "_h"
                self.emit_line(f"_h = {self.tuple_expr(terms)}", True)
            value, row = f"{built}[{position}]", built
            key = f"{built}[{1 - position}]" if len(terms) == 2 else \
                f"{built}[:{position}] + {built}[{position + 1}:]"
        if not key.isidentifier():  # (a tuple, a slice, a constant: computed once)
            self.emit_line(f"_k = {key}")
            key = "_k"
        self.emit_line(f"_held = _current({key})")
        self.emit_line("try:")
        self.emit_line(f"    _better = _held is None or {value} "
                       f"{'<' if best.function == 'min' else '>'} _held[{position}]")
        self.emit_line("except TypeError as _e:")
        self.emit_line("    _better = False")
        self.emit_line("    if _incomparable is None: _incomparable = Incomparable(str(_e))")
        self.emit_line("if _better:")
        self.emit_line(f"    if {key} not in _before: _before[{key}] = _held")
        self.emit_line(f"    _best[{key}] = _improved[{key}] = {row}")

    def variants(self, depth: int) -> list[tuple[str, Any]]:
        """The loops; two variants where the plan joins the ``old`` version of relations:
        one skipping the excluded rows, taken only when there are any."""
        old = sorted({op.relation for op in self.plan.operators
                      if isinstance(op, p.Join) and op.version is p.Version.OLD})
        if not old:
            return self.body(False, depth)
        test = " or ".join(self.excluded(r) for r in old)
        return [(f"{'    ' * depth}if {test}:", None), *self.body(True, depth + 1),
                (f"{'    ' * depth}else:", None), *self.body(False, depth + 1)]

    def build(self) -> str:
        """The source of ``run``; and of ``improve`` where the plan's rows are a recursive
        min/max's candidates (``improve(seed, exclude, cap, best, before, improved)``:
        ``run``'s loops comparing each row with its group's in ``best``, as the fixpoint
        would: see ``keep_best``)."""
        plan, aggregate = self.plan, self.plan.aggregate
        improves = plan.project.best is not None and aggregate is None and not plan.finds
        improve = ["def improve(seed, exclude, cap, _best, _before, _improved):",
                   "    _current = _best.get"]
        if self.copies():  # no loop: the rows as a set (without those the head holds)
            unless = self.plan.project.unless_in
            rows = f"set(seed).difference({self.rows(unless)})" if unless else "set(seed)"
            source = ["def run(seed, exclude=NOTHING, cap=UNCAPPED):",
                      *self.prologue, f"    out = {rows}",
                      "    if len(out) > cap: raise Overflow(len(out))",
                      "    return out"]
            if improves:
                self.lines, self.depth = [], 2
                self.keep_best(plan.project, "_r")
                source += [*improve, "    _incomparable = None", "    for _r in seed:",
                           *(line for line, _ in self.lines),
                           "    if len(_improved) > cap: raise Overflow(len(_improved))",
                           "    if _incomparable is not None: raise _incomparable",
                           "    return _improved"]
            return "\n".join([*source, ""])
        body = self.variants(1)
        if improves:
            self.improving = True
            improving = self.variants(1)
            self.improving = False
        if aggregate is None and not self.plan.project.bag:
            start, result = ["    out = set()", "    _add = out.add"], "out"
        elif aggregate is None:  # every binding's row, duplicates kept
            start, result = ["    out = []", "    _add = out.append"], "out"
        else:
            start = ["    out = []", "    _add = out.append"]
            result = f"_aggregate(out, {aggregate.position}, {aggregate.function!r})"
        failed = [("    if failures:", None),
                  ("        raise PlanFailure(failures[0][1], failures[0][2], failures, "
                   "expr=failures[0][3]) from failures[0][1]", None)]
        lines = [(line, None) for line in ["def run(seed, exclude=NOTHING, cap=UNCAPPED):",
                                           *start, "    failures = None", *self.prologue]]
        lines += [*body, *failed, (f"    return {result}", None)]
        if improves:
            lines += [(line, None) for line in [*improve, "    failures = None",
                                                "    _incomparable = None", *self.prologue]]
            lines += [*improving, *failed,
                      ("    if _incomparable is not None: raise _incomparable", None),
                      ("    return _improved", None)]
        # by line number in the source: the user variables bound where an expression is
        # evaluated, as (Python local, name) pairs
        evaluating = [(i + 1, reports) for i, (_, reports) in enumerate(lines)
                      if reports is not None]
        self.namespace["BINDINGS"] = {
            line: tuple((self.vars[v], v) for v in bound if not v.startswith("#"))
            for line, (bound, _) in evaluating}
        self.filters = {line: node for line, (_, node) in evaluating if node is not None}
        return "\n".join([*(line for line, _ in lines), ""])
