"""The vectorized backend (runtime/vector.py): strata of view rules run in DuckDB give exactly
what the local backend gives (every evaluation golden, random programs and changes, edge
cases), and what DuckDB cannot run with the local meaning runs locally, with its reason."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from overlog import Engine
from overlog.runtime import vector
from tests.goldens import compare, discover, golden_id, run_cli
from tests.runtime.alike import ALIKE, assert_alike, run_alike
from tests.runtime.test_store import check_indexes
from tests.test_golden_eval import _args

ROOT = Path(__file__).parents[2]
TC = "reach(X, Y) :- link(X, Y).\nreach(X, Z) :- link(X, Y), reach(Y, Z).\n"


@pytest.mark.parametrize("path", discover("eval"), ids=golden_id)
def test_golden_runs_alike_on_duckdb(path: Path) -> None:
    code, out, err = run_cli(["run", path.name, "--format", "jsonl", "--backend", "vector",
                              *_args(path)], cwd=path.parent)
    compare(path, ".expected", out, False)
    compare(path, ".err", err, False)
    assert code == (3 if "error[E3" in err else 0)


def test_a_recursive_stratum_runs_on_duckdb_and_follows_changes() -> None:
    engine = Engine(TC + "far(X, Y) :- reach(X, Y), notin link(X, Y).\n", backend="vector")
    for row in [(1, 2), (2, 3), (3, 4), (4, 2)]:
        engine.insert("link", row)
    (report,) = engine.run()
    assert engine.vector.local == {}
    assert report.firings == {"stratum 0 on DuckDB": 12, "stratum 1 on DuckDB": 8}
    assert engine.rows("far") == [(1, 3), (1, 4), (2, 2), (2, 4), (3, 2), (3, 3), (4, 3),
                                  (4, 4)]
    engine.insert("link", (4, 5))  # only added: reach continues from what stayed in DuckDB
    engine.run()  # (far negates link: afresh)
    assert engine.vector.incremental == 1
    assert engine.rows("reach") == [(1, 2), (1, 3), (1, 4), (1, 5), (2, 2), (2, 3), (2, 4),
                                    (2, 5), (3, 2), (3, 3), (3, 4), (3, 5), (4, 2), (4, 3),
                                    (4, 4), (4, 5)]
    engine.delete("link", (4, 2))  # removed: afresh
    engine.run()
    assert engine.vector.incremental == 1
    assert engine.rows("reach") == [(1, 2), (1, 3), (1, 4), (1, 5), (2, 3), (2, 4), (2, 5),
                                    (3, 4), (3, 5), (4, 5)]
    assert engine.rows("far") == [(1, 3), (1, 4), (1, 5), (2, 4), (2, 5), (3, 5)]


def test_values_keep_their_types() -> None:
    program = ('v(1, 2.5, "a", true). v(-7, 0.5, "b\'", false). v(7, -1.0, "c", true).\n'
               "w(X * 2 - 1, F, S + \"!\", B) :- v(X, F, S, B).\n"
               "one(X) :- v(X, _, _, _), X == 1.\nyes(S) :- v(_, _, S, B), B == true.\n"
               "less(S) :- v(X, F, S, _), F < 1.0.\nnot(S) :- v(X, _, S, _), X == 1.0.\n"
               'big(X) :- v(X, _, _, _), X > -9223372036854775808, S := "it\'s".\n')
    here, there = Engine(program, backend="local"), Engine(program, backend="vector")
    here.run()
    there.run()
    assert there.vector.local == {}
    for name in ("w", "one", "yes", "less", "not", "big"):
        assert there.rows(name) == here.rows(name), name
    assert there.rows("w") == [(-15, 0.5, "b'!", False), (1, 2.5, "a!", True),
                               (13, -1.0, "c!", True)]
    assert [type(v) for v in there.rows("w")[2]] == [int, float, str, bool]


def test_rows_from_duckdb_share_their_values() -> None:
    """Each distinct value of a column comes back as one Python object, which the rows
    holding it share (runtime/arrowrows.py), as rows the local backend derives do."""
    big = 10**9  # (not one of the ints Python keeps one object of)
    engine = Engine(TC, backend="vector")
    for i in range(5):
        engine.insert("link", (big + i, big + i + 1))
    engine.run()
    assert engine.vector.local == {}
    rows = engine.rows("reach")  # (held in DuckDB: read from there)
    assert rows == [(big + i, big + j) for i in range(5) for j in range(i + 1, 6)]
    for column in (0, 1):
        assert len({id(row[column]) for row in rows}) == len({row[column] for row in rows})


@pytest.mark.parametrize(("program", "reason"), [
    ("q(1). q(2).\np(X, Y) :- q(X), Y := f_size([X]).\n", "f_size() has no DuckDB equivalent"
                                                          " yet"),
    ("q(1). q(2).\np(X, Y) :- q(X), Y := X / 2.\n", "/ and % do not run on DuckDB yet"),
    ("q(1). q([1, 2]).\np(X) :- q(X).\n", "a list value"),
    ("q(1). q(null).\np(X) :- q(X).\n", "a null"),
    ('q(1). q("a").\np(X) :- q(X).\n', "a column holding int and string values"),
    ("q(1, 2.5).\np(X) :- q(X, Y), X < Y.\n", "comparing int with float values"),
    ("q(-0.0).\np(X) :- q(X).\n", "-0.0"),
    ("q(9223372036854775808).\np(X) :- q(X).\n", "an int past 64 bits"),
    ('q(1). r("a").\np(X) :- q(X).\np(X) :- r(X).\n',
     "a column of `p` holding int and string values"),
    ("q(1.5).\np(X) :- q(Y), X := Y + 1.0.\n", "+ of float and float values"),
    ("q(9223372036854775807).\np(X) :- q(Y), X := Y + 1.\n",
     "DuckDB failed (OutOfRangeException: Out of Range Error: Overflow in addition of INT64 "
     "(9223372036854775807 + 1)!)"),
    ("materialize(p, infinity, infinity, keys(1)).\nq(1, 2).\np(X, Y) :- q(X, Y).\n",
     "`p` has keys or soft state"),
    ("q().\np(1) :- q().\n", "`q` has no fields"),
])
def test_what_duckdb_cannot_run_alike_runs_locally(program: str, reason: str) -> None:
    here, there = Engine(program, backend="local"), Engine(program, backend="vector")
    here.run()
    there.run()
    assert list(there.vector.local.values()) == [reason]
    assert there.rows("p") == here.rows("p")


def test_step_limits_hold_on_duckdb() -> None:
    chain = [(i, i + 1) for i in range(8)]
    errors = []
    for backend in ("local", "vector"):
        engine = Engine(TC, backend=backend, max_tuples=20)
        for row in chain:
            engine.insert("link", row)
        errors.append([(e.code, e.message) for r in engine.run() for e in r.errors])
        assert engine.rows("reach") == []
    assert errors[1] == errors[0] and errors[0][0][0] == "E307"
    engine = Engine("n(0).\nn(Y) :- n(X), Y := X + 1.\n", backend="vector", max_rounds=50)
    report = engine.step()
    assert [e.code for e in report.errors] == ["E307"] and engine.rows("n") == []
    assert engine.vector.local == {0: "more rounds than a step may take (the local backend "
                                      "reports it)"}


def test_a_rolled_back_step_leaves_nothing_in_duckdb() -> None:
    """A step that fails after the stratum ran in DuckDB rolls back; the next step evaluates
    the stratum afresh, not from the tables the failed step changed."""
    program = TC + "bad(X, Y) :- reach(X, Y), notin reach(Y, X), Z := 1 / (X - 3).\n"
    engine = Engine(program, backend="vector")
    engine.insert("link", (1, 2))
    engine.run()
    engine.insert("link", (3, 4))  # bad's division by zero fails the step
    report = engine.step()
    assert [e.code for e in report.errors] == ["E302"]
    assert (engine.rows("reach"), engine.vector.incremental) == ([(1, 2)], 1)
    engine.insert("link", (2, 5))
    engine.run()
    assert engine.rows("reach") == [(1, 2), (1, 5), (2, 5)]
    assert engine.vector.incremental == 1
    assert engine.vector.local == {1: "/ and % do not run on DuckDB yet"}


def test_trace_says_what_runs_locally(tmp_path: Path) -> None:
    (tmp_path / "p.olg").write_text("q(1). q(2).\np(X, Y) :- q(X), Y := X / 2.\n"
                                    "r(X) :- q(X), notin p(X, 3).\n")
    code, _, err = run_cli(["run", "p.olg", "--backend", "vector", "--trace"], cwd=tmp_path)
    assert (code, err.splitlines()) == (0, [
        "trace: step 1 @0: rule 1 derived 2, stratum 1 on DuckDB derived 2; +2 q, +2 p, "
        "+2 r (in DuckDB)",  # (r: only its own stratum reads it)
        "trace: stratum 0 runs locally: / and % do not run on DuckDB yet"])


def test_without_duckdb_the_cli_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real = builtins.__import__

    def without(name, *args, **kwargs):
        if name == "duckdb":
            raise ImportError("No module named 'duckdb'", name="duckdb")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without)
    with pytest.raises(vector.VectorUnavailable) as caught:
        vector.connect()
    assert str(caught.value) == ("the vector backend needs DuckDB, pyarrow and numpy (duckdb "
                                 "is not installed): pip install 'overlog[vector]'")


@pytest.mark.parametrize(("program", "steps"), [*ALIKE,
    # recursion through a string concatenation, ended by a comparison
    ('s("a").\ns(T) :- s(S), T := S + "a", T < "aaaa".\n', [[("insert", "s", ("b",))]]),
    # rows added to a head, and to a relation whose column types were unknown
    (TC, [[("insert", "reach", (7, 8))], [("insert", "link", (8, 9))],
          [("insert", "link", ("x", "y"))], [("delete", "link", ("x", "y"))]]),
])
def test_edge_cases_run_alike(program: str, steps: list) -> None:
    assert_alike(program, steps, backend="vector")


def test_auto_moves_a_stratum_to_duckdb_once_its_tables_and_rounds_are_large() -> None:
    """Below the threshold the database is never opened; a stratum whose tables (read and
    written) reach it, with rounds of a sixteenth of it, moves, in the middle of a step
    (DuckDB continuing from the local rounds), and the results stay the local backend's.
    A step of removals (no new rows to start from) runs locally."""
    here, there = Engine(TC, backend="local"), Engine(TC, vector_threshold=40)
    chain = [("link", (i, i + 1)) for i in range(1, 10)]
    steps = [[("insert", *row) for row in chain[:2]],  # 5 rows: local
             [("insert", *row) for row in chain[2:]],  # grows past 40 in the step: to DuckDB
             [("delete", *row) for row in chain[2:]],  # only removals: local
             [("insert", *row) for row in chain[2:]]]  # to DuckDB again
    places = []
    for inputs in steps:
        (report,) = run_alike(here, there, inputs)
        places.append((dict(there.vector.moved), report.firings,
                       there.vector._con is not None))
    # in step 2, DuckDB continues from the local rounds: 32 rows derived here, 10 there
    continued = {"rule 1": 7, "rule 2": 25, "stratum 0 on DuckDB": 10}
    assert places == [({}, {"rule 1": 2, "rule 2": 1}, False),
                      ({"stratum 0": 44}, continued, True),
                      ({}, {}, True),
                      ({"stratum 0": 44}, continued, True)]
    assert there.vector.transitions == [("stratum 0", 44, True), ("stratum 0", 47, False),
                                        ("stratum 0", 44, True)]
    assert there.spark.moved == {}


def test_with_auto_rows_from_duckdb_come_back_indexed() -> None:
    """The store's indexes on a head DuckDB evaluated arrive built from its columns, and
    its rows born round by round (decision 61), afresh and continuing from local rounds
    alike, so that the next small step, run locally, does not index every row first, and
    a deletion's support check works; a rollback of the step takes them out with the
    rows."""
    chain = [(i, i + 1) for i in range(1, 12)]
    # continuing from the store's rows, then a small step run locally; or afresh (the one
    # recursive query, the store holding no rows), every step in DuckDB
    for first, threshold, moved in ((chain[:2], 40, {}), ([], 0, {"stratum 0": 77})):
        here, there = Engine(TC, backend="local"), Engine(TC, vector_threshold=threshold)
        for engine in (here, there):
            engine.insert_many("link", first)
            engine.run()
            engine.insert_many("link", chain[len(first):])
            engine.run()
        table = there.store.tables["reach"]
        assert there.vector.recursive == (0 if first else 1)
        # continuing, the rows are born round by round, as the local backend's are (for
        # the support check of a deletion); the one recursive query has no rounds
        assert there.store.ordered("reach") == bool(first)
        if first:
            assert there.store.births("reach") and [
                rows for _, rows in there.store.births("reach")] == [
                rows for _, rows in here.store.births("reach")]
        assert list(table.indexes) == [(0,)] and len(table.rows) == 66
        check_indexes(table)
        assert all(type(bucket) is list for bucket in table.indexes[(0,)].values())
        for engine in (here, there):
            engine.insert("link", (12, 13))
            engine.delete("link", (1, 2))
            engine.run()
        assert there.vector.local == {} and there.vector.moved == moved
        assert there.rows("reach") == here.rows("reach")
        check_indexes(table)
    # afresh in rounds (two recursive atoms: not one recursive query), from no rows
    square = TC.replace("link(X, Y), reach(Y, Z)", "reach(X, Y), reach(Y, Z)")
    here, there = Engine(square, backend="local"), Engine(square, vector_threshold=0)
    for engine in (here, there):
        engine.insert_many("link", [*chain, (11, 1)])
        engine.run()
    assert (there.vector.recursive, there.store.ordered("reach")) == (0, True)
    assert [len(rows) for _, rows in there.store.births("reach")] == [12, 12, 24, 48, 36]
    assert [rows for _, rows in there.store.births("reach")] == [
        rows for _, rows in here.store.births("reach")]
    engine = Engine(TC + "n(count<X>) :- reach(X, _).\nbad(Y) :- n(N), Y := N / 0.\n",
                    vector_threshold=0)
    engine.insert_many("link", chain)
    (report,) = engine.run(steps=1)  # rolled back: the rows and their indexes go
    table = engine.store.tables["reach"]
    assert engine.vector.recursive > 0 and report.errors[0].code == "E302"  # (filled)
    assert (table.rows, dict(table.indexes[(0,)])) == (set(), {})


def test_auto_past_the_spark_threshold_leaves_duckdb_for_spark(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark decides first: a stratum past its (higher) threshold runs there, and what DuckDB
    held for it is forgotten."""
    calls = []

    def evaluate(self, rules, store, max_rounds, plus, minus, cap=0):
        calls.append(rules[0].stratum)
        if len(store.rows("link")) < 3:
            return None
        return {"reach": (set(), set())}  # (Spark's answer: nothing changes)

    monkeypatch.setattr("overlog.runtime.spark.SparkStrata.evaluate", evaluate)
    engine = Engine(TC, vector_threshold=0)
    engine.insert("link", (1, 2))
    (report,) = engine.run()
    assert (report.firings, engine.vector.resident.keys()) == ({"stratum 0 on DuckDB": 1}, {0})
    engine.insert("link", (2, 3))
    engine.insert("link", (3, 4))
    (report,) = engine.run()
    assert (report.firings, engine.vector.resident, calls) == ({}, {}, [0, 0])


def test_auto_holds_a_large_result_in_duckdb() -> None:
    """With auto, a relation DuckDB derived with ``hold`` rows or more (Spark's threshold:
    the rows that would fill a quarter of memory in the store) stays in DuckDB, as with
    ``--backend vector``; its stratum stays there while it is held, even for a step too
    small to move it (one link), and it stays held when it shrinks; a smaller result
    comes back to the store; a listener brings it back."""
    here, there = Engine(TC, backend="local"), Engine(TC, vector_threshold=32)
    there.vector.hold = 40
    steps = [[("insert", "link", (i, i + 1)) for i in range(1, 8)],  # 28 rows: in the store
             [("insert", "link", (i, i + 1)) for i in range(8, 10)],  # 45 rows: held
             [("insert", "link", (10, 11))],  # one row of work: DuckDB all the same
             [("delete", "link", (5, 6))]]  # removed: afresh, in DuckDB; 25 rows, held
    places = []
    for inputs in steps:
        (report,) = run_alike(here, there, inputs)
        places.append((report.firings, dict(there.vector.held),
                       len(there.store.rows("reach")), there.vector.incremental))
    assert places == [  # (moved at 32 rows in step 1; continuing from there after)
        ({"rule 1": 7, "rule 2": 18, "stratum 0 on DuckDB": 3}, {}, 28, 0),
        ({"stratum 0 on DuckDB": 17}, {"reach": 45}, 0, 1),
        ({"stratum 0 on DuckDB": 10}, {"reach": 55}, 0, 2),
        ({"stratum 0 on DuckDB": 0}, {"reach": 25}, 0, 2)]
    there.register_listener("reach", None, lambda row: None)
    assert (there.vector.held, there.rows("reach")) == ({}, here.rows("reach"))
    assert len(there.store.rows("reach")) == 25


def test_auto_holds_a_result_continued_from_local_rounds_and_lets_it_go() -> None:
    """A stratum that moved in the middle of a step and reached ``hold`` there is held from
    that step (the report counts DuckDB's part: the local rounds' rows are listed); a
    value DuckDB cannot hold beside the others (a string among ints) brings it back and
    the stratum runs locally; so does an insert into it."""
    here, there = Engine(TC, backend="local"), Engine(TC, vector_threshold=32)
    there.vector.hold = 20
    steps = [[("insert", "link", (i, i + 1)) for i in range(1, 8)],
             [("insert", "link", (8, "x"))], [("insert", "reach", (100, 200))]]
    places = []
    for inputs in steps:
        (report,) = run_alike(here, there, inputs)
        assert report.errors == []
        places.append((report.firings, report.held, dict(there.vector.held),
                       len(there.store.rows("reach"))))
    assert places == [
        ({"rule 1": 7, "rule 2": 18, "stratum 0 on DuckDB": 3}, {"reach": (3, 0)},
         {"reach": 28}, 0),
        ({"rule 1": 1, "rule 2": 7}, {}, {}, 36),
        ({}, {}, {}, 37)]
    assert there.vector.local == {0: "a column holding int and string values"}


def test_auto_holds_nothing_from_a_step_rolled_back() -> None:
    here, there = (Engine(TC, backend="local", max_tuples=25),
                   Engine(TC, vector_threshold=0, max_tuples=25))
    there.vector.hold = 5
    reports = run_alike(here, there, [("insert", "link", (i, i + 1)) for i in range(1, 8)])
    assert [e.code for r in reports for e in r.errors] == ["E307"]
    assert there.vector.held == {}


def test_with_auto_duckdb_holds_from_the_spark_threshold() -> None:
    from overlog.runtime.memory import THRESHOLD

    assert (Engine(TC).vector.hold, Engine(TC, spark_threshold=1234).vector.hold,
            Engine(TC, backend="vector").vector.hold) == (THRESHOLD, 1234, None)


def test_auto_leaves_a_stratum_duckdb_holds_to_duckdb(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark, which decides first, is not asked about a stratum whose head DuckDB holds:
    that head's rows are not in the store Spark would read."""
    calls = []

    def evaluate(self, rules, store, max_rounds, plus, minus, cap=0):
        calls.append(rules[0].stratum)
        return None

    monkeypatch.setattr("overlog.runtime.spark.SparkStrata.evaluate", evaluate)
    engine = Engine(TC, vector_threshold=0)
    engine.vector.hold = 3
    for row in [(1, 2), (2, 3)]:
        engine.insert("link", row)
    engine.run()
    engine.insert("link", (3, 4))
    engine.run()
    assert (calls, engine.vector.held, engine.rows("reach")) == (
        [0], {"reach": 6}, [(1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4)])


def test_auto_without_duckdb_runs_locally_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "duckdb.py").write_text("raise ImportError('no DuckDB here', name='duckdb')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done, local = (subprocess.run([sys.executable, "-m", "overlog", "run", "programs/tc.olg",
                                   *args, "--format", "csv"], capture_output=True, text=True,
                                  env=env, cwd=ROOT, timeout=120)
                   for args in (["--vector-threshold", "0"], ["--backend", "local"]))
    assert (done.returncode, done.stdout, done.stderr) == (
        0, local.stdout, "overlog: note: running locally: the vector backend needs DuckDB, "
        "pyarrow and numpy (duckdb is not installed): pip install 'overlog[vector]'\n")
    asked = subprocess.run([sys.executable, "-m", "overlog", "run", "programs/tc.olg",
                            "--backend", "vector"], capture_output=True, text=True, env=env,
                           cwd=ROOT, timeout=120)
    assert (asked.returncode, asked.stdout, asked.stderr) == (
        2, "", "overlog: error: the vector backend needs DuckDB, pyarrow and numpy (duckdb is "
        "not installed): pip install 'overlog[vector]'\n")


def test_no_table_is_left_behind() -> None:
    """Whatever a step does (continue, fail on a mixed column, start afresh), the database
    holds the resident tables, those of held relations, and those a rollback of the last
    step could want back, and nothing else."""
    engine = Engine(TC + "far(X, Y) :- reach(X, Y), notin link(Y, X).\n", backend="vector")
    for step in range(12):
        engine.insert("link", (step, step + 1))
        if step % 4 == 1:
            engine.insert("link", ("x", step))  # a column of ints and strings: local
        if step % 4 == 2:
            engine.delete("link", ("x", step - 1))
        engine.run()
        vector = engine.vector
        tables = {name for (name,) in vector.con.execute(
            "SELECT table_name FROM duckdb_tables()").fetchall()}
        # (a table a held relation left in the step is dropped when the next step starts)
        assert tables == set(vector._holding.values()).union(
            vector._stale, *(r.tables.values() for r in vector.resident.values()))
        assert len(vector._stale) <= 2
    assert engine.vector.local == {}
    assert len(engine.rows("reach")) == 12 * 13 // 2  # the chain 0 -> 12


def test_a_relation_only_its_stratum_reads_lives_in_duckdb() -> None:
    """With --backend vector, `reach` (read by no other stratum) stays in DuckDB: the store
    lets its rows go, rows() and count() read them there, reports count them, a failed step
    leaves them as they were, and a listener or an insert brings them back to the store."""
    program = TC + "boom[Z] :- link(X, Y), Z := 1 / (X - 3).\n"
    here, there = Engine(program, backend="local"), Engine(program, backend="vector")
    steps = [[("insert", (1, 2)), ("insert", (2, 1))],
             [("insert", (3, 4))],  # boom fails on it: the step is rolled back, without it
             [("insert", (2, 5))]]
    helds = []
    for inputs in steps:
        reports = []
        for engine in (here, there):
            for op, row in inputs:
                getattr(engine, op)("link", row)
            reports.append(engine.run())
        assert [[(e.code, e.message) for e in r.errors] for r in reports[1]] == [
            [(e.code, e.message) for e in r.errors] for r in reports[0]]
        assert there.rows("reach") == here.rows("reach")
        assert there.count("reach") == here.count("reach")
        assert there.store.rows("reach") == set()
        helds.append([r.held for r in reports[1]])
    assert helds == [[{"reach": (4, 0)}], [{}, {}], [{"reach": (2, 0)}]]
    assert there.vector.held == {"reach": 6} and there.vector.incremental == 2
    there.insert("reach", (9, 9))  # an insert into it: back in the store first
    here.insert("reach", (9, 9))
    (mine,), (theirs,) = here.run(), there.run()
    assert there.rows("reach") == here.rows("reach") and there.vector.held == {"reach": 7}
    # (the insert is the step's input: nothing derived, in DuckDB)
    assert (theirs.held, theirs.firings) == ({}, {"stratum 0 on DuckDB": 0})
    assert theirs.counts("inserted") == mine.counts("inserted") == {"reach": 1}
    seen = []
    there.register_listener("reach", None, seen.append, op="insert")
    assert there.vector.held == {} and len(there.store.rows("reach")) == 7
    there.insert("link", (5, 6))
    here.insert("link", (5, 6))
    here.run()
    there.run()
    assert there.rows("reach") == here.rows("reach") and sorted(seen) == [
        (1, 6), (2, 6), (5, 6)]
    assert there.vector.held == {}


def test_past_a_step_limit_a_held_relation_comes_back() -> None:
    engine = Engine(TC, backend="vector", max_tuples=30)
    for row in [(1, 2), (2, 3)]:
        engine.insert("link", row)
    engine.run()
    assert engine.vector.held == {"reach": 3}
    for row in [(i, i + 1) for i in range(3, 10)]:
        engine.insert("link", row)
    report = engine.step()  # DuckDB's 42 rows pass the limit: the local backend reports it
    assert [e.code for e in report.errors] == ["E307"]
    assert engine.rows("reach") == [(1, 2), (1, 3), (2, 3)]
    assert engine.vector.held == {"reach": 3} and engine.store.rows("reach") == set()


def test_a_deletion_from_a_held_relation_past_the_tuple_limit_stays_in_duckdb() -> None:
    """Evaluated afresh (a deletion), a held relation's rows derived again are not new
    tuples: 21 of them under a limit of 20 stay in DuckDB, as the local backend's
    deletion passes; new rows past the limit still fail the step."""
    here, there = (Engine(TC, backend="local", max_tuples=20),
                   Engine(TC, backend="vector", max_tuples=20))
    steps = [[("insert", "link", (i, i + 1)) for i in range(1, 6)],
             [("insert", "link", (6, 7))], [("insert", "link", (7, 8))],
             [("delete", "link", (7, 8))],
             [("insert", "link", (i, i + 1)) for i in range(7, 12)]]  # 45 new rows: E307
    held = []
    for inputs in steps:
        reports = run_alike(here, there, inputs)
        held.append((dict(there.vector.held), [e.code for r in reports for e in r.errors]))
    assert held == [({"reach": 15}, []), ({"reach": 21}, []), ({"reach": 28}, []),
                    ({"reach": 21}, []), ({"reach": 21}, ["E307"])]
    assert there.vector.local == {0: "more rows than a step may derive (the local backend "
                                     "reports it)"}


@pytest.mark.parametrize(("program", "recursive"), [
    (TC, 1),  # one linear rule: one recursive query
    ("reach(X, Y) :- link(X, Y).\nreach(X, Z) :- reach(X, Y), reach(Y, Z).\n", 0),
    (TC + "reach(X, Y) :- link(Y, X), X < 3.\n", 1),  # two base rules
    (TC.replace("link(X, Y), reach(Y, Z)", "link(X, Y), reach(Y, W), Z := W + 0"), 0),
    (TC + "back(X, Y) :- reach(Y, X).\nback(X, Z) :- back(X, Y), link(Y, Z).\n", 0),  # 2 heads
])
def test_a_linear_stratum_runs_afresh_as_one_recursive_query(program: str,
                                                             recursive: int) -> None:
    """One head, one linear rule whose recursive plan makes no new value: DuckDB's own
    WITH RECURSIVE (it ends: every row is made of values already there); else rounds."""
    here, there = Engine(program, backend="local"), Engine(program, backend="vector")
    for engine in (here, there):
        for row in [(1, 2), (2, 3), (3, 1), (3, 4), (5, 5)]:
            engine.insert("link", row)
        engine.run()
    assert there.vector.local == {} and there.vector.recursive == recursive
    for name in here.relations:
        if not here.relations[name].event:
            assert there.rows(name) == here.rows(name), name


@pytest.mark.parametrize(("program", "inputs", "message"), [
    # a comparison DuckDB's plans never reach (it joins a first), the local backend's do
    # (written before `a`, which does not guard it)
    ("p(X) :- b(X), X < 1, a(X).\n", [("a", (1,)), ("b", ("x",))],
     "cannot compare string with int"),
    # arithmetic in a plan that reads an empty relation's rows
    ("a(1).\ns(Z) :- r(Z), W := Z + 1, a(Z).\n", [("r", ("x",))], "cannot add string and int"),
])
def test_what_the_local_backend_would_fail_on_runs_there(program: str, inputs: list,
                                                         message: str) -> None:
    """Plans DuckDB does not run, or runs on fewer rows, may fail locally on values of two
    types (E301): the stratum then runs locally, which reports it as it always does."""
    here, there = Engine(program, backend="local"), Engine(program, backend="vector")
    reports = []
    for engine in (here, there):
        for relation, row in inputs:
            engine.insert(relation, row)
        reports.append([(e.code, e.message, e.quarantined) for r in engine.run()
                        for e in r.errors])
    assert reports[1] == reports[0] and reports[0][0][:2] == ("E301", message)
    for name, relation in here.relations.items():
        if not relation.event:
            assert there.rows(name) == here.rows(name), name


def test_a_binding_the_over_deletion_of_a_negated_relation_passes_over_alike() -> None:
    """`X < 1` fails on b("x") where over-deletion drops the negation, and is passed over
    there (decision 65): no error on either backend, the same rows."""
    program = "a(0).\np(X) :- a(X), notin b(X), X < 1.\n"
    rows = []
    for engine in (Engine(program, backend="local"), Engine(program, backend="vector")):
        engine.insert("b", ("x",))
        assert [r.errors for r in engine.run()] == [[]]
        rows.append((engine.rows("b"), engine.rows("p")))
    assert rows == [([("x",)], [(0,)])] * 2


def test_a_held_relation_given_an_input_in_a_step_that_fails() -> None:
    """An insert into a held relation brings it back to the store, and its stratum starts
    afresh; the step fails (E301) and rolls back: the relation is held again, in the table
    it had, which nothing may have changed or dropped."""
    program = "q(0, Y) :- q(_, Y), s(Y).\nq(Y, Y) :- s(Y).\nboom[Z] :- t(X), Z := X + 1.\n"
    here, there = Engine(program, backend="local"), Engine(program, backend="vector")
    steps = [[("insert", "t", (1,))],  # q: held, without rows yet
             [("insert", "q", (-1, 2)), ("insert", "t", ("x",))],  # boom fails on "x"
             [("insert", "s", (3,))]]
    for inputs in steps:
        reports = []
        for engine in (here, there):
            for op, relation, row in inputs:
                getattr(engine, op)(relation, row)
            reports.append([(e.code, e.message) for r in engine.run() for e in r.errors])
        assert reports[1] == reports[0]
        assert there.rows("q") == here.rows("q")
    assert reports == [[], []] and there.vector.held == {"q": 3}


def test_a_held_relation_emptied_or_filled_afresh() -> None:
    """Afresh, a held relation's rows before and after are compared by their counts when
    either side has none (an empty table has no columns' types)."""
    program = "p(X, Y) :- a(X, Y), notin c(X).\n"
    here, there = Engine(program, backend="local"), Engine(program, backend="vector")
    steps = [[("insert", "a", (1, 2))], [("insert", "c", (1,))],
             [("delete", "c", (1,)), ("insert", "a", (3, 4))]]
    helds = []
    for inputs in steps:
        for engine in (here, there):
            for op, relation, row in inputs:
                getattr(engine, op)(relation, row)
            reports = engine.run()
        assert there.rows("p") == here.rows("p")
        helds.append([r.held for r in reports])
    assert helds == [[{"p": (1, 0)}], [{"p": (0, 1)}], [{"p": (2, 0)}]]


def _chain(n: int) -> str:
    return "".join(f"e({i}, {i + 1}).\n" for i in range(n))


CLOSURE = "tc(X, Y) :- e(X, Y).\ntc(X, Z) :- tc(X, Y), e(Y, Z).\n"


@pytest.mark.parametrize(("program", "options", "limits"), [
    # a round limit below the default: rounds, not one recursive query (it cannot count)
    (CLOSURE + _chain(10), {"backend": "vector"}, {"max_rounds": 3}),
    # a stratum moving mid-step has only the rounds left to take
    (CLOSURE + "tc(X, Z) :- tc(X, Y), f(Y, Z).\n" + _chain(8), {"vector_threshold": 25},
     {"max_rounds": 5}),
    # the round that moves it is checked against the limits first
    (CLOSURE + "tc(X, Z) :- tc(X, Y), f(Y, Z).\ne(0, 1). e(1, 2).\n"
     + "".join(f"e(2, {i}).\n" for i in range(100, 116))
     + "".join(f"f(2, {i}).\n" for i in range(200, 215)), {"vector_threshold": 100},
     {"max_tuples": 80}),
    # a round's queries do not see each other's rows (as many rounds as locally)
    ("a(100, 101).\nf(0).\na(X, Y) :- e(X, Y).\na(X, Z) :- z(X, Y), e(Y, Z).\n"
     "z(X, Y) :- f(X), a(X, Y).\n" + _chain(6), {"backend": "vector"}, {"max_rounds": 11}),
])
def test_step_limits_stop_duckdb_where_they_stop_the_local_backend(
        program: str, options: dict, limits: dict) -> None:
    here, there = Engine(program, backend="local", **limits), Engine(program, **options,
                                                                      **limits)
    errors = [[(e.code, e.message) for r in engine.run() for e in r.errors]
              for engine in (here, there)]
    assert errors[1] == errors[0] and [code for code, _ in errors[0]] == ["E307"]
    for name, relation in here.relations.items():
        if not relation.event:
            assert there.rows(name) == here.rows(name) == [], name


def test_a_result_not_taken_leaves_a_relation_not_held_as_it_was() -> None:
    """`a` could be held from its first evaluation, but `b`'s null sends the stratum to the
    local backend (the evaluation of `a` is not taken); then `a`'s rows and the report are
    the local backend's."""
    program = "a(X) :- s(X).\nb(X, Y) :- t(X, Y).\n"
    reports = []
    for backend in ("local", "vector"):
        engine = Engine(program, backend=backend)
        engine.insert("t", (1, None))
        engine.run()
        engine.delete("t", (1, None))
        engine.insert("s", (5,))
        (report,) = engine.run()
        reports.append((report.counts("inserted"), engine.rows("a")))
    assert reports[1] == reports[0] == ({"a": 1, "s": 1}, [(5,)])


def test_a_listener_between_steps_brings_back_the_rows_as_they_are() -> None:
    engine = Engine(TC, backend="vector")
    engine.insert("link", (1, 2))
    engine.run()
    engine.insert("link", (2, 3))
    engine.run()
    assert engine.vector.held == {"reach": 3}
    engine.register_listener("reach", None, lambda row: None, op="insert")
    assert engine.store.rows("reach") == {(1, 2), (1, 3), (2, 3)} and engine.vector.held == {}


def test_a_listener_registered_in_an_attempt_rolled_back_goes_with_it() -> None:
    """A pre listener registers a listener on a held relation, then the attempt fails: the
    registration goes with it (the step runs again without the failing event), and the
    relation stays in DuckDB, its stratum there, the rows right."""
    engine = Engine(TC + "bad(Z) :- tick[N], Z := 10 / (N - 9).\n", backend="vector")
    for row in [(1, 2), (2, 3), (3, 4)]:
        engine.insert("link", row)
    engine.run()
    assert engine.vector.held == {"reach": 6}
    seen: list[tuple] = []
    engine.register_listener("tick", None, lambda row: engine.register_listener(
        "reach", None, seen.append, op="insert"), phase="pre")
    engine.generate_event("tick", (9,))  # its pre listener registers the other; it fails
    reports = engine.run()  # (and a step for the error event)
    assert [[error.code for error in report.errors] for report in reports] == [["E302"], []]
    assert [listener.relation for listener in engine.listeners] == ["tick"]
    assert engine.vector.held == {"reach": 6}
    assert engine.store.rows("reach") == set()
    engine.insert("link", (4, 5))
    (report,) = engine.run()
    assert engine.rows("reach") == [(1, 2), (1, 3), (1, 4), (1, 5), (2, 3), (2, 4), (2, 5),
                                    (3, 4), (3, 5), (4, 5)]
    assert (report.counts("inserted"), report.held) == ({"link": 1}, {"reach": (4, 0)})
    assert seen == []


def test_a_listener_registered_in_an_interrupted_step_goes_with_it() -> None:
    engine = Engine(TC + "went(N) :- go[N].\n", backend="vector")
    engine.insert("link", (1, 2))
    engine.run()
    assert engine.vector.held == {"reach": 1}
    interrupted: list[tuple] = []

    def interrupt(row: tuple) -> None:
        if not interrupted:
            engine.register_listener("reach", None, print, op="insert")
            interrupted.append(row)
            raise KeyboardInterrupt

    engine.register_listener("go", None, interrupt, phase="pre")
    engine.generate_event("go", (1,))
    with pytest.raises(KeyboardInterrupt):
        engine.run()
    assert [listener.relation for listener in engine.listeners] == ["go"]
    assert engine.vector.held == {"reach": 1}
    engine.insert("link", (2, 3))
    engine.run()  # (the event again: it interrupts no more)
    assert engine.rows("reach") == [(1, 2), (1, 3), (2, 3)] and engine.rows("went") == [(1,)]
    assert engine.vector.held == {"reach": 3}


def test_output_of_a_relation_held_in_duckdb(tmp_path: Path) -> None:
    """-D writes it from DuckDB in sorted batches, CSV and Parquet alike, as the local
    backend writes it (with --print of another relation too: no result left open)."""
    (tmp_path / "p.olg").write_text('link(1, 2). link(2, 3). link(3, 1). link(3, 4).\n'
                                    "reach(X, Y) :- link(X, Y).\n"
                                    "reach(X, Z) :- link(X, Y), reach(Y, Z).\n")
    for fmt in ("csv", "parquet"):
        outputs = []
        for backend in ("local", "vector"):
            out = tmp_path / f"{backend}-{fmt}"
            out.mkdir()
            code, _, err = run_cli(["run", "p.olg", "--backend", backend, "--print", "link",
                                    "-D", str(out), "--output-format", fmt], cwd=tmp_path)
            assert (code, err) == (0, "")
            outputs.append({f.name: f.read_bytes() for f in out.iterdir()})
        assert outputs[1] == outputs[0] and sorted(outputs[0]) == [f"link.{fmt}",
                                                                   f"reach.{fmt}"]


def test_final_tables_of_a_relation_held_in_duckdb(tmp_path: Path) -> None:
    """Printed from DuckDB's sorted rows, as Arrow (text and CSV), as the local backend
    prints them from the store."""
    program = ('link(1, "a"). link(2, "b"). step(1, 2). step(2, 1).\n'
               "reach(X, S) :- link(X, S).\nreach(X, S) :- step(X, Y), reach(Y, S).\n")
    (tmp_path / "p.olg").write_text(program)
    engine = Engine(program, backend="vector")
    engine.run()
    assert engine.vector.held == {"reach": 4}
    assert engine.sorted_table("reach").to_pylist() == [
        {"c0": 1, "c1": "a"}, {"c0": 1, "c1": "b"}, {"c0": 2, "c1": "a"}, {"c0": 2, "c1": "b"}]
    for fmt in ("text", "csv"):
        outputs = [run_cli(["run", "p.olg", "--backend", backend, "--format", fmt],
                           cwd=tmp_path) for backend in ("local", "vector")]
        assert outputs[1] == outputs[0] and outputs[0][0] == 0
    assert outputs[0][1].splitlines()[-4:] == ["1,0.0,reach,final,1,a", "1,0.0,reach,final,1,b",
                                               "1,0.0,reach,final,2,a", "1,0.0,reach,final,2,b"]


def test_explain_says_where_the_views_run_and_what_lives_in_duckdb(tmp_path: Path) -> None:
    (tmp_path / "p.olg").write_text(TC + "far(X) :- reach(X, _), notin link(X, 1).\n"
                                    "bad(X) :- link(X, Y), Z := X / Y.\n")
    code, out, _ = run_cli(["explain", "p.olg", "--vector-threshold", "50",
                            "--spark-threshold", "5000"], cwd=tmp_path)
    lines = [line for line in out.splitlines() if "vector" in line]
    assert (code, lines) == (0, [
        "  views run locally with --backend vector (/ and % do not run on DuckDB yet)",
        "  views run on DuckDB with --backend vector (auto: at 50 rows)",
        "  far lives only in DuckDB with --backend vector (auto: from 5,000 rows), unless a "
        "listener reads it"])
