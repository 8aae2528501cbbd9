"""Dialects: choosing one, P2's preprocessor, and P2 programs given their canonical meaning."""

from __future__ import annotations

from pathlib import Path

import pytest

import overlog
from overlog.dialect import Choice, DialectError, choose
from overlog.preprocess import PreprocessError, preprocess
from tests.goldens import run_cli

# -- choosing ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("p(1).\n", Choice("canonical", "default")),
    ("// dialect: p2\np(1).\n", Choice("p2", "pragma", line=1)),
    ("\n\n%% dialect=canonical\nwatchmod(p, \"i\").\n", Choice("canonical", "pragma", line=3)),
    ("/* dialect: jol */\n", Choice("jol", "pragma", line=1)),
    ("// a program\nprogram ping;\n", Choice("jol", "detected", "a `program name;` header", 2)),
    ("p(1).\n#define N 3\n", Choice("p2", "detected", "`#define`", 2)),
    ("p(1).\n  # include \"x.olg\"\n", Choice("p2", "detected", "`#include`", 2)),
    ("watchmod(p, \"i\").\n", Choice("p2", "detected", "`watchmod`", 1)),
    ("a(@N) :- periodic (@N, E, 1).\n",
     Choice("p2", "detected", "`periodic(...)` in parentheses", 1)),
    ("p(1).\n%% a comment\n", Choice("p2", "detected", "`%%` comments", 2)),
    # the first sign decides; a sign inside the canonical dialect's syntax is none
    ("%% one\n#define X 1\n", Choice("p2", "detected", "`%%` comments", 1)),
    ("a(@N) :- periodic[@N, E, 1].\n", Choice("canonical", "default")),
    ("p(X) :- q(X), X % 2 == 0.\n", Choice("canonical", "default")),
])
def test_choose(text: str, expected: Choice) -> None:
    assert choose(text) == expected


def test_a_given_dialect_wins_and_names_are_checked() -> None:
    assert choose("#define X 1\n", "canonical") == Choice("canonical", "given")
    assert choose("// dialect: P2\n").name == "p2"  # any case
    with pytest.raises(DialectError) as raised:
        choose("p(1).\n", "p3")
    assert str(raised.value) == "unknown dialect 'p3' (known: canonical, p2, jol)"
    with pytest.raises(ValueError, match="unknown dialect 'p3'"):
        overlog.compile_program("p(1).\n", dialect="p3")
    with pytest.raises(overlog.ParseError) as raised:
        overlog.compile_program("// dialect: p3\np(1).\n", "d.olg")
    assert raised.value.render() == (
        "d.olg:1:1: error[E112]: unknown dialect 'p3' in the pragma (known: canonical, p2, "
        "jol)\n"
        "  1 | // dialect: p3\n"
        "    | ^^^^^^^^^^^^^^")


@pytest.mark.parametrize("text", [
    '/*\n%% notes\n*/\nlink("a").\n',  # `%%` in a block comment
    'msg("use periodic(...) for timers").\n',  # in a string
    'note("#define X").\n',
    "watchmod(1, 2).\nwatchmod(X, Y) :- q(X, Y).\nq(1, 2).\n",  # a relation named so
    'node("a").\nwatchmod(N, "seen") :- node(N).\n',
    "// dialect: the one from the paper\np(1).\n",  # prose, not a pragma
])
def test_signs_in_comments_strings_or_names_are_none(text: str) -> None:
    assert choose(text) == Choice("canonical", "default")
    plan = overlog.compile_program(text)  # and it is a canonical program
    assert (plan.dialect, plan.checked.warnings) == (Choice("canonical", "default"), ())


def test_the_pragma_is_on_the_first_five_lines() -> None:
    assert choose("\n" * 4 + "// dialect: p2\n").name == "p2"
    assert choose("\n" * 5 + "// dialect: p2\n").name == "canonical"


# -- the preprocessor -----------------------------------------------------------------------

def test_defines_and_conditions() -> None:
    text = ("#define ME \"localhost:10000\"\n"
            "#define PERIOD (2 * HALF)\n"
            "#define HALF 3\n"
            "a(ME, PERIOD, \"ME\", MEX).\n"
            "#ifdef HALF\n"
            "b(1).\n"
            "#else\n"
            "b(2).\n"
            "#endif\n"
            "#undef HALF\n"
            "#ifndef HALF\n"
            "c(HALF).\n"
            "#endif\n")
    done = preprocess(text, "p.olg")
    assert done.text.split("\n") == [
        "", "", "", 'a("localhost:10000", (2 * 3), "ME", MEX).', "", "b(1).", "", "", "", "",
        "", "c(HALF).", "", ""]
    assert done.origins == tuple(("p.olg", n) for n in range(1, 15))
    assert done.macros == {"ME": '"localhost:10000"', "PERIOD": "(2 * HALF)"}


def test_outside_definitions_come_first_as_in_cpp() -> None:
    done = preprocess("x(ME).\n#define ME 1\ny(ME).\n#undef ME\nz(ME).\n", "p.olg",
                      {"ME": "2"})
    assert done.text == "x(2).\n\ny(1).\n\nz(ME).\n"
    assert [(w.code, w.message) for w in done.warnings] == [
        ("W206", "`#define ME` (p.olg, line 2) replaces `--define ME=2`, as cpp does")]
    assert preprocess("#ifndef ME\n#define ME 1\n#endif\nx(ME).\n", "p.olg",
                      {"ME": "2"}).text == "\n\n\nx(2).\n"


def test_crlf_lines_and_nested_conditions() -> None:
    text = "#define FOO 1\r\n#ifdef FOO\r\na(FOO).\r\n#endif\r\n"
    assert preprocess(text, "p.olg").text == "\n\na(1).\r\n\n"
    text = "#ifdef DEBUG\n#if VERBOSE\nt(0).\n#else\nt(9).\n#endif\nt(1).\n#endif\nt(2).\n"
    assert preprocess(text, "p.olg").text == "\n" * 8 + "t(2).\n"



def test_a_macro_that_names_itself_stops() -> None:
    assert preprocess("#define A B + 1\n#define B A\nx(A).\n", "p.olg").text == \
        "\n\nx(A + 1).\n"


def test_comments_shebang_and_percent() -> None:
    text = "#!/usr/bin/env overlog\n%% c #define X 1\n/* #define Y 2\n*/ a(1). %% end\n"
    assert preprocess(text, "p.olg").text == "\n" + " " * 16 + "\n" + " " * 14 + \
        "\n   a(1).       \n"


def test_include_is_relative_to_the_including_file(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "common.olg").write_text("#define N 3\nlink(N).\n")
    main = tmp_path / "main.olg"
    main.write_text('x(1).\n#include "lib/common.olg"\ny(N).\n')
    done = preprocess(main.read_text(), str(main))
    assert done.text == "x(1).\n\n\nlink(3).\n\ny(3).\n"
    common = str(tmp_path / "lib" / "common.olg")
    assert done.origins == ((str(main), 1), (str(main), 2), (common, 1), (common, 2),
                            (common, 3), (str(main), 3), (str(main), 4))


def test_errors_in_included_files_name_their_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "common.olg").write_text("link(1).\nbad(X :- .\n")
    main = tmp_path / "main.olg"
    main.write_text('// dialect: p2\n#include "common.olg"\n')
    code, out, err = run_cli(["check", str(main)], tmp_path)
    assert (code, out) == (1, "")
    assert err == (
        f"{tmp_path}/common.olg:2:7: error[E101]: unexpected `:-`; expected an operator, "
        "`)`, `,` or `<`\n"
        "  2 | bad(X :- .\n"
        "    |       ^^\n")


@pytest.mark.parametrize(("text", "line", "message"), [
    ("#if X\n", 1, "`#if` is not supported"),
    ("#pragma once\n", 1, "`#pragma` is not supported"),
    ("p(1).\n#define F(x) x\n", 2, "`#define F(...)`: macros with arguments are not supported"),
    ("#define\n", 1, "`#define` takes a name and a value: `#define NAME value`"),
    ("#else\n", 1, "`#else` without `#ifdef` or `#ifndef`"),
    ("#ifdef X\n#else\n#else\n#endif\n", 3, "a second `#else` for one `#ifdef`"),
    ("#endif\n", 1, "`#endif` without `#ifdef` or `#ifndef`"),
    ("p(1).\n#ifndef X\np(2).\n", 2, "`#ifdef` or `#ifndef` without `#endif`"),
    ("#ifdef\n", 1, "`#ifdef` takes one macro name"),
    ('#include "nowhere.olg"\n', 1, "cannot include ./nowhere.olg: No such file or directory"),
    ('#include nowhere\n', 1, '`#include` takes a file name: `#include "file.olg"`'),
    ("#\n", 1, "a `#` line that is no directive"),
])
def test_directive_errors(text: str, line: int, message: str) -> None:
    with pytest.raises(PreprocessError) as raised:
        preprocess(text, "./p.olg")
    assert raised.value.diagnostic.code == "E108"
    assert raised.value.diagnostic.message == message
    assert raised.value.diagnostic.span.line == line


def test_an_include_that_includes_itself(tmp_path: Path) -> None:
    path = tmp_path / "loop.olg"
    path.write_text('#include "loop.olg"\n')
    with pytest.raises(PreprocessError) as raised:
        preprocess(path.read_text(), str(path))
    assert raised.value.diagnostic.message == \
        "`#include` nested more than 20 deep (does a file include itself?)"


# -- P2 programs ------------------------------------------------------------------------------

def _rows(engine: overlog.Engine, relation: str) -> list[tuple]:
    return sorted(engine.rows(relation), key=repr)


def test_relations_not_materialized_are_events() -> None:
    source = ("#define ME \"n1\"\n"
              "materialize(count, infinity, 1, keys(1)).\n"
              "count(@ME, 0).\n"
              "r1 ping(@N, E) :- periodic(@N, E, 1, 3).\n"
              "r2 count(@N, C + 1) :- ping(@N, _), count(@N, C).\n"
              "r3 pong(@N, C) :- ping(@N, _), count(@N, C).\n")
    engine = overlog.Engine(source, address="n1")
    relations = engine.plan.relations
    assert [(name, rel.event) for name, rel in relations.items() if name != "error"] == [
        ("count", False), ("ping", True), ("periodic", True), ("pong", True)]
    seen: list[tuple] = []
    engine.register_listener("pong", None, seen.append)
    engine.run()
    assert seen == [("n1", 0), ("n1", 1), ("n1", 2)]
    assert _rows(engine, "count") == [("n1", 3)]
    assert engine.plan.dialect == Choice("p2", "detected", "`#define`", 1)


def test_defines_are_macros_in_p2() -> None:
    source = ("// dialect: p2\nmaterialize(t, infinity, infinity, keys(1)).\n"
              "#define LIMIT 10\nt(LIMIT * 2).\nt(WHO).\n")
    engine = overlog.Engine(source, defines={"LIMIT": 4, "WHO": 'b"o'})
    engine.run()
    assert _rows(engine, "t") == [('b"o',), (20,)]  # as cpp: the file's #define wins
    assert [(w.code, w.message) for w in engine.plan.checked.warnings] == [
        ("W206", "`#define LIMIT` (<input>, line 3) replaces `--define LIMIT=4`, as cpp "
                 "does")]


def test_p2_functions_and_string_plus() -> None:
    source = ("// dialect: p2\n"
              "materialize(out, infinity, infinity, keys(1)).\n"
              "go(1).\n"
              "out(\"append\", f_append(7)) :- go(_).\n"
              "out(\"member\", f_member([1, 2], 2)) :- go(_).\n"
              "out(\"absent\", (f_member([1, 2], 3) == 0)) :- go(_).\n"
              "out(\"contains\", f_contains([1, 2], 1)) :- go(_).\n"
              "out(\"initlist\", f_initlist(1, \"a\")) :- go(_).\n"
              "out(\"removeLast\", f_removeLast([1, 2, 3])) :- go(_).\n"
              "out(\"strfind\", f_strfind(\"lo\", \"hello\")) :- go(_).\n"
              "out(\"nofind\", f_strfind(\"x\", \"hello\")) :- go(_).\n"
              "out(\"sha1\", f_sha1(\"abc\")) :- go(_).\n"
              "out(\"typeOf\", f_typeOf(2.5)) :- go(_).\n"
              "out(\"text\", \"id\" + 5 + \"/\" + 2.5) :- go(_).\n"
              "out(\"sum\", X + 5) :- go(X).\n")
    engine = overlog.Engine(source)
    engine.run()
    assert _rows(engine, "out") == [
        ("absent", True), ("append", (7,)), ("contains", 1), ("initlist", (1, "a")),
        ("member", 1), ("nofind", -1), ("removeLast", (1, 2)),
        ("sha1", 0xA9993E364706816ABA3E25717850C26C9CD0D89D), ("strfind", 3), ("sum", 6),
        ("text", "id5/2.5"), ("typeOf", "float")]


def test_p2_functions_are_p2s_only() -> None:
    with pytest.raises(overlog.SemanticError) as raised:
        overlog.compile_program("q(1).\np(Y) :- q(X), Y := f_sha1(X).\n", "c.olg")
    assert raised.value.errors[0].message == "unknown function `f_sha1`"
    engine = overlog.Engine("q(1).\np(Y) :- q(X), Y := f_sha1(X).\n")  # registered later
    engine.register_function("f_sha1", lambda x: 42)
    engine.run()
    assert _rows(engine, "p") == [(42,)]
    canonical = overlog.Engine("q([1]).\np(f_member(X, 1)) :- q(X).\n")
    canonical.run()
    assert _rows(canonical, "p") == [(True,)]


def test_watch_of_an_unused_relation_is_a_warning_in_p2() -> None:
    plan = overlog.compile_program("// dialect: p2\nwatch(nothing).\np(1).\n", "w.olg")
    assert [(d.code, d.message) for d in plan.checked.warnings] == [
        ("W205", "`watch` names relation `nothing`, which the program does not use "
                 "(nothing to print)")]
    with pytest.raises(overlog.SemanticError, match="E220"):
        overlog.compile_program("watch(nothing).\np(1).\n")


def test_watchmod_chooses_what_is_printed(tmp_path: Path) -> None:
    (tmp_path / "w.olg").write_text(
        "materialize(t, infinity, infinity, keys(1)).\n"
        "watchmod(t, \"d\").\n"
        "watchmod(e, \"s\").\n"
        "go(1). go(2).\n"
        "t(X) :- go(X).\n"
        "e(X) :- go(X).\n"
        "delete t(X) :- t(X), X == 1.\n")
    code, out, err = run_cli(["run", "w.olg"], tmp_path)
    assert (code, out, err) == (
        0, "[step 1 @0]  e[1]\n[step 1 @0]  e[2]\n[step 3 @0] -t(1)\nt (1 row)\n  2\n",
        "w.olg: note[N201]: read as the P2 dialect: the program uses `watchmod` (line 2)\n"
        "  note: choose with --dialect canonical|p2|jol, or a first line `// dialect: p2`\n")


def test_explain_names_the_dialect(tmp_path: Path) -> None:
    (tmp_path / "p.olg").write_text("p(1).\n")
    code, out, _ = run_cli(["explain", "--dialect", "p2", "p.olg"], tmp_path)
    assert code == 0
    assert out.splitlines()[:2] == ["program p.olg: 1 relation, 0 rules, 1 stratum",
                                    "dialect: p2 (chosen)"]
    code, out, _ = run_cli(["explain", "p.olg"], tmp_path)
    assert out.splitlines()[1] == ""  # canonical: nothing said


def test_p2_aggregates_follow_deletions() -> None:
    source = ("// dialect: p2\n"
              "materialize(link, infinity, infinity, keys(1, 2, 3)).\n"
              "materialize(best, infinity, infinity, keys(1)).\n"
              "materialize(spread, infinity, infinity, keys(1)).\n"
              "best(S, a_MIN<C>, P) :- link(S, C, P).\n"
              "spread(S, a_MIN<C>, a_MAX<C>, a_COUNTDISTINCT<C>) :- link(S, C, _).\n")
    engine = overlog.Engine(source)
    for row in [("a", 3, "x"), ("a", 1, "y"), ("a", 1, "w"), ("a", 7, "z")]:
        engine.insert("link", row)
    engine.run()
    assert _rows(engine, "best") == [("a", 1, "w")]
    assert _rows(engine, "spread") == [("a", 1, 7, 3)]
    engine.delete("link", ("a", 1, "w"))
    engine.delete("link", ("a", 7, "z"))
    engine.run()
    assert _rows(engine, "best") == [("a", 1, "y")]
    assert _rows(engine, "spread") == [("a", 1, 3, 2)]
    engine.delete("link", ("a", 1, "y"))
    engine.delete("link", ("a", 3, "x"))
    engine.run()
    assert _rows(engine, "best") == _rows(engine, "spread") == []


def test_several_aggregates_stay_an_error_in_the_canonical_dialect() -> None:
    with pytest.raises(overlog.SemanticError) as raised:
        overlog.compile_program("q(1, 2).\ns(A, min<B>, max<B>) :- q(A, B).\n")
    assert [d.code for d in raised.value.errors] == ["E222"]


def test_event_aggregates_of_nothing() -> None:
    source = ("q(1). q(2).\n"
              "materialize(t, infinity, infinity, keys(1, 2)).\n"
              "t(1, 5).\n"
              "r(X, a_MIN<Y>, a_COUNT<*>, a_COUNTDISTINCT<Y>) :- q(X), t(X, Y).\n")
    seen: list[tuple] = []
    engine = overlog.Engine("// dialect: p2\n" + source)
    engine.register_listener("r", None, seen.append)
    engine.run()
    assert sorted(seen) == [(1, 5, 1, 1), (2, None, 0, 0)]
    canonical = overlog.Engine("q[1]. q[2].\nt(1, 5).\n"
                               "r[X, min<Y>] :- q[X], t(X, Y).\n"
                               "c[X, countdistinct<Y>] :- q[X], t(X, Y).\n")
    seen = []
    canonical.register_listener("r", None, seen.append)
    canonical.register_listener("c", None, seen.append)
    canonical.run()
    assert sorted(seen) == [(1, 1), (1, 5), (2, 0)]  # no min of nothing


def test_p2_programs_may_have_latin1_comments(tmp_path: Path) -> None:
    (tmp_path / "old.olg").write_bytes(b"/* r\xe9seau */\n%% caf\xe9\nt(1).\nwatch(t).\n")
    code, out, err = run_cli(["run", "old.olg"], tmp_path)
    assert (code, out) == (0, "[step 1 @0]  t[1]\n")
    assert err.splitlines()[0] == ("old.olg: note: read as Latin-1 text: not UTF-8 text "
                                   "(byte 0xe9 at line 1, column 5), in a comment")
    engine = overlog.Engine.from_file(str(tmp_path / "old.olg"))
    assert engine.plan.dialect.name == "p2"
    (tmp_path / "text.olg").write_bytes(b"// dialect: p2\nt(\"caf\xe9\").\n")
    (tmp_path / "canonical.olg").write_bytes(b"/* r\xe9seau */\nt(1).\n")
    for name, where in (("text.olg", "line 2, column 7"), ("canonical.olg", "line 1, column 5")):
        code, out, err = run_cli(["check", name], tmp_path)
        assert (code, out) == (2, "")
        assert err == f"overlog: error: cannot read {name}: not UTF-8 text (byte 0xe9 at " \
            f"{where})\n"


def test_unsupported_p2_statements_are_named(tmp_path: Path) -> None:
    (tmp_path / "p.olg").write_text('// dialect: p2\nstage("Hash", in, out).\nt(1).\n'
                                    '  traceTable(t).\n')
    code, out, err = run_cli(["check", "p.olg"], tmp_path)
    assert (code, out) == (1, "")
    assert err == (
        "p.olg:2:1: error[E110]: P2's `stage` is not supported (it runs C++ code through "
        "P2's ONI; register a Python function or a native handler instead)\n"
        '  2 | stage("Hash", in, out).\n'
        "    | ^^^^^\n"
        "  note: docs/dialects.md lists what runs\n"
        "p.olg:4:3: error[E110]: P2's `traceTable` is not supported (use `watch` or "
        "`overlog run --trace`)\n"
        "  4 |   traceTable(t).\n"
        "    |   ^^^^^^^^^^\n"
        "  note: docs/dialects.md lists what runs\n")


# -- JOL -----------------------------------------------------------------------------------

JOL_PING = """program pingpong;

import java.lang.String;

define(link, keys(0, 1), {String, String});
define(pings, keys(0), {String, Integer});
define(ping, {String, String, Integer});
timer(clock, physical, 1000, 3, 0);
watch(ping);
watch(pings, a);

link("a", "b");
pings("a", 0L);

/* count a ping a second; a rule's name may stand on the line before it */
send
public ping(X, Y, N) :- clock(_, _, _), link(X, Y), pings(X, N);

count
pings(X, N + 1) :- ping(X, _, N);
"""


def test_a_jol_program_runs(tmp_path: Path) -> None:
    (tmp_path / "ping.olg").write_text(JOL_PING)
    code, out, err = run_cli(["run", "ping.olg"], tmp_path)
    assert code == 0
    assert out == (
        '[step 1 @0] +pings("a", 0)\n'
        '[step 2 @1]  ping["a", "b", 0]\n'
        '[step 3 @1] +pings("a", 1)\n'
        '[step 4 @2]  ping["a", "b", 1]\n'
        '[step 5 @2] +pings("a", 2)\n'
        '[step 6 @3]  ping["a", "b", 2]\n'
        '[step 7 @3] +pings("a", 3)\n'
        'pings (1 row)\n  "a"  3\n')
    assert err.startswith("ping.olg: note[N201]: read as the JOL dialect: the program uses "
                          "a `program name;` header (line 1)\n")
    plan = overlog.compile_program(JOL_PING)
    assert [(r.name, r.event, r.keys) for r in plan.relations.values()
            if r.name != "periodic"] == [
        ("clock", True, (0, 1, 2)), ("link", False, (0, 1)), ("pings", False, (0,)),
        ("ping", True, (0, 1, 2))]
    assert [rule.name for rule in plan.rules] == ["timer_clock", "send", "count"]
    assert plan.timers == ((1.0, 3),)


@pytest.mark.parametrize(("line", "column", "message"), [
    ("x(X, Y) :- y(X), Y := new ValueList();", 23, "a Java object (`new`) is not supported"),
    ("x(X, N) :- y(X), N := X.size();", 23, "a Java method call is not supported"),
    ("x(generic<(X)>) :- y(X);", 3, "a `generic<...>` aggregate (Java code) is not supported"),
    ("x(X) :- y#insert(X);", 9, "a `#insert`/`#delete` modifier is not supported"),
    ("async x(X) :- y(X);", 1, "an `async` rule is not supported"),
])
def test_java_interop_is_named(line: str, column: int, message: str) -> None:
    with pytest.raises(overlog.ParseError) as raised:
        overlog.compile_program(f"program p;\n{line}\n", dialect="jol")
    (error,) = raised.value.errors
    assert (error.code, error.message, error.span.line, error.span.column) == (
        "E111", f"{message}: the engine runs no Java", 2, column)


def test_jol_declarations() -> None:
    with pytest.raises(overlog.ParseError) as raised:
        overlog.compile_program("program p;\ndefine(t, keys(2), {Integer, Integer});\n")
    assert [(e.code, e.message) for e in raised.value.errors] == [
        ("E203", "key position 2 is out of range for `t`, which has 2 fields (JOL's "
                 "positions are 0-based)")]
    with pytest.raises(overlog.ParseError) as raised:
        overlog.compile_program("program p;\ntimer(t, logical, 0, 1, 0);\n")
    assert [e.message for e in raised.value.errors] == [
        "timer `t` needs a period above 0 and a TTL of at least 1"]
    # keys(): the whole tuple (a set); `;` and `.` in strings stay
    engine = overlog.Engine('program p;\ndefine(t, keys(), {String});\nt("a;b.");\n'
                            't("a;b.");\nn(count<*>) :- t(_);\ndefine(n, keys(), {Integer});\n')
    engine.run()
    assert _rows(engine, "t") == [("a;b.",)] and _rows(engine, "n") == [(1,)]


def test_logical_timers_fire_once_a_step() -> None:
    engine = overlog.Engine("program p;\ntimer(tick, logical, 1, 3, 0);\n"
                            "define(seen, keys(0), {Long});\n"
                            "seen(f_now()) :- tick(P, T, D);\n")
    engine.run()
    assert _rows(engine, "seen") == [(1.0,), (2.0,), (3.0,)]


def test_ranked_and_collecting_aggregates() -> None:
    source = ('score("a", 3). score("a", 9). score("a", 5). score("a", 1). score("b", 2).\n'
              "top(P, topk<S, 2>) :- score(P, S).\n"
              "bottom(P, bottomk<S, 2>) :- score(P, S).\n"
              "kinds(P, set<K>) :- score(P, S), K := S % 2.\n"
              "all(P, list<K>) :- score(P, S), K := S % 2.\n")
    engine = overlog.Engine(source)
    engine.run()
    assert _rows(engine, "top") == [("a", (9, 5)), ("b", (2,))]
    assert _rows(engine, "bottom") == [("a", (1, 3)), ("b", (2,))]
    assert _rows(engine, "kinds") == [("a", (1,)), ("b", (0,))]
    assert _rows(engine, "all") == [("a", (1, 1, 1, 1)), ("b", (0,))]
    for text, message in [("t(topk<X>) :- s(X).", "`topk` takes a count: `topk<X, 3>`"),
                          ("t(min<X, 2>) :- s(X).",
                           "only `topk` and `bottomk` take a count, not `min`"),
                          ("t(topk<X, 0>) :- s(X).", "the count of `topk` must be at least 1")]:
        with pytest.raises(overlog.SemanticError) as raised:
            overlog.compile_program(f"s(1).\n{text}\n")
        assert [(e.code, e.message) for e in raised.value.errors] == [("E209", message)]


def test_typed_keys_are_checked() -> None:
    source = ("// dialect: p2\n"
              "materialize(t, infinity, infinity, keys(1:str, 2:int32)).\n"
              "t(\"a\", 1).\n")
    with pytest.raises(overlog.SemanticError) as raised:
        overlog.compile_program(source + "t(2, \"b\").\nt(\"c\", 4294967296).\n")
    assert [(e.code, e.message, e.span.line, e.span.column) for e in raised.value.errors] == [
        ("E229", "field 1 of `t` must be str, not int", 4, 3),
        ("E229", "field 2 of `t` must be int32, not string", 4, 6),
        ("E229", "field 2 of `t` must be int32, and 4294967296 is out of its range", 5, 8)]
    engine = overlog.Engine(source + "go(1). go(\"b\").\nt(X, 7) :- go(X).\n")
    reports = engine.run()
    assert _rows(engine, "t") == [("a", 1), ("b", 7)]
    assert [error.message for report in reports for error in report.errors] == [
        "field 1 of `t` must be str, not int"]
    with pytest.raises(TypeError, match=r"^field 2 of `t` must be int32, not float$"):
        engine.insert("t", ("x", 1.5))
    with pytest.raises(overlog.DeliveryError, match=r"^field 1 of `t` must be str, not null$"):
        engine.deliver("t", (None, 1))
    with pytest.raises(overlog.SemanticError, match="unknown key type `int8`"):
        overlog.compile_program("// dialect: p2\nmaterialize(t, 1, 1, keys(1:int8)).\nt(1).\n")


def test_tables_without_keys_are_bags_in_p2() -> None:
    source = ("// dialect: p2\n"
              "materialize(t, infinity, infinity, keys()).\n"
              "materialize(n, infinity, infinity, keys(1)).\n"
              "t(1). t(1). t(2).\n"
              "go(1).\n"
              "t(X) :- go(X).\n"
              "n(X, a_COUNT<*>) :- t(X).\n"
              "del(2).\n"
              "delete t(X) :- del(X).\n")
    engine = overlog.Engine(source)
    engine.run()
    assert _rows(engine, "t") == [(1, 1), (1, 2), (1, 4)]
    assert _rows(engine, "n") == [(1, 3)]
    engine.generate_event("del", (1,))
    engine.run()
    assert _rows(engine, "t") == _rows(engine, "n") == []
    with pytest.raises(overlog.SemanticError) as raised:
        overlog.compile_program("// dialect: p2\nmaterialize(t, infinity, infinity, keys()).\n"
                                "materialize(s, infinity, infinity, keys(1)).\n"
                                "s(1).\nr1 t(X) :- s(X).\n")
    assert [(e.code, e.message, e.span.line) for e in raised.value.errors] == [
        ("E230", "`t` is a table without keys (a bag): only a rule triggered by an event can "
                 "insert into it", 5)]


def test_argmin_of_a_computed_value_and_helper_names() -> None:
    source = ("// dialect: p2\n"
              "materialize(link, infinity, infinity, keys(1, 2, 4)).\n"
              "materialize(best, infinity, infinity, keys(1, 2)).\n"
              "materialize(s, infinity, infinity, keys(1)).\n"
              "link(\"a\", \"b\", 3, \"p1\"). link(\"a\", \"b\", 1, \"p2\").\n"
              "best(S, D, a_MIN<C>, P) :- link(S, D, C1, P), C := C1 * 2.\n"
              "s(G, a_MIN<C>, a_MAX<D>) :- link(G, _, C, D), link(G, _, _D, _).\n")
    engine = overlog.Engine(source)
    engine.run()
    assert _rows(engine, "best") == [("a", "b", 2, "p2")]
    assert _rows(engine, "s") == [("a", 1, "p2")]


def test_aggregates_into_bags() -> None:
    engine = overlog.Engine(
        "// dialect: p2\n"
        "materialize(t, infinity, infinity, keys()).\n"
        "materialize(m, infinity, infinity, keys()).\n"
        "materialize(s, infinity, infinity, keys(1, 2)).\n"
        "s(\"a\", 1). s(\"a\", 5). s(\"a\", 7).\n"
        "e(\"a\").\n"
        "t(G, a_COUNT<*>) :- e(G), s(G, _).\n"
        "m(G, a_MIN<X>, a_MAX<X>) :- e(G), s(G, X).\n")
    engine.run()
    assert _rows(engine, "t") == [("a", 3, 1)]
    assert _rows(engine, "m") == [("a", 1, 7, 2)]


def test_runtime_errors_in_included_files_name_them(tmp_path: Path) -> None:
    (tmp_path / "rt.inc").write_text("%% inc\nt(1).\nu(Y) :- t(X), Y := X / 0.\n")
    (tmp_path / "rt.olg").write_text("// dialect: p2\n"
                                     "materialize(t, infinity, infinity, keys(1)).\n"
                                     "materialize(u, infinity, infinity, keys(1)).\n"
                                     '#include "rt.inc"\n')
    code, _, err = run_cli(["run", "rt.olg"], tmp_path)
    assert code == 3
    assert err.splitlines()[0] == "rt.inc:3:20: error[E302]: step 1 (time 0): division by zero"


def test_included_files_may_have_latin1_comments(tmp_path: Path) -> None:
    (tmp_path / "lat.inc").write_bytes(b"/* caf\xe9 */\nt(1).\n")
    (tmp_path / "main.olg").write_text('// dialect: p2\n#include "lat.inc"\nwatch(t).\n')
    code, out, _ = run_cli(["run", "main.olg"], tmp_path)
    assert (code, out) == (0, "[step 1 @0]  t[1]\n")


def test_a_bare_condition_keeps_what_is_true() -> None:
    engine = overlog.Engine("p(1).\nq(X) :- p(X), X.\nb(true). b(false).\nr(X) :- b(X), X.\n")
    reports = engine.run()
    assert (_rows(engine, "q"), _rows(engine, "r")) == ([], [(True,)])
    assert [e for report in reports for e in report.errors] == []


def test_identifiers_wrap_around_the_ring(tmp_path: Path) -> None:
    ring = 2**160
    source = ("// dialect: p2\n"
              "materialize(out, infinity, infinity, keys(1)).\n"
              "go(1).\n"
              "out(\"below\", 0x0I - 1) :- go(_).\n"
              "out(\"over\", (0x1I << 159) + (0x1I << 159)) :- go(_).\n"
              "out(\"finger\", N + (0x1I << 3)) :- go(_), N := 0x%xI.\n"
              "out(\"distance\", K - B - 1) :- go(_), K := 0x2I, B := 0x10I.\n"
              "out(\"plain\", 5 - 10) :- go(_).\n"
              "out(\"same\", (0x5I == 5)) :- go(_).\n") % (ring - 1)
    engine = overlog.Engine(source)
    engine.run()
    assert _rows(engine, "out") == [
        ("below", ring - 1), ("distance", ring - 15), ("finger", 7), ("over", 0),
        ("plain", -5), ("same", True)]
    assert all(type(v) is int for _, v in engine.rows("out") if v is not True)
    (tmp_path / "ids.olg").write_text(source)
    code, out, _ = run_cli(["run", "ids.olg", "--print", "out", "--format", "jsonl"], tmp_path)
    assert (code, out) == (0, "".join(  # as plain ints
        f'{{"table": "out", "row": ["{name}", {"true" if v is True else v}]}}\n'
        for name, v in _rows(engine, "out")))


def test_watchmod_anywhere_a_statement_starts() -> None:
    plan = overlog.compile_program('// dialect: p2\nmaterialize(t, infinity, infinity, '
                                   'keys(1)). watchmod(t, "i").\nt(1). watchmod(t,\n "d").\n')
    assert [(w.name, w.modes) for w in plan.checked.program.statements
            if isinstance(w, overlog.syntax.Watch)] == [("t", "i"), ("t", "d")]


def test_bag_deletes_match_computed_fields() -> None:
    engine = overlog.Engine("// dialect: p2\n"
                            "materialize(item, infinity, infinity, keys()).\n"
                            'item("a", 1). item("a", 1). item("b", 2).\n'
                            "delete item(X, Z) :- ev(X, Y), Z := Y + 1.\n"
                            'ev("a", 0).\n')
    engine.run()
    assert _rows(engine, "item") == [("b", 2, 3)]


def test_identifiers_are_ints_to_floats_and_sums() -> None:
    engine = overlog.Engine("// dialect: p2\n"
                            "materialize(t, infinity, infinity, keys(1, 2)).\n"
                            "materialize(s, infinity, infinity, keys(1)).\n"
                            "t(1, 0x5I). t(1, 5.0). t(2, 0x1I).\n"
                            "s(0, a_SUM<X>) :- t(_, X).\n")
    engine.run()
    assert len(engine.rows("t")) == 3  # 0x5I and 5.0 are two values, as 5 and 5.0
    assert _rows(engine, "s") == [(0, 11.0)]
    vector = overlog.Engine("// dialect: p2\nmaterialize(v, infinity, infinity, keys(1)).\n"
                            "materialize(u, infinity, infinity, keys(1)).\nu(1).\n"
                            "v(Y) :- u(X), Y := X + 0xffI.\n", backend="vector")
    vector.run()
    assert vector.vector.local == {0: "a P2 identifier (its arithmetic wraps)"}
