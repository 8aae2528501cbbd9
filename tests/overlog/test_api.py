"""The public API of `import overlog` and the exception tree."""

from __future__ import annotations

import subprocess
import sys

import pytest

import overlog
from overlog.diagnostics import Diagnostic
from overlog.source import Span


def test_public_names() -> None:
    assert set(overlog.__all__) == {
        "ANY", "CheckedProgram", "CompileError", "DeliveryError", "Diagnostic", "Engine",
        "OverlogError", "OverlogRuntimeError", "ParseError", "ProgramPlan", "SemanticError",
        "StepError", "StepReport", "compile_program", "format_program", "parse"}
    for name in overlog.__all__:
        assert getattr(overlog, name) is not None


def test_unknown_attribute() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        overlog.Nope  # noqa: B018


def test_exception_tree() -> None:
    assert issubclass(overlog.CompileError, overlog.OverlogError)
    assert issubclass(overlog.ParseError, overlog.CompileError)
    assert issubclass(overlog.SemanticError, overlog.CompileError)
    assert issubclass(overlog.OverlogRuntimeError, overlog.OverlogError)
    assert issubclass(overlog.StepError, overlog.OverlogRuntimeError)
    assert issubclass(overlog.DeliveryError, overlog.OverlogRuntimeError)
    assert issubclass(overlog.DeliveryError, ValueError)


def test_compile_program_returns_the_program_plan() -> None:
    plan = overlog.compile_program('link("a", "b").\nreach(X, Y) :- link(X, Y).\n')
    assert isinstance(plan, overlog.ProgramPlan)
    assert list(plan.relations) == ["link", "reach"]
    assert [(r.kind, r.stratum, r.head) for r in plan.rules] == [("view", 0, "reach")]
    assert [trigger.relation for trigger in plan.rules[0].triggers] == ["link"]
    assert plan.checked.warnings == ()


def test_compile_error_carries_every_diagnostic() -> None:
    with pytest.raises(overlog.SemanticError) as caught:
        overlog.compile_program("p(X) :- q(Y).\nr(1).\nr(1, 2).\n", path="m.olg")
    codes = [(d.code, d.span.line, d.span.column) for d in caught.value.diagnostics]
    assert codes == [("E205", 1, 3), ("W202", 1, 11), ("E201", 3, 1)]
    assert str(caught.value).startswith("m.olg:1:3: error[E205]: unsafe rule: variable `X`")


def test_parse_error_is_located() -> None:
    with pytest.raises(overlog.ParseError) as caught:
        overlog.compile_program("p(1)\n")
    assert caught.value.diagnostics == [Diagnostic(
        "E101", "unexpected end of file; expected `.` or `:-`", Span(1, 5, 1, 5),
        notes=caught.value.diagnostics[0].notes)]


def test_user_functions_are_known_when_declared() -> None:
    source = "item(1).\nh(X, H) :- item(X), H := f_hash(X).\n"
    with pytest.raises(overlog.SemanticError, match="unknown function `f_hash`"):
        overlog.compile_program(source)
    plan = overlog.compile_program(source, functions={"f_hash": (1, 1)})
    assert len(plan.rules) == 1


def test_native_handlers_are_checked_against_the_standard_library() -> None:
    source = 'a["x"].\nregisterNativeEventHandler["a", "stdlib.io:nope"].\n'
    with pytest.raises(overlog.SemanticError, match=r"`stdlib.io` has no function `nope`"):
        overlog.compile_program(source)
    from overlog.compile import compile_program  # the language layer checks only the form

    (handler,) = compile_program(source).handlers
    assert (handler.relation, handler.target, handler.span.line) == ("a", "stdlib.io:nope", 2)


def test_importing_overlog_loads_nothing_else() -> None:
    code = ("import sys, overlog; "
            "print(sorted(m for m in sys.modules if m.startswith('overlog.')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout == "[]\n"


def test_the_language_layer_does_not_load_the_runtime() -> None:
    code = ("import sys, overlog.compile; overlog.compile.compile_program('p(1).'); "
            "print(sorted(m for m in sys.modules if m.startswith(('overlog.runtime', "
            "'overlog.stdlib', 'runtime', 'stdlib'))))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout == "[]\n"


def test_load_queues_a_file_s_rows_for_the_next_step(tmp_path) -> None:
    from overlog import parquetio

    engine = overlog.Engine("t(X, Y) :- link(X, Y).\nseen(X) :- ping[X].\n", backend="local")
    (tmp_path / "link.csv").write_text('1,"a"\n2,b\n')
    parquetio.write_table(str(tmp_path / "more.parquet"), "link", [(3, "c")], 2)
    (tmp_path / "ping.csv").write_text("7\n")
    assert [engine.load("link", str(tmp_path / "link.csv")),
            engine.load("link", str(tmp_path / "more.parquet")),
            engine.load("ping", str(tmp_path / "ping.csv"))] == [2, 1, 1]
    engine.run()
    assert engine.rows("t") == [(1, "a"), (2, "b"), (3, "c")]
    assert engine.rows("seen") == [(7,)]


@pytest.mark.parametrize(("name", "text", "error"), [
    ("bad.csv", "1,a\n2\n", "{path}:2: expected 2 fields, got 1"),
    ("bad.txt", "1,a\n", "{path}: load reads .csv and .parquet files"),
])
def test_load_refuses_a_bad_file_whole(tmp_path, name, text, error) -> None:
    engine = overlog.Engine("t(X, Y) :- link(X, Y).\n", backend="local")
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError) as caught:
        engine.load("link", str(path))
    assert str(caught.value) == error.format(path=path)
    assert engine.pending == []


@pytest.mark.parametrize(("options", "error"), [
    ({"spark_threshold": -1}, "spark_threshold must be an int >= 0, not -1"),
    ({"spark_threshold": True}, "spark_threshold must be an int >= 0, not True"),
    ({"spark_threshold": 5, "backend": "local"},
     "spark_threshold goes with backend 'auto', not 'local'"),
])
def test_a_bad_spark_threshold_is_refused(options, error) -> None:
    with pytest.raises(ValueError) as caught:
        overlog.Engine("p(1).\n", **options)
    assert str(caught.value) == error


_TC = ('link("a", "b"). link("b", "c"). link("c", "c").\n'
       "reach(X, Y) :- link(X, Y).\nreach(X, Z) :- link(X, Y), reach(Y, Z).\n")


def test_query_by_atom_or_by_pattern() -> None:
    engine = overlog.Engine(_TC)
    engine.step()
    assert engine.query('reach("a", X)') == [("a", "b"), ("a", "c")]
    assert engine.query("reach(X, X)?") == [("c", "c")]
    assert engine.query('reach(_, "c")') == [("a", "c"), ("b", "c"), ("c", "c")]
    assert engine.query("reach", ("b", overlog.ANY)) == [("b", "c")]
    assert engine.query("reach") == engine.rows("reach")
    assert engine.query("link([1], 2)") == []
    for bad, error in [
            ("reach(X + 1, Y)", "not a query: 'reach(X + 1, Y)' (its arguments are values, "
                                "variables and _)"),
            ("reach(@X, Y)", "not a query: 'reach(@X, Y)' (write an atom, such as "
                             'reach("a", X))'),
            ("reach(X, Y), link(X, Y)", "not a query: 'reach(X, Y), link(X, Y)' (write an "
                                        'atom, such as reach("a", X))'),
            ("reach(X)", "`reach` has 2 fields; the pattern has 1")]:
        with pytest.raises(ValueError) as caught:
            engine.query(bad)
        assert str(caught.value) == error
    with pytest.raises(KeyError, match="unknown relation `nope`"):
        engine.query("nope(X)")


def test_insert_many_takes_rows_or_frames_and_queues_all_or_nothing() -> None:
    pandas = pytest.importorskip("pandas")
    pyarrow = pytest.importorskip("pyarrow")
    engine = overlog.Engine(_TC)
    assert engine.insert_many("link", [("d", "e"), ["e", "f"]]) == 2
    assert engine.insert_many("link", pandas.DataFrame({"s": ["x"], "d": [None]})) == 1
    assert engine.insert_many("link", pyarrow.table({"s": ["p"], "d": [1]})) == 1
    with pytest.raises(ValueError, match="`link` has 2 fields, got 1"):
        engine.insert_many("link", [("g", "h"), ("i",)])
    with pytest.raises(TypeError, match="insert_many takes rows"):
        engine.insert_many("link", "ab")
    engine.step()
    assert engine.rows("link") == [("a", "b"), ("b", "c"), ("c", "c"), ("d", "e"),
                                   ("e", "f"), ("p", 1), ("x", None)]


def test_to_pandas_and_the_html_views() -> None:
    pytest.importorskip("pandas")
    engine = overlog.Engine(_TC + "ev[1, [2]].\n", "tc.olg")
    report = engine.step()
    frame = engine.to_pandas("reach", columns=["src", "dst"])
    assert (list(frame.columns), frame.values.tolist()) == (
        ["src", "dst"], [["a", "b"], ["a", "c"], ["b", "c"], ["c", "c"]])
    assert list(engine.to_pandas("ev").columns) == ["c0", "c1"]
    assert engine.to_pandas("ev").values.tolist() == [[1, (2,)]]
    with pytest.raises(ValueError, match="`reach` has 2 fields; 1 column names given"):
        engine.to_pandas("reach", ["x"])
    assert repr(engine) == "<Engine tc.olg: 3 relations, step 1, time 0>"
    html = report._repr_html_()
    assert html.splitlines()[:4] == [
        "<div class='overlog'><p><b>step 1, time 0</b></p>",
        "<table><caption style='text-align: left'>ev (events, 1 row)</caption>",
        "<tr><td>1</td><td>[2]</td></tr>", "</table>"]
    assert "<caption style='text-align: left'>reach (table, 4 rows)</caption>" in \
        engine._repr_html_()


def test_to_pandas_keeps_the_values_types() -> None:
    pytest.importorskip("pandas")
    engine = overlog.Engine("q(1, 2). q(null, 3). q(f_pow(2, 70), 1). s(1.5). s(2).\n")
    engine.step()
    frame = engine.to_pandas("q")
    assert [str(t) for t in frame.dtypes] == ["object", "int64"]
    assert frame.values.tolist() == [[None, 3], [1, 2], [2**70, 1]]
    assert [type(v) for v in engine.to_pandas("s")["c0"]] == [float, int]
