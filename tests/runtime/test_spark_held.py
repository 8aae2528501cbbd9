"""Relations held in Spark (runtime/spark.py, docs/spark.md "Relations held in Spark"): a
relation derived and read only by strata that run on Spark keeps its rows there, never in
the store, and comes back to the store, exactly, when Python needs its rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from overlog import Engine
from overlog.runtime import spark
from overlog.runtime.seminaive import Fixpoint
from overlog.source import UnreadableSource
from tests.goldens import run_cli

pytestmark = pytest.mark.spark

TC = ("reach(X, Y) :- link(X, Y).\nreach(X, Z) :- link(X, Y), reach(Y, Z).\n"
      "far(X, Y) :- reach(X, Y), notin link(X, Y).\n")


@pytest.fixture(scope="module", autouse=True)
def session() -> None:
    spark.session()  # started once, kept for the process


def _alike(program: str, steps: list[list[tuple]], **options) -> tuple[Engine, list]:
    """Run ``steps`` (lists of (op, relation, row)) on both backends; every persistent
    table alike after each step. Returns the Spark side's engine and errors."""
    here = Engine(program, backend="local", **options)
    there = Engine(program, backend="spark", **options)
    errors = []
    for batch in [[], *steps]:
        found = []
        for engine in (here, there):
            for op, relation, row in batch:
                getattr(engine, op)(relation, row)
            found.append([(e.code, e.quarantined) for r in engine.run() for e in r.errors])
        assert found[1] == found[0]
        errors.append(found[1])
        for name, relation in here.relations.items():
            if not relation.event:
                assert there.rows(name) == here.rows(name), name
    return there, errors


def test_derived_relations_stay_in_spark_and_follow_changes() -> None:
    steps = [[("insert", "link", (1, 2)), ("insert", "link", (2, 3))],
             [("insert", "link", (3, 4))],
             [("delete", "link", (2, 3))],
             [("insert", "link", (2, 3)), ("insert", "link", (4, 1))]]
    there, _ = _alike(TC, steps)
    assert there.spark.held == {"reach": 16, "far": 12}
    assert there.store.rows("reach") == there.store.rows("far") == set()
    assert there.spark.local == {}


DELETIONS = [[("insert", "link", (1, 2)), ("insert", "link", (2, 3)), ("insert", "link", (3, 4)),
              ("insert", "link", (1, 3))],
             [("delete", "link", (2, 3))],  # (1, 3) still reaches 3 and 4
             [("delete", "link", (1, 2)), ("insert", "link", (4, 5))],
             [("delete", "link", (3, 4)), ("insert", "link", (5, 1))]]


@pytest.mark.parametrize("stored", [False, True])
def test_deletions_on_spark_run_dred_from_the_resident_tables(stored: bool) -> None:
    """reach's stratum takes each step's deletions incrementally (DRed: over-delete, then
    rederive, then insert), and so does far's, which negates link (the rows leaving link
    are seeds) and reads reach (held in Spark: its changes as DataFrames). Read by a
    stratum that runs locally (f_car), reach lives in the store, which takes the changes;
    far's stratum (with that rule) runs locally then."""
    program = TC + ("first(X, f_car([Y])) :- reach(X, Y), notin off(X).\n" if stored else "")
    there, _ = _alike(program, DELETIONS)
    assert there.spark.incremental == (3 if stored else 6)
    assert there.spark.held == ({} if stored else {"reach": 6, "far": 3})
    assert there.rows("reach") == [(1, 3), (4, 1), (4, 3), (4, 5), (5, 1), (5, 3)]


def test_dred_on_spark_that_would_remove_most_of_a_cycle_evaluates_afresh(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # (a small ring, and the floor of what over-deletion may remove lowered to match: each
    # round of Spark costs a fraction of a second here)
    monkeypatch.setattr(Fixpoint, "RECOMPUTE_MIN", 200)
    ring = [("insert", "link", (i, (i + 1) % 16)) for i in range(16)]
    there, _ = _alike(TC, [ring, [("delete", "link", (0, 1))], [("delete", "link", (5, 6))]])
    # reach: over-deleting all 256 rows passes 200 (and a quarter): afresh; then a chain of
    # 120 rows loses 55 (1-5 to 6-15 and 0), fewer than 200: DRed. far takes what reach
    # lost (136 rows, then 55) as a DataFrame: DRed both times
    assert there.spark.incremental == 3
    assert there.spark.held["reach"] == 5 * 4 // 2 + 11 * 10 // 2


def test_the_step_report_counts_what_changed_in_spark(tmp_path: Path) -> None:
    engine = Engine(TC, backend="spark")
    for row in [(1, 2), (2, 3)]:
        engine.insert("link", row)
    (report,) = engine.run()
    assert (report.held, report.inserted) == ({"reach": (3, 0), "far": (1, 0)},
                                              {"link": [(1, 2), (2, 3)]})
    engine.delete("link", (1, 2))
    (report,) = engine.run()
    assert report.held == {"reach": (0, 2), "far": (0, 1)}
    (tmp_path / "p.olg").write_text(TC + "link(1, 2). link(2, 3).\n")
    code, _, err = run_cli(["run", "p.olg", "--backend", "spark", "--trace"], cwd=tmp_path)
    assert (code, err) == (0, "trace: step 1 @0: stratum 0 on Spark derived 3, stratum 1 on "
                              "Spark derived 1; +2 link, +3 reach (in Spark), +1 far (in "
                              "Spark)\n")


def test_inserts_and_deletes_into_a_held_relation_apply_to_its_rows() -> None:
    steps = [[("insert", "link", (1, 2)), ("insert", "link", (2, 3))],
             [("insert", "reach", (7, 7))],  # back in the store for the step, then held
             [("delete", "reach", (1, 3))],  # still derived: it stays
             [("delete", "reach", (7, 7))]]
    there, _ = _alike(TC, steps)
    assert there.spark.held == {"reach": 3, "far": 1}


def test_a_reader_that_cannot_run_on_spark_takes_the_rows_back_with_the_steps_changes(
        ) -> None:
    """`tag` gets a string where its ints were: the stratum reading `reach` and `tag` runs
    locally, `reach` (changed by Spark in that very step) comes back to the store."""
    program = TC + "named(X, T) :- reach(X, Y), tag(Y, T).\n"
    steps = [[("insert", "link", (1, 2)), ("insert", "link", (2, 3)),
              ("insert", "tag", (3, 30))],
             [("insert", "link", (3, 4)), ("insert", "tag", (4, "four"))],
             [("insert", "link", (4, 5))]]
    there, _ = _alike(program, steps)
    assert there.rows("named") == [(1, 30), (1, "four"), (2, 30), (2, "four"), (3, "four")]
    # held while its reader runs on Spark, then not: the reader would take it back each step
    assert (there.spark.held, list(there.spark.local.values())) == (
        {"far": 6}, ["a column holding bigint and string values"])


def test_a_stratum_that_cannot_run_on_spark_takes_its_held_heads_back() -> None:
    steps = [[("insert", "link", (1, 2)), ("insert", "link", (2, 3))],
             [("insert", "link", ("a", 1))],  # link mixes types: the stratum runs locally
             [("delete", "link", ("a", 1))],
             [("insert", "link", (3, 1))]]
    there, _ = _alike(TC, steps)
    assert there.spark.held == {"reach": 9, "far": 6}


def test_a_step_rolled_back_puts_the_held_rows_back_as_they_were() -> None:
    program = TC + "bad(Z) :- reach(X, _), boom(X, D), Z := 6 / D.\n"
    steps = [[("insert", "link", (1, 2)), ("insert", "link", (2, 3))],
             [("insert", "link", (3, 4)), ("insert", "boom", (1, 0))],  # boom fails alone
             [("insert", "link", (4, 5)), ("insert", "boom", (2, 3))]]
    there, errors = _alike(program, steps)
    assert errors[2] == [("E302", (("insert", "boom", (1, 0)),))]
    assert there.spark.held == {"reach": 10, "far": 6, "bad": 1}
    assert there.rows("bad") == [(2,)]


def test_a_step_past_the_tuple_limit_leaves_the_held_rows_as_they_were() -> None:
    steps = [[("insert", "link", (i, i + 1)) for i in range(3)],
             [("insert", "link", (i, i + 1)) for i in range(3, 9)],  # too many at once
             [("insert", "link", (3, 4))]]
    there, errors = _alike(TC, steps, max_tuples=20)
    assert [code for code, _ in errors[2]] == ["E307"]
    assert there.spark.held == {"reach": 10, "far": 6}


def test_a_listener_brings_a_held_relation_back() -> None:
    engine = Engine(TC, backend="spark")
    for row in [(1, 2), (2, 3)]:
        engine.insert("link", row)
    engine.run()
    seen: list[tuple] = []
    engine.register_listener("reach", None, seen.append, op="insert")
    assert engine.spark.held == {"far": 1}
    assert engine.store.rows("reach") == {(1, 2), (2, 3), (1, 3)}
    engine.insert("link", (3, 4))
    engine.run()
    assert sorted(seen) == [(1, 4), (2, 4), (3, 4)]
    assert engine.spark.held == {"far": 3}


def test_a_listener_registered_in_an_attempt_rolled_back_goes_with_it() -> None:
    """As with DuckDB (test_vector): the relation stays in Spark."""
    engine = Engine(TC + "bad(Z) :- tick[N], Z := 10 / (N - 9).\n", backend="spark")
    for row in [(1, 2), (2, 3)]:
        engine.insert("link", row)
    engine.run()
    assert engine.spark.held == {"reach": 3, "far": 1}
    seen: list[tuple] = []
    engine.register_listener("tick", None, lambda row: engine.register_listener(
        "reach", None, seen.append, op="insert"), phase="pre")
    engine.generate_event("tick", (9,))  # its pre listener registers the other; it fails
    reports = engine.run()  # (and a step for the error event)
    assert [[error.code for error in report.errors] for report in reports] == [["E302"], []]
    assert [listener.relation for listener in engine.listeners] == ["tick"]
    assert engine.spark.held == {"reach": 3, "far": 1}
    engine.insert("link", (3, 4))
    engine.run()
    assert engine.rows("reach") == [(1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4)]
    assert seen == [] and engine.spark.held == {"reach": 6, "far": 3}


def test_rows_collects_a_held_relation_up_to_a_limit() -> None:
    engine = Engine(TC, backend="spark")
    for row in [(1, 2), (2, 3)]:
        engine.insert("link", row)
    engine.run()
    with pytest.raises(ValueError) as caught:
        engine.rows("reach", max_rows=2)
    assert str(caught.value) == ("`reach` holds 3 rows in Spark, more than rows() collects "
                                 "(max_rows=2): pass max_rows=None to collect them all, or "
                                 "read them with dataframe()")
    assert engine.rows("reach", max_rows=None) == [(1, 2), (1, 3), (2, 3)]
    assert sorted(engine.dataframe("reach").collect()) == [(1, 2), (1, 3), (2, 3)]


def test_auto_holds_a_head_once_it_reaches_the_threshold() -> None:
    """13 links move the stratum to Spark; reach, one row, stays in the store until a step
    grows it past 12 rows on Spark: from then on it is held there."""
    program = ("reach(X, Y) :- link(X, Y), X < 100.\n"
               "reach(X, Z) :- link(X, Y), reach(Y, Z).\n")
    here, there = Engine(program, backend="local"), Engine(program, spark_threshold=12)
    steps = [[(1000 + i, 2000 + i) for i in range(12)] + [(0, 1)],
             [(i, i + 1) for i in range(1, 6)]]
    held = []
    for rows in steps:
        for engine in (here, there):
            for row in rows:
                engine.insert("link", row)
            engine.run()
        assert there.rows("reach") == here.rows("reach")
        held.append(dict(there.spark.held))
    assert held == [{}, {"reach": 21}]
    assert there.spark.moved == {"stratum 0": 13}
    assert there.store.rows("reach") == set()


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_output_streams_a_held_relation_from_spark(tmp_path: Path, fmt: str) -> None:
    (tmp_path / "p.olg").write_text(TC + 'link(1, 2). link(2, 3). link(4, 5).\n'
                                    'w(X, 0.5, "s", true, null) :- far(X, _).\n')
    outputs = []
    for backend in ("local", "spark"):
        out = tmp_path / backend
        code, _, err = run_cli(["run", "p.olg", "--backend", backend, "-D", str(out),
                                "--output-format", fmt], cwd=tmp_path)
        assert (code, err) == (0, "")
        outputs.append({p.name: p.read_bytes() for p in out.iterdir()})
    assert outputs[1] == outputs[0]
    assert sorted(outputs[0]) == [f"far.{fmt}", f"link.{fmt}", f"reach.{fmt}", f"w.{fmt}"]


def test_run_prints_a_held_relation_above_the_limit_only_when_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from overlog.runtime import engine

    monkeypatch.setattr(engine, "ROWS_LIMIT", 2)
    (tmp_path / "p.olg").write_text(TC + "link(1, 2). link(2, 3).\n")
    code, out, err = run_cli(["run", "p.olg", "--backend", "spark"], cwd=tmp_path)
    assert (code, out, err) == (0, "link (2 rows)\n  1  2\n  2  3\nfar (1 row)\n  1  3\n",
                                "overlog: note: `reach` holds 3 rows in Spark: not printed "
                                "(--print reach prints them; -D DIR writes them)\n")
    code, out, _ = run_cli(["run", "p.olg", "--backend", "spark", "--print", "reach"],
                           cwd=tmp_path)
    assert (code, out) == (0, "reach (3 rows)\n  1  2\n  1  3\n  2  3\n")


def test_auto_moves_a_stratum_whose_tables_grow_past_the_threshold_in_a_step() -> None:
    """10 links and no reach row as the step starts; the local rounds grow reach past 30
    rows: the stratum moves to Spark at once, what it did locally undone, and reach ends
    held there."""
    program = TC.splitlines()[0] + "\n" + TC.splitlines()[1] + "\n"
    here, there = Engine(program, backend="local"), Engine(program, spark_threshold=30)
    for engine in (here, there):
        for i in range(10):
            engine.insert("link", (i, i + 1))
    here.run()
    (report,) = there.run()
    assert there.spark.moved == {"stratum 0": 37}  # 10 links, 27 reach rows in 3 rounds
    assert report.firings == {"stratum 0 on Spark": 55}
    assert (report.held, there.spark.held) == ({"reach": (55, 0)}, {"reach": 55})
    assert there.rows("reach") == here.rows("reach")


PATH_PROGRAM = ("path(X, Y) :- edge(X, Y).\npath(X, Z) :- path(X, Y), edge(Y, Z).\n"
                "far(X, Y) :- path(X, Y), notin edge(X, Y).\n")


def test_input_relations_from_parquet_and_dataframes_stay_in_spark(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [1, 2, 3], "b": [2, 3, 4]}), tmp_path / "edge.parquet")
    frame = spark.session().createDataFrame([(5, 6), (6, 7)], "x int, y long")
    here, there = Engine(PATH_PROGRAM, backend="local"), Engine(PATH_PROGRAM, backend="spark")
    steps = [("load", ("edge", str(tmp_path / "edge.parquet"))), ("insert", ("edge", (4, 5))),
             ("delete", ("edge", (2, 3))), ("insert_dataframe", ("edge", frame)),
             ("insert", ("edge", (6, 7)))]  # there already
    held = []
    for op, args in steps:
        for engine in (here, there):
            getattr(engine, op)(*args)
        here.run()
        (report,) = there.run()
        for name in ("edge", "path", "far"):
            assert there.rows(name) == here.rows(name), name
        held.append((report.held, dict(there.spark.held)))
    assert held == [
        ({"edge": (3, 0), "path": (6, 0), "far": (3, 0)}, {"edge": 3, "path": 6, "far": 3}),
        ({"edge": (1, 0), "path": (4, 0), "far": (3, 0)}, {"edge": 4, "path": 10, "far": 6}),
        ({"edge": (0, 1), "path": (0, 6), "far": (0, 5)}, {"edge": 3, "path": 4, "far": 1}),
        ({"edge": (2, 0), "path": (7, 0), "far": (5, 0)}, {"edge": 5, "path": 11, "far": 6}),
        ({}, {"edge": 5, "path": 11, "far": 6})]
    assert there.store.rows("edge") == there.store.asserted("edge") == set()
    assert sorted(there.dataframe("edge").collect()) == [(1, 2), (3, 4), (4, 5), (5, 6), (6, 7)]


def test_an_input_row_spark_cannot_hold_brings_the_input_relation_back() -> None:
    here, there = Engine(PATH_PROGRAM, backend="local"), Engine(PATH_PROGRAM, backend="spark")
    frame = spark.session().createDataFrame([(1, 2), (2, 3)], "x long, y long")
    for engine in (here, there):
        engine.insert_dataframe("edge", frame)
        engine.run()
        engine.insert("edge", ("a", 1))
        engine.run()
    for name in ("edge", "path", "far"):
        assert there.rows(name) == here.rows(name), name
    assert there.spark.held == {}
    assert there.store.asserted("edge") == {(1, 2), (2, 3), ("a", 1)}


def test_a_dataframe_that_fails_a_step_is_quarantined_as_one_input() -> None:
    program = PATH_PROGRAM + "bad(Z) :- edge(X, Y), Z := 6 / (Y - X - 1).\n"
    engine = Engine(program, backend="spark")
    good = spark.session().createDataFrame([(1, 3), (3, 5)], "x long, y long")
    engine.insert_dataframe("edge", good)
    engine.run()
    engine.insert_dataframe("edge", spark.session().createDataFrame([(7, 8)], "x long, y long"))
    engine.insert("edge", (5, 7))
    (report, _) = engine.run()
    assert [(e.code, e.message, e.quarantined) for e in report.errors] == [
        ("E302", "division by zero", (("insert", "edge", "a DataFrame of 1 rows"),))]
    assert engine.rows("edge") == [(1, 3), (3, 5), (5, 7)]
    assert engine.rows("bad") == [(6,)]


@pytest.mark.parametrize(("columns", "message"), [
    ("x long", "`edge` has 2 fields; the DataFrame has 1 columns"),
    ("x long, y timestamp", "`edge` field 2: a timestamp column; Overlog's values are ints, "
                            "floats, strings, booleans and null"),
])
def test_a_dataframe_of_other_types_is_refused(columns: str, message: str) -> None:
    engine = Engine(PATH_PROGRAM, backend="spark")
    frame = spark.session().createDataFrame([], columns)
    with pytest.raises(ValueError) as caught:
        engine.insert_dataframe("edge", frame)
    assert str(caught.value) == message


def test_nan_in_a_dataframe_is_refused() -> None:
    engine = Engine(PATH_PROGRAM, backend="spark")
    frame = spark.session().createDataFrame([(1.0, float("nan"))], "x double, y double")
    with pytest.raises(ValueError) as caught:
        engine.insert_dataframe("edge", frame)
    assert str(caught.value) == "`edge`: NaN, in a float column, is no Overlog value"


KEPT = "kept(A, B, C) :- row(A, B, C).\n"
CSV_CELLS = ('h1,h2,h3\na,1,2.5\n  b ,2,1e3\n\n"x,y",3,infinity\nc,-4,-infinity\r\n'
             '"q""uo",007,.5\nab"c,null,null\n"",+5,5.\n,6,1e-400\n')


def _load_both(tmp_path: Path, text: str | bytes, arity: int = 3, **options,
               ) -> tuple[Engine, Engine]:
    """``text`` as row.csv, loaded (with a header) by both backends and run."""
    path = tmp_path / "row.csv"
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8", newline="")
    else:
        path.write_bytes(text)
    program = KEPT if arity == 3 else "kept(A, B) :- row(A, B).\n"
    here = Engine(program, backend="local")
    there = Engine(program, **({"backend": "spark"} | options))
    counts = [engine.load("row", str(path), header=True) for engine in (here, there)]
    assert counts[1] == counts[0]
    for engine in (here, there):
        engine.run()
    for name in ("row", "kept"):
        assert there.rows(name) == here.rows(name), name
    return here, there


def test_csv_files_are_read_by_spark_as_the_python_reader_reads_them(tmp_path: Path) -> None:
    here, there = _load_both(tmp_path, CSV_CELLS)
    assert there.spark.held == {"row": 8, "kept": 8}
    assert there.store.asserted("row") == set()
    assert there.dataframe("row").dtypes == [("c0", "string"), ("c1", "bigint"),
                                             ("c2", "double")]
    assert here.rows("row") == [
        ("", 5, 5.0), ("", 6, 0.0), ("  b ", 2, 1000.0), ("a", 1, 2.5), ('ab"c', None, None),
        ("c", -4, float("-inf")), ('q"uo', 7, 0.5), ("x,y", 3, float("inf"))]


def test_csv_booleans_and_nulls_only_are_read_by_spark(tmp_path: Path) -> None:
    here, there = _load_both(tmp_path, "h\ntrue,null\nfalse,null\n", arity=2)
    assert there.spark.held == {"row": 2, "kept": 2}
    assert here.rows("row") == [(False, None), (True, None)]


def test_csv_cells_ending_in_unicode_line_separators_stay_strings(tmp_path: Path) -> None:
    here, there = _load_both(tmp_path, 'h\n1,5.5\u2028\n2,"a\u2028b"\n', arity=2)
    assert there.spark.held == {"row": 2, "kept": 2}
    assert here.rows("row") == [(1, "5.5\u2028"), (2, "a\u2028b")]


@pytest.mark.parametrize("text", [
    "h\n1,a\nx,2\n",  # a column of ints and strings
    "h\n1,2.0\n2,3\n",  # of floats and ints
    "h\n1,[2, 3]\n",  # a list
    "h\n1,99999999999999999999\n",  # an int past 64 bits
    "h\n1,-0.0\n",  # -0.0
    'h\n1,"two\nlines"\n',  # a quoted cell spanning lines
    "\ufeffh\n1,2\n",  # a byte-order mark
    'h,"x\ny"\n1,2\n',  # a header spanning lines
    "h\n1,0000000000000000000000001\n",  # an int of more digits than Spark reads
])
def test_csv_files_spark_would_read_otherwise_go_through_python(
        tmp_path: Path, text: str) -> None:
    _, there = _load_both(tmp_path, text, arity=2)
    assert "row" not in there.spark.held


@pytest.mark.parametrize(("text", "error"), [
    (b"h\n1,2\n3\n", "row.csv:3: expected 2 fields, got 1"),
    (b'h\n1,"2"x\n', "row.csv:2: text after a closing quote or bracket"),
    (b"h\n1,\xff\n", "cannot read row.csv: not UTF-8 text (byte 0xff at line 2, column 3)"),
    (b'h\n1,"a"\xe2\x80\xa8\n', "row.csv:2: text after a closing quote or bracket"),
    (b"h\n1,2\n \t\n", "row.csv:3: expected 2 fields, got 1"),
])
def test_a_bad_csv_file_is_reported_by_the_python_reader(
        tmp_path: Path, text: bytes, error: str) -> None:
    (tmp_path / "row.csv").write_bytes(text)
    engine = Engine("kept(A, B) :- row(A, B).\n", backend="spark")
    with pytest.raises((ValueError, UnreadableSource)) as caught:
        engine.load("row", str(tmp_path / "row.csv"), header=True)
    assert str(caught.value).replace(str(tmp_path) + "/", "") == error


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_auto_reads_a_file_by_spark_from_the_threshold_on(tmp_path: Path, fmt: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    small, big = [(1, 2), (3, 4)], [(i, i + 1) for i in range(10, 15)]
    for name, rows in (("small", small), ("big", big)):
        if fmt == "csv":  # the big one without a last line break
            text = "\n".join(f"{a},{b}" for a, b in rows)
            (tmp_path / f"{name}.csv").write_text(text + ("\n" if name == "small" else ""))
        else:
            pq.write_table(pa.table({"a": [a for a, _ in rows], "b": [b for _, b in rows]}),
                           tmp_path / f"{name}.{fmt}")
    engine = Engine(PATH_PROGRAM, spark_threshold=5)
    assert engine.load("edge", str(tmp_path / f"small.{fmt}")) == 2  # through Python
    engine.run()
    assert (engine.spark.held, engine.store.asserted("edge")) == ({}, {(1, 2), (3, 4)})
    assert engine.load("edge", str(tmp_path / f"big.{fmt}")) == 5  # stays in Spark
    engine.run()
    assert engine.spark.held == {"edge": 7, "path": 17, "far": 10}
    assert engine.store.asserted("edge") == set()
    assert engine.rows("path")[:3] == [(1, 2), (3, 4), (10, 11)]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_facts_from_files_run_in_spark_from_the_cli(tmp_path: Path, fmt: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "facts").mkdir()
    if fmt == "parquet":
        pq.write_table(pa.table({"a": [1, 2, 3], "b": [2, 3, 4]}),
                       tmp_path / "facts" / "edge.parquet")
    else:
        (tmp_path / "facts" / "edge.csv").write_text("1,2\n2,3\n3,4\n")
    (tmp_path / "p.olg").write_text(PATH_PROGRAM)
    code, out, err = run_cli(["run", "p.olg", "-F", "facts", "--backend", "spark",
                              "--trace"], cwd=tmp_path)
    traced = [line for line in err.splitlines() if line.startswith("trace:")]
    assert (code, traced) == (0, ["trace: step 1 @0: stratum 0 on Spark derived 6, stratum 1 "
                                  "on Spark derived 3; +3 edge (in Spark), +6 path (in "
                                  "Spark), +3 far (in Spark)"])
    assert out == ("path (6 rows)\n  1  2\n  1  3\n  1  4\n  2  3\n  2  4\n  3  4\n"
                   "edge (3 rows)\n  1  2\n  2  3\n  3  4\nfar (3 rows)\n  1  3\n  1  4\n"
                   "  2  4\n")


def test_a_step_past_the_limit_on_spark_reads_the_held_relations_back() -> None:
    """reach takes 12 new rows on Spark, far would take 9 more (max 20): far's stratum runs
    locally, with reach back in the store, and reports E307 as the local backend does."""
    steps = [[("insert", "link", (1, 2)), ("insert", "link", (2, 3))],
             [("insert", "link", (3, 4)), ("insert", "link", (4, 5)),
              ("insert", "link", (5, 6))]]
    there, errors = _alike(TC, steps, max_tuples=20)
    assert [code for code, _ in errors[2]] == ["E307"]
    assert there.rows("far") == [(1, 3)]


def test_inputs_before_a_dataframe_apply_in_their_order() -> None:
    program = PATH_PROGRAM + "tagged(X) :- tag(X), edge(X, _).\n"
    frame = spark.session().createDataFrame([(5, 6)], "x long, y long")
    here, there = Engine(program, backend="local"), Engine(program, backend="spark")
    for engine in (here, there):
        engine.insert("edge", (2, 5))
        engine.run()  # in the store
        engine.insert("edge", (1, 2))
        engine.delete("edge", (2, 5))
        engine.insert("tag", (1,))
        engine.insert_dataframe("edge", frame)
        engine.insert("tag", (5,))
        engine.run()
    for name in ("edge", "path", "far", "tagged"):
        assert there.rows(name) == here.rows(name), name
    assert there.rows("edge") == [(1, 2), (5, 6)]
    assert there.spark.held["edge"] == 2


def test_a_listener_brings_an_input_relation_back_with_its_asserted_rows() -> None:
    engine = Engine(PATH_PROGRAM, backend="spark")
    engine.insert_dataframe("edge", spark.session().createDataFrame([(1, 2)], "x long, y long"))
    engine.run()
    engine.register_listener("edge", None, lambda row: None)
    assert engine.store.rows("edge") == engine.store.asserted("edge") == {(1, 2)}
    engine.delete("edge", (1, 2))
    engine.run()
    assert (engine.rows("edge"), engine.rows("path")) == ([], [])


def test_an_input_spark_cannot_read_is_quarantined(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [1, 2, 3], "b": [2, 3, 4]}), tmp_path / "edge.parquet")
    engine = Engine(PATH_PROGRAM, backend="spark")
    engine.load("edge", str(tmp_path / "edge.parquet"))
    (tmp_path / "edge.parquet").unlink()  # read when the step runs
    engine.insert("edge", (7, 8))
    [error] = engine.run()[0].errors  # (the next step brings the error event)
    assert (error.code, error.quarantined) == ("E308", (("insert", "edge",
                                                          "a DataFrame of 3 rows"),))
    assert error.message.startswith("Spark failed on the inputs of `edge`: "
                                    "[FAILED_READ_FILE.FILE_NOT_EXIST] Encountered error "
                                    "while reading file file://")
    assert engine.rows("edge") == [(7, 8)]
