"""The Spark backend (runtime/spark.py): strata of view rules run on Spark give exactly what
the local backend gives (every evaluation golden, random programs and changes), and what
Spark cannot run as the local backend would runs locally, with its reason. One SparkSession
serves the whole test run (local[2]); deselect with ``-m 'not spark'``."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from overlog import Engine
from overlog.errors import CompileError
from overlog.runtime import spark
from tests.goldens import compare, discover, golden_id, run_cli
from tests.runtime.alike import ALIKE, assert_alike, run_alike
from tests.runtime.test_recursive_aggregates import TEMPLATES as MIN_MAX
from tests.runtime.test_recursive_aggregates import batches as min_max_batches
from tests.runtime.test_recursive_aggregates import edges
from tests.runtime.test_views_property import DECLS, TEMPLATES, operations
from tests.test_golden_eval import _args

pytestmark = pytest.mark.spark
ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module", autouse=True)
def session() -> None:
    spark.session()  # started once, kept for the process


@pytest.mark.parametrize("path", discover("eval"), ids=golden_id)
def test_golden_runs_alike_on_spark(path: Path) -> None:
    code, out, err = run_cli(["run", path.name, "--format", "jsonl", "--backend", "spark",
                              *_args(path)], cwd=path.parent)
    compare(path, ".expected", out, False)
    compare(path, ".err", err, False)
    assert code == (3 if "error[E3" in err else 0)


TC = "reach(X, Y) :- link(X, Y).\nreach(X, Z) :- link(X, Y), reach(Y, Z).\n"


def test_a_recursive_stratum_runs_on_spark_and_follows_changes() -> None:
    engine = Engine(TC + "far(X, Y) :- reach(X, Y), notin link(X, Y).\n", backend="spark")
    for row in [(1, 2), (2, 3), (3, 4), (4, 2)]:
        engine.insert("link", row)
    (report,) = engine.run()
    assert engine.spark.local == {}
    assert report.firings == {"stratum 0 on Spark": 12, "stratum 1 on Spark": 8}
    assert engine.rows("far") == [(1, 3), (1, 4), (2, 2), (2, 4), (3, 2), (3, 3), (4, 3),
                                  (4, 4)]
    engine.delete("link", (4, 2))
    engine.insert("link", (4, 5))
    engine.run()
    assert engine.rows("reach") == [(1, 2), (1, 3), (1, 4), (1, 5), (2, 3), (2, 4), (2, 5),
                                    (3, 4), (3, 5), (4, 5)]
    assert engine.rows("far") == [(1, 3), (1, 4), (1, 5), (2, 4), (2, 5), (3, 5)]


def test_values_keep_their_types_and_arithmetic_its_meaning() -> None:
    program = ('v(1, 2.5, "a", true). v(-7, 0.5, "b", false). v(7, -1.0, "c", null).\n'
               "w(X / 2, X % 2, F * 2.0, S + \"!\", B) :- v(X, F, S, B).\n"
               "one(X) :- v(X, _, _, _), X == 1.\nyes(S) :- v(_, _, S, B), B == true.\n"
               "nul(S) :- v(_, _, S, B), B == null.\nless(S) :- v(X, F, S, _), F < 1.0.\n")
    here, there = Engine(program, backend="local"), Engine(program, backend="spark")
    here.run()
    there.run()
    assert there.spark.local == {}
    for name in ("w", "one", "yes", "nul", "less"):
        assert there.rows(name) == here.rows(name), name
    assert there.rows("w") == [(-3, -1, 1.0, "b!", False), (0, 1, 5.0, "a!", True),
                               (3, 1, -2.0, "c!", None)]
    assert [type(v) for v in there.rows("w")[0]] == [int, int, float, str, bool]


@pytest.mark.parametrize(("program", "reason"), [
    ('q(1). q(2).\np(X, Y) :- q(X), Y := f_car([X]).\n', "f_car() has no Spark equivalent"
                                                          " yet"),
    ("q(1). q([1, 2]).\np(X) :- q(X).\n", "a column holding bigint and binary values"),
    ("q(1, [1]). q(2, [2]).\np(X) :- q(X, L), L < [2].\n", "ordering lists"),
    ("q(1, [-0.0]).\np(X, L) :- q(X, L).\n",
     "a list Spark cannot hold as it is (-0.0 in a list)"),
    ("q(1, [1]).\np(X, f_sum(L)) :- q(X, L).\n", "a list passed to f_sum()"),
    ('q(1). q("a").\np(X) :- q(X).\n', "a column holding bigint and string values"),
    ("q(1, 2.5).\np(X) :- q(X, Y), X < Y.\n", "comparing bigint with double values"),
    ("q(-0.0).\np(X) :- q(X).\n", "-0.0 (Spark writes it 0.0)"),
    ("q().\np(1) :- q().\n", "`q` has no fields"),
])
def test_what_spark_cannot_run_alike_runs_locally(program: str, reason: str) -> None:
    functions = {"f_sum": _sum}
    here = Engine(program, backend="local", functions=functions)
    there = Engine(program, backend="spark", functions=functions)
    here.run()
    there.run()
    assert list(there.spark.local.values()) == [reason]
    assert there.rows("p") == here.rows("p")


def _sum(items: tuple) -> int:
    return sum(items)


PATHS = ("q(1, 2). q(2, 3). q(3, 1).\npath(X, Y, [X, Y]) :- q(X, Y).\n"
         "path(X, Z, P2) :- q(X, Y), path(Y, Z, P), f_member(P, X) == false, "
         "P2 := f_cons(X, P).\n"
         "n(X, Y, f_size(P), f_tostr(P), f_concat(P, [9]), f_cdr(P), f_append(P, 1.0)) :- "
         "path(X, Y, P).\n"
         "same(X) :- path(X, _, P), P == [1, 2].\nc(X, count<P>) :- path(X, _, P).\n"
         "s(f_concat(\"p\", P, 2.5)) :- path(1, 2, P).\n")


def test_lists_and_the_list_functions_run_on_spark() -> None:
    """Path vectors: lists made, compared, counted and written on Spark as locally."""
    steps = [[("insert", "q", (3, 4)), ("insert", "q", (0, [1, "a", 2.0, True, None]))],
             [("delete", "q", (2, 3))]]
    assert_alike(PATHS, steps, backend="spark")
    there = Engine(PATHS, backend="spark")
    there.run()
    assert (there.spark.local, there.spark.local_rules) == ({}, {})
    assert there.rows("n") == [  # (a path never visits a node twice)
        (1, 2, 2, "[1, 2]", (1, 2, 9), (2,), (1, 2, 1.0)),
        (1, 3, 3, "[1, 2, 3]", (1, 2, 3, 9), (2, 3), (1, 2, 3, 1.0)),
        (2, 1, 3, "[2, 3, 1]", (2, 3, 1, 9), (3, 1), (2, 3, 1, 1.0)),
        (2, 3, 2, "[2, 3]", (2, 3, 9), (3,), (2, 3, 1.0)),
        (3, 1, 2, "[3, 1]", (3, 1, 9), (1,), (3, 1, 1.0)),
        (3, 2, 3, "[3, 1, 2]", (3, 1, 2, 9), (1, 2), (3, 1, 2, 1.0))]
    assert there.rows("c") == [(1, 2), (2, 2), (3, 2)]
    assert there.rows("same") == [(1,)]
    assert there.rows("s") == [("p[1, 2]2.5",)]


def test_small_tables_from_python_join_as_broadcasts() -> None:
    """A table that crossed from Python (this step's events, a small relation) is a local
    relation whose size Spark knows: it joins the large resident table as a broadcast."""
    from overlog.api import compile_program

    session = spark.session()
    big = session.range(100_000).selectExpr("id AS c0", "id + 1 AS c1")\
        .localCheckpoint(eager=True)
    small = spark.frame_of(session, {(1, 2), (3, 4)}, 2)
    rule = compile_program("r(X, Z) :- b(X, Y), s(Y, Z).\n").rules[0]
    plan = next(t.insert for t in rule.triggers if t.relation == "b")
    rows = spark.Translator(session).run(plan, big, {"b": big, "s": small})
    assert spark.rows_of(rows) == {(0, 2), (2, 4)}
    executed = rows._jdf.queryExecution().executedPlan().toString()
    assert "BroadcastHashJoin" in executed and "SortMergeJoin" not in executed


def test_a_failure_inside_spark_is_reported_as_locally() -> None:
    """Spark stops at a division by zero; the stratum then runs locally, which blames the
    input row by row."""
    program = "q(1, 1). q(2, 0). q(3, 2).\np(X, Z) :- q(X, Y), Z := 6 / Y.\n"
    here, there = Engine(program, backend="local"), Engine(program, backend="spark")
    ours, theirs = here.step(), there.step()
    assert [(e.code, e.message, e.quarantined) for e in theirs.errors] == [
        (e.code, e.message, e.quarantined) for e in ours.errors] == [
        ("E302", "division by zero", (("insert", "q", (2, 0)),))]
    assert there.rows("p") == here.rows("p") == [(1, 6), (3, 3)]
    assert there.spark.local == {}  # tried again on the next change


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(st.sampled_from(TEMPLATES), min_size=1, max_size=5, unique=True),
       operations.map(lambda batches: batches[:3]))
def test_random_programs_and_changes_alike(rules: list[str], batches: list) -> None:
    try:
        here = Engine(DECLS + "\n".join(rules), backend="local")
    except CompileError:
        assume(False)
        return
    there = Engine(DECLS + "\n".join(rules), backend="spark")
    for batch in batches:
        for engine in (here, there):
            for op, relation, row in batch:
                getattr(engine, op)(relation, row)
            engine.run()
        for name, relation in here.relations.items():
            if not relation.event:
                assert there.rows(name) == here.rows(name), name


def test_spark_needs_java(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spark.shutil, "which", lambda name: None)
    with pytest.raises(spark.SparkUnavailable) as caught:
        spark._check_java()
    assert str(caught.value) == (
        "the Spark backend needs Java 17 or later, and there is no `java` on the PATH: "
        "install a JRE (Debian: apt install openjdk-17-jre-headless), or run with "
        "--backend local")


def test_the_cli_says_what_to_install(tmp_path: Path) -> None:
    (tmp_path / "java").write_text("#!/bin/sh\necho 'openjdk version \"11.0.2\"' >&2\n")
    (tmp_path / "java").chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:/usr/bin:/bin"}
    env.pop("JAVA_HOME", None)
    done = subprocess.run([sys.executable, "-m", "overlog", "run", "programs/tc.olg",
                           "--backend", "spark"], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", "overlog: error: the Spark backend needs Java 17 or later, found '11.0.2': "
        "install a newer JRE, or run with --backend local\n")


@pytest.mark.parametrize(("args", "message"), [
    (["--backend", "spark", "--spark-conf", "x"], "--spark-conf takes KEY=VALUE, not 'x'"),
    (["--backend", "local", "--spark-master", "local[1]"],
     "--spark-master and --spark-conf go with --backend spark or auto"),
    (["--spark-threshold", "-1"], "--spark-threshold takes a number of rows >= 0"),
])
def test_spark_flags_are_checked(args: list[str], message: str) -> None:
    code, out, err = run_cli(["run", "programs/tc.olg", *args], cwd=ROOT)
    assert (code, out, err) == (2, "", f"overlog: error: {message}\n")


def test_trace_says_where_strata_ran(tmp_path: Path) -> None:
    (tmp_path / "p.olg").write_text('q(1). q(2).\np(X, Y) :- q(X), Y := f_last([X]).\n'
                                    "r(X) :- q(X), notin p(X, 3).\n")
    code, _, err = run_cli(["run", "p.olg", "--backend", "spark", "--trace"], cwd=tmp_path)
    assert (code, err.splitlines()) == (0, [
        "trace: step 1 @0: rule 1 derived 2, stratum 1 on Spark derived 2; +2 q, +2 p, "
            "+2 r (in Spark)",
        "trace: stratum 0 runs locally: f_last() has no Spark equivalent yet"])


@pytest.mark.parametrize(("program", "steps"), ALIKE)
def test_edge_cases_run_alike(program: str, steps: list) -> None:
    assert_alike(program, steps, backend="spark")


def test_a_user_function_shadowing_a_built_in_runs_locally() -> None:
    program = 'v("ab").\nw(f_size(S)) :- v(S).\n'
    functions = {"f_size": lambda s: 42}
    here = Engine(program, functions=functions, backend="local")
    there = Engine(program, functions=functions, backend="spark")
    here.run()
    there.run()
    assert there.rows("w") == here.rows("w") == [(42,)]
    assert there.spark.local == {
        0: "f_size() has no return annotation Spark can use (int, float, str or bool)"}


def _both(program: str, functions: dict) -> tuple[Engine, Engine, list]:
    """Run ``program`` with ``functions`` on both backends; their errors, alike."""
    here = Engine(program, functions=functions, backend="local")
    there = Engine(program, functions=functions, backend="spark")
    errors = [[(e.code, e.message) for r in engine.run() for e in r.errors]
              for engine in (here, there)]
    assert errors[1] == errors[0]
    return here, there, errors[0]


def test_user_functions_f_tostr_and_f_now_run_on_spark() -> None:
    """User functions with a return annotation, as Python UDFs; f_tostr of a float too."""
    def f_scale(x: int) -> int:
        return x * 3

    def f_label(s: str, n: int) -> str | None:
        return None if n > 2 else f"{s}{n}"

    def f_half(x: int) -> float:
        return x / 2

    def f_odd(x: int) -> bool:
        return x % 2 == 1

    program = ('v(1, "a", 2.5, true). v(2, "b", 1e20, null). v(3, "", -0.5, false).\n'
               "w(X, f_scale(X), f_label(S, X), f_half(X), f_odd(X)) :- v(X, S, _, _).\n"
               "s(f_tostr(X), f_tostr(F), f_tostr(S), f_tostr(B), f_concat(S, F, B)) :- "
               "v(X, S, F, B).\nt(X, f_now()) :- v(X, _, _, _), X < 3.\n")
    here, there, _ = _both(program, {"f_scale": f_scale, "f_label": f_label, "f_half": f_half,
                                     "f_odd": f_odd})
    assert there.spark.local == {}
    assert there.rows("w") == here.rows("w") == [
        (1, 3, "a1", 0.5, True), (2, 6, "b2", 1.0, False), (3, 9, None, 1.5, True)]
    assert there.rows("s") == here.rows("s") == [
        ("1", "2.5", "a", "true", "a2.5true"), ("2", "1e+20", "b", "null", "b1e+20null"),
        ("3", "-0.5", "", "false", "-0.5false")]
    assert there.rows("t") == here.rows("t") == [(1, 0.0), (2, 0.0)]  # the sim clock's


def test_a_user_function_that_fails_or_breaks_its_annotation_on_spark_runs_locally() -> None:
    def f_loose(x: int) -> float:  # an int for 1: the local backend keeps it an int
        return x if x == 1 else x / 2

    def f_boom(x: int) -> int:
        if x == 2:
            raise ValueError("no two")
        return x

    here, there, errors = _both("v(1). v(2).\nw(X, f_loose(X)) :- v(X).\n",
                                {"f_loose": f_loose})
    assert there.rows("w") == here.rows("w") == [(1, 1), (2, 1.0)]
    assert errors == []
    assert there.spark.local == {0: "Spark failed (PythonException: TypeError: f_loose() "
                                    "gave 1: not a double Spark holds as it is)"}
    here, there, errors = _both("v(1). v(2).\nb(f_boom(X)) :- v(X).\n", {"f_boom": f_boom})
    assert there.rows("b") == here.rows("b") == [(1,)]  # v(2) quarantined
    assert errors == [("E301", "f_boom raised ValueError: no two")]


def test_an_aggregate_over_more_bindings_than_the_tuple_limit_runs() -> None:
    """The limit counts new tuples: an aggregate's 9 bindings make one."""
    for backend in ("local", "spark"):
        engine = Engine("c(X, count<Y>) :- q(X, Y), r(Z).\n", backend=backend, max_tuples=5)
        for i in range(3):
            engine.insert("q", (1, i))
            engine.insert("r", (i,))
        assert [e for r in engine.run() for e in r.errors] == []
        assert engine.rows("c") == [(1, 9)]


def test_step_limits_hold_on_spark() -> None:
    chain = [(i, i + 1) for i in range(8)]
    errors = []
    for backend in ("local", "spark"):
        engine = Engine(TC, backend=backend, max_tuples=20)
        for row in chain:
            engine.insert("link", row)
        errors.append([(e.code, e.message) for r in engine.run() for e in r.errors])
        assert engine.rows("reach") == []
    assert errors[1] == errors[0] and errors[0][0][0] == "E307"


def test_settings_the_meaning_needs_stay() -> None:
    with pytest.raises(spark.SparkUnavailable) as caught:
        spark._start("local[1]", {"spark.sql.ansi.enabled": "false"})
    assert str(caught.value) == ("spark.sql.ansi.enabled is set by overlog (true): the "
                                 "meaning of programs depends on it")


def test_aggregates_run_on_spark() -> None:
    program = ("q(1, 2). q(1, 5). q(2, 7). q(3, null).\nc(X, count<Y>) :- q(X, Y).\n"
               "lo(X, min<Y>) :- q(X, Y), Y != null.\n"
               "t(X + 1, sum<Y>) :- q(X, Y), Y != null, Y > 1.\n")
    here, there = Engine(program, backend="local"), Engine(program, backend="spark")
    here.run()
    (report,) = there.run()
    assert there.spark.local == {}
    assert report.firings == {"stratum 1 on Spark": 7}  # 3 + 2 + 2 groups
    for name in ("c", "lo", "t"):
        assert there.rows(name) == here.rows(name), name
    assert there.rows("t") == [(2, 7), (3, 7)]


SHORTEST = ("hop(Y, C) :- edge(0, Y, C).\n"
            "hop(Y, C) :- best(X, C1), edge(X, Y, W), C := C1 + W.\n"
            "best(X, min<C>) :- hop(X, C).\nfar(X) :- best(X, C), C > 2.\n")


def test_a_recursive_min_runs_on_spark_and_follows_changes() -> None:
    """Shortest paths through a view in the cycle: improvements propagate on Spark, the
    view keeps only what the final distances derive, and a cut edge raises distances."""
    here, there = Engine(SHORTEST, backend="local"), Engine(SHORTEST, backend="spark")
    steps = [[("insert", row) for row in [(0, 1, 5), (0, 2, 1), (2, 1, 1), (1, 3, 1),
                                          (3, 0, 1)]],
             [("delete", (2, 1, 1)), ("insert", (2, 3, 7))]]
    for batch in steps:
        for engine in (here, there):
            for op, row in batch:
                getattr(engine, op)("edge", row)
            (report,) = engine.run()
        assert there.spark.local == {}
        for name in ("hop", "best", "far"):
            assert there.rows(name) == here.rows(name), name
    assert report.firings == {"stratum 1 on Spark": 8, "stratum 2 on Spark": 1}  # 5 + 3
    assert there.rows("best") == [(0, 7), (1, 5), (2, 1), (3, 6)]
    assert there.rows("hop") == [(0, 7), (1, 5), (1, 12), (2, 1), (2, 8), (3, 6), (3, 8)]
    assert there.rows("far") == [(0,), (1,), (3,)]


def test_a_recursive_min_without_views_continues_from_its_groups_on_spark() -> None:
    """Steps that only add edges continue from the distances in the store, seeded by the
    new edges; a new source (a row of the head) or a cut edge evaluates afresh."""
    program = "dist(Y, min<C>) :- dist(X, C1), edge(X, Y, W), C := C1 + W.\n"
    steps = [[("insert", "dist", (0, 0))]
             + [("insert", "edge", row) for row in [(0, 1, 5), (1, 2, 5), (2, 0, 1)]],
             [("insert", "edge", (0, 2, 3))],  # 2 improves, and 0's own row stays
             [("insert", "edge", (2, 3, 1)), ("insert", "edge", (1, 3, 9))],  # a new group
             [("insert", "edge", (3, 1, 9))],  # improves nothing
             [("delete", "edge", (0, 2, 3))],  # afresh: 2 and 3 get worse
             [("insert", "dist", (5, 0)), ("insert", "edge", (5, 3, 1))]]  # afresh
    here, there = Engine(program, backend="local"), Engine(program, backend="spark")
    counts, rows, ran = [], [], []
    for batch in steps:
        for engine in (here, there):
            for op, relation, row in batch:
                getattr(engine, op)(relation, row)
            (report,) = engine.run()
            assert report.errors == []
        assert there.rows("dist") == here.rows("dist")
        assert there.spark.local == {}  # (each step on Spark: none fell back to local)
        counts.append(there.spark.incremental)
        rows.append(there.rows("dist"))
        ran.append(report.firings)
    assert counts == [0, 1, 2, 3, 3, 3]
    assert ran == [{"stratum 1 on Spark": 2}, {"stratum 1 on Spark": 1},
                   {"stratum 1 on Spark": 1}, {},  # (nothing improved: nothing new)
                   {"stratum 1 on Spark": 2}, {"stratum 1 on Spark": 1}]
    assert rows == [[(0, 0), (1, 5), (2, 10)], [(0, 0), (1, 5), (2, 3)],
                    [(0, 0), (1, 5), (2, 3), (3, 4)], [(0, 0), (1, 5), (2, 3), (3, 4)],
                    [(0, 0), (1, 5), (2, 10), (3, 11)],
                    [(0, 0), (1, 5), (2, 10), (3, 1), (5, 0)]]


def test_a_recursive_min_that_spark_fails_on_sees_the_changes_of_its_held_input() -> None:
    """`edge`, read only by a view of the cycle, lives in Spark (a DataFrame); when Spark
    fails on the step that changes it (an overflow past 64 bits), the stratum runs locally
    with those changes, now in the store."""
    results = []
    for backend in ("local", "spark"):
        engine = Engine(SHORTEST, backend=backend)
        engine.insert_dataframe("edge", spark.session().createDataFrame(
            [(0, 1, 1), (1, 2, 1), (0, 2, 5)], ["a", "b", "c"]))
        engine.run()
        engine.delete("edge", (1, 2, 1))
        engine.insert("edge", (2, 3, 2**62))
        engine.insert("edge", (3, 4, 2**62))
        assert [r.errors for r in engine.run()] == [[]]
        results.append(engine.rows("best"))
    assert engine.spark.held == {}  # (edge came back to the store, and far)
    assert results[1] == results[0] == [(1, 1), (2, 5), (3, 5 + 2**62), (4, 5 + 2**63)]


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(MIN_MAX), min_size=1, max_size=2, unique=True),
       st.lists(edges, max_size=8), min_max_batches.map(lambda batches: batches[:2]))
def test_random_recursive_min_max_alike(templates: list[str], initial: list,
                                        changes: list) -> None:
    program = "\n".join(templates)
    assert_alike(program, [[("insert", "edge", row) for row in initial],
                           *([(op, "edge", row) for op, row in batch] for batch in changes)],
                 backend="spark")


@pytest.mark.parametrize(("program", "reason"), [
    ("materialize(d, infinity, infinity, keys(1)).\nd(0, 0).\n"
     "d(Y, min<C>) :- d(X, C1), edge(X, Y, C2), C := C1 + C2.\n",
     "`d` has keys (in a recursive min/max)"),
    ('d(0, "a").\nd(Y, min<C>) :- d(X, C), edge(X, Y, _).\n',
     "a recursive min of string values"),
])
def test_a_recursive_min_spark_cannot_run_alike_runs_locally(program: str,
                                                             reason: str) -> None:
    steps = [[("insert", "edge", (0, 1, 2)), ("insert", "edge", (1, 2, 3))]]
    assert_alike(program, steps, backend="spark")
    there = Engine(program, backend="spark")
    there.insert("edge", (0, 1, 2))
    there.run()
    assert there.spark.local == {1: reason}


def test_float_sums_and_averages_run_on_spark_with_the_local_meaning() -> None:
    """A float sum is the float nearest the exact sum whatever the order of its terms, an
    average the exact sum divided once: on Spark too, by a Python function on each group."""
    program = ("s(X, sum<Y>) :- q(X, Y, _).\na(X, avg<Y>) :- q(X, Y, _).\n"
               "ai(avg<Z>) :- q(_, _, Z).\nnone(sum<Y>) :- q(_, Y, _), Y > 1e309.\n")
    rows = [(1, 1e16, 2**53), (1, 1.0, 1), (1, 1.5, 2), (1, -1e16, 2), (2, 1e308, 0),
            (2, 1e308, 1), (3, 0.1, 0), (3, 0.2, 0), (3, 0.3, 0)]
    found = []
    for backend in ("local", "spark"):
        engine = Engine(program, backend=backend)
        for row in rows:
            engine.insert("q", row)
        assert [e for r in engine.run() for e in r.errors] == []
        found.append({name: engine.rows(name) for name in ("s", "a", "ai", "none")})
        assert backend == "local" or (engine.spark.local, engine.spark.local_rules) == ({}, {})
    assert found[0] == found[1] == {
        "s": [(1, 2.5), (2, math.inf), (3, 0.6)],
        "a": [(1, 0.625), (2, math.inf), (3, 0.19999999999999998)],
        "ai": [((2**53 + 6) / 9,)], "none": []}


def test_changes_of_a_negated_relation_are_evaluated_incrementally() -> None:
    """Rows coming to a negated relation over-delete what they no longer let by, rows
    leaving it derive what they now let by (DRed), as locally."""
    program = TC + ("far(X, Y) :- reach(X, Y), notin link(X, Y).\n"
                    "lone(X) :- node(X), notin reach(X, _).\n")
    steps = [[("insert", "link", row) for row in [(1, 2), (2, 3), (3, 4), (4, 2)]]
             + [("insert", "node", (n,)) for n in range(1, 7)],
             [("insert", "link", (1, 3))], [("delete", "link", (1, 3))],
             [("insert", "link", (1, 4)), ("delete", "link", (2, 3))],
             [("insert", "link", (5, 6))]]
    assert_alike(program, steps, backend="spark")
    there = Engine(program, backend="spark")
    counts = []
    for batch in steps:
        for op, relation, row in batch:
            getattr(there, op)(relation, row)
        there.run()
        counts.append(there.spark.incremental)
    # both strata from the second step on: the rows that came to and left reach, which
    # lives in Spark (no listener reads it), as DataFrames
    assert counts == [0, 2, 4, 6, 8]
    assert there.spark.held == {"reach": 6, "far": 1, "lone": 2}
    assert there.rows("far") == [(3, 2)]
    assert there.rows("lone") == [(2,), (6,)]


def test_steps_that_add_rows_continue_from_what_stayed_in_spark() -> None:
    """Insertions are evaluated from the new rows against the stratum's resident tables, and
    so are deletions (DRed), and changes of a negated relation or of a relation held in
    Spark (`reach`); a step rolled back restores what stayed in Spark."""
    program = (TC + "far(X, Y) :- reach(X, Y), notin link(X, Y).\n"
               "bad(Z) :- boom(X), Z := 6 / X.\n")
    here, there = Engine(program, backend="local"), Engine(program, backend="spark")
    steps = [
        [("insert", "link", (1, 2)), ("insert", "link", (2, 3))],
        [("insert", "link", (3, 4))],  # reach and far (link is negated): incremental
        [("insert", "link", (4, 1)), ("insert", "boom", (0,))],  # boom fails, link stays
        [("insert", "link", (4, 5))],
        [("delete", "link", (2, 3))],  # reach and far: DRed
        [("insert", "link", (2, 3))],
    ]
    counts, errors = [], []
    for batch in steps:
        for engine in (here, there):
            for op, relation, row in batch:
                getattr(engine, op)(relation, row)
            errors.append([(e.code, e.quarantined) for r in engine.run() for e in r.errors])
        for name in ("reach", "far", "bad"):
            assert there.rows(name) == here.rows(name), name
        counts.append(there.spark.incremental)
    # step 3 runs twice (the second time without boom, which fails reach's stratum the
    # first time, before far's), from the same resident tables
    assert counts == [0, 2, 5, 7, 9, 11]
    assert errors[4] == errors[5] == [("E302", (("insert", "boom", (0,)),))]
    assert there.rows("reach") == [(x, y) for x in (1, 2, 3, 4) for y in (1, 2, 3, 4, 5)]
    assert there.spark.local == {}


def test_auto_moves_a_stratum_to_spark_once_its_tables_hold_the_threshold() -> None:
    """Below the threshold nothing asks for Spark; a stratum whose tables (read and
    written) reach it moves, for good, and the results stay the local backend's."""
    program = TC + "deg(X, count<Y>) :- link(X, Y).\n"
    here, there = Engine(program, backend="local"), Engine(program, spark_threshold=20)
    sizes, firings = [], []
    for rows in ([(1, 2), (2, 3)], [(3, 4), (4, 1)], [(4, 5)], [(5, 6)]):
        for engine in (here, there):
            for row in rows:
                engine.insert("link", row)
        here.run()
        (report,) = there.run()
        for name in ("reach", "deg"):
            assert there.rows(name) == here.rows(name), name
        sizes.append(dict(there.spark.moved))
        firings.append(report.firings)
    # step 2 starts locally with 4 links and 3 reach rows; its rounds grow reach to 16 rows:
    # at 20 rows, the stratum moves to Spark within the step
    assert sizes == [{}, {"stratum 0": 20}, {"stratum 0": 20}, {"stratum 0": 20}]
    assert firings == [{"rule 1": 2, "rule 2": 1, "rule 3": 2},
                       {"stratum 0 on Spark": 13, "rule 3": 2},  # afresh, the first time
                       {"stratum 0 on Spark": 4, "rule 3": 1},  # from the new link
                       {"stratum 0 on Spark": 5, "rule 3": 1}]
    assert there.spark.incremental == 2
    assert (there.spark.threshold, there.spark.unavailable) == (20, None)


def test_auto_moves_a_stratum_back_once_its_tables_shrink_to_a_quarter() -> None:
    """A stratum on Spark comes back to the local backend once its tables hold less than a
    quarter of the threshold (its rows then in the store, exactly), and goes again when
    they grow back to it."""
    here, there = Engine(TC, backend="local"), Engine(TC, spark_threshold=40)
    chain = [("link", (i, i + 1)) for i in range(1, 10)]
    steps = [[("insert", *row) for row in chain],  # grows past 40 in the step: to Spark
             [("delete", *row) for row in chain[2:]],  # on Spark: 2 links, 3 reach rows
             [("insert", "link", (20, 21))],  # 6 rows at the start: back
             [("insert", *row) for row in chain[2:]]]  # grows past 40 in the step: again
    places = []
    for inputs in steps:
        (report,) = run_alike(here, there, inputs)
        places.append((dict(there.spark.moved), sorted(report.firings)))
    assert places == [({"stratum 0": 44}, ["stratum 0 on Spark"]),  # after a round
                      ({"stratum 0": 44}, ["stratum 0 on Spark"]),
                      ({}, ["rule 1"]),  # reach(20, 21)
                      ({"stratum 0": 41}, ["stratum 0 on Spark"])]
    assert there.spark.transitions == [("stratum 0", 44, True), ("stratum 0", 6, False),
                                       ("stratum 0", 41, True)]
    assert there.spark.resident.keys() == {0}


def test_auto_without_spark_runs_locally_and_says_so(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path)}  # no java there
    env.pop("JAVA_HOME", None)
    done = subprocess.run([sys.executable, "-m", "overlog", "run", "programs/tc.olg",
                           "--spark-threshold", "0", "--format", "csv"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    local = subprocess.run([sys.executable, "-m", "overlog", "run", "programs/tc.olg",
                            "--backend", "local", "--format", "csv"],
                           capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (
        0, local.stdout, "overlog: note: running locally: the Spark backend needs Java 17 or "
        "later, and there is no `java` on the PATH: install a JRE (Debian: apt install "
        "openjdk-17-jre-headless), or run with --backend local\n")


def test_auto_below_the_threshold_never_asks_for_spark() -> None:
    engine = Engine(TC)
    engine.insert("link", (1, 2))
    engine.run()
    assert engine.spark is not None and engine.spark.threshold == spark.THRESHOLD
    assert (engine.spark.moved, engine.spark._warming) == ({}, None)


def test_dataframes_in_and_out() -> None:
    import pandas as pd

    from overlog.api import Engine as FullEngine

    engine = FullEngine(TC, backend="spark")
    session = spark.session()
    assert engine.insert_dataframe("link", session.createDataFrame(
        [(1, 2), (2, 3)], "a long, b long")) == 2
    missing = pd.DataFrame({"a": pd.array([3, None], dtype="Int64"), "b": [4, 5]})
    assert engine.insert_dataframe("link", missing) == 2
    engine.run()
    assert engine.rows("link") == [(None, 5), (1, 2), (2, 3), (3, 4)]
    reach = engine.dataframe("reach")  # as Spark holds it: no crossing
    assert reach is engine.spark.resident_frame("reach")
    assert sorted(reach.collect(), key=str) == [(1, 2), (1, 3), (1, 4), (2, 3), (2, 4),
                                                (3, 4), (None, 5)]
    link = engine.dataframe("link")  # read by the stratum: resident too
    assert reach.columns == link.columns == ["c0", "c1"]
    with pytest.raises(ValueError) as caught:
        engine.insert_dataframe("link", pd.DataFrame({"a": [1]}))
    assert str(caught.value) == "`link` has 2 fields; the DataFrame has 1 columns"
    with pytest.raises(TypeError) as caught:
        engine.insert_dataframe("link", [(1, 2)])
    assert str(caught.value) == ("insert_dataframe takes a Spark or pandas DataFrame or a "
                                 "pyarrow Table, not list")


def test_a_table_spark_cannot_hold_is_no_dataframe() -> None:
    from overlog.api import Engine as FullEngine

    engine = FullEngine('q(1). q("a").\n', backend="local")
    engine.run()
    with pytest.raises(ValueError) as caught:
        engine.dataframe("q")
    assert str(caught.value) == ("`q` cannot be a Spark DataFrame as it is: a column holding "
                                 "bigint and string values")
    lists = FullEngine("q([1]).\np(X, f_cons(1, X)) :- q(X).\n", backend="spark")
    lists.run()
    for name in ("q", "p"):  # (`p` stays in Spark between steps, as bytes)
        with pytest.raises(ValueError) as caught:
            lists.dataframe(name)
        assert str(caught.value) == (f"`{name}` cannot be a Spark DataFrame as it is: a "
                                     "list value")
    local = FullEngine("q(1). q(2).\n", backend="local")
    local.run()
    assert sorted(local.dataframe("q").collect()) == [(1,), (2,)]
