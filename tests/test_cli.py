"""The overlog command: subprocess runs of the real entry point, exit codes, output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def overlog(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "overlog", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def test_check_ok_several_files() -> None:
    result = overlog("check", "programs/tc.olg", "programs/shortest_paths.olg")
    assert result.returncode == 0
    assert result.stdout == ("programs/tc.olg: ok (2 relations, 2 rules, 1 stratum)\n"
                             "programs/shortest_paths.olg: ok (4 relations, 4 rules, 2 strata)\n")
    assert result.stderr == ""


def test_check_reports_errors_of_every_file(tmp_path: Path) -> None:
    (tmp_path / "good.olg").write_text('p(1).\n')
    (tmp_path / "bad.olg").write_text('p(X) :- q(X), X > Y.\n')
    result = overlog("check", "bad.olg", "good.olg", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == "good.olg: ok (1 relation, 0 rules, 1 stratum)\n"
    assert result.stderr == (
        "bad.olg:1:19: error[E207]: unsafe rule: variable `Y` in a comparison is not bound by "
        "the body\n"
        "  1 | p(X) :- q(X), X > Y.\n"
        "    |                   ^\n"
        "  note: bind it in a positive body atom or with `Var := expression`\n")


def test_check_missing_file_is_a_usage_error() -> None:
    result = overlog("check", "no/such/file.olg")
    assert result.returncode == 2
    assert result.stderr == ("overlog: error: cannot read no/such/file.olg: "
                             "No such file or directory\n")


def test_usage_errors_exit_2() -> None:
    assert overlog().returncode == 2
    assert overlog("frobnicate").returncode == 2
    assert overlog("check").returncode == 2


def test_explain_prints_strata() -> None:
    result = overlog("explain", "programs/shortest_paths.olg")
    assert result.returncode == 0
    assert "stratum 1: shortest, distance\n" in result.stdout
    assert "  rule 3 [view]  shortest(X, Y, min<C>) :- path(X, Y, C).\n" in result.stdout


def test_explain_says_which_relations_may_live_only_in_spark(tmp_path: Path) -> None:
    """An input relation read only by Spark-able strata, and a relation only they derive and
    read, may live only in Spark; not a watched relation, nor one an aggregate reads."""
    (tmp_path / "p.olg").write_text(
        "reach(X, Y) :- link(X, Y).\nreach(X, Z) :- link(X, Y), reach(Y, Z).\n"
        "far(X, Y) :- reach(X, Y), notin link(X, Y).\nwatch(far).\n"
        "deg(X, count<Y>) :- edge(X, Y).\n")
    result = overlog("explain", str(tmp_path / "p.olg"), "--spark-threshold", "500")
    assert result.returncode == 0, result.stderr
    notes = [line for line in result.stdout.splitlines() if "lives only" in line]
    assert notes == [
        "  link lives only in Spark when loaded from a file or a Spark DataFrame (auto: of 500 "
        "rows), unless a listener reads it",
        "  reach lives only in Spark with --backend spark (auto: from 500 rows), unless a "
        "listener reads it"]


def test_help_exits_0() -> None:
    result = overlog("--help")
    assert result.returncode == 0
    assert "check" in result.stdout


def test_run_jsonl_of_an_example() -> None:
    result = overlog("run", "programs/tc.olg", "--format", "jsonl", "--print", "link")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == ('{"step": 1, "time": 0.0, "table": "reach", "op": "insert", '
                        '"row": ["a", "b"]}')
    assert lines[-5:] == [
        '{"table": "link", "row": ["a", "b"]}', '{"table": "link", "row": ["b", "c"]}',
        '{"table": "link", "row": ["c", "d"]}', '{"table": "link", "row": ["d", "b"]}',
        '{"table": "link", "row": ["e", "a"]}']


def test_run_csv_facts_in_and_out_with_define(tmp_path: Path) -> None:
    (tmp_path / "prog.olg").write_text(
        "big(Name, N) :- size(Name, N), N > Limit.\nsize(\"seed\", 1).\n")
    facts = tmp_path / "facts"
    facts.mkdir()
    (facts / "size.csv").write_text('name,n\nalpha,10\n"007",20\nbeta,2.5\n')
    (facts / "unknown.csv").write_text("1\n")
    result = overlog("run", "prog.olg", "-F", "facts", "--header", "--define", "Limit=5",
                     "-D", "out", "--format", "csv", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ('step,time,table,op,field1,field2\n'
                             '1,0.0,big,final,"007",20\n1,0.0,big,final,alpha,10\n'
                             '1,0.0,size,final,"007",20\n1,0.0,size,final,alpha,10\n'
                             '1,0.0,size,final,beta,2.5\n1,0.0,size,final,seed,1\n')
    assert result.stderr == ("overlog: warning: facts/unknown.csv: the program has no "
                             "relation `unknown`; skipped\n")
    assert (tmp_path / "out" / "big.csv").read_text() == '"007",20\nalpha,10\n'
    assert (tmp_path / "out" / "size.csv").read_text() == \
        '"007",20\nalpha,10\nbeta,2.5\nseed,1\n'


def test_no_w201_for_a_table_that_facts_supply(tmp_path: Path) -> None:
    (tmp_path / "prog.olg").write_text("p(X) :- q(X), r(X).\n")
    (tmp_path / "facts").mkdir()
    (tmp_path / "facts" / "q.csv").write_text("1\n2\n")
    result = overlog("run", "prog.olg", "-F", "facts", "--print", "p", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stderr == (
        "prog.olg:1:15: warning[W201]: relation `r` is read but no rule or fact writes it "
        "(it can only be fed from outside, with insert)\n"
        "  1 | p(X) :- q(X), r(X).\n    |               ^^^^\n")
    assert result.stdout == "p (0 rows)\n"


def test_run_bad_csv_and_usage_errors_exit_2(tmp_path: Path) -> None:
    (tmp_path / "prog.olg").write_text("p(X) :- q(X).\nq(1).\n")
    (tmp_path / "facts").mkdir()
    (tmp_path / "facts" / "q.csv").write_text("1\n2,3\n")
    bad = overlog("run", "prog.olg", "-F", "facts", cwd=tmp_path)
    assert (bad.returncode, bad.stderr) == (
        2, "overlog: error: facts/q.csv:2: expected 1 fields, got 2\n")
    unknown = overlog("run", "prog.olg", "--print", "nope", cwd=tmp_path)
    assert (unknown.returncode, unknown.stderr) == (
        2, "overlog: error: --print names `nope`, which the program does not have\n")
    spark = overlog("run", "prog.olg", "--backend", "local", "--spark-master", "local[1]",
                    cwd=tmp_path)
    assert (spark.returncode, spark.stderr) == (
        2, "overlog: error: --spark-master and --spark-conf go with --backend spark or auto\n")
    threshold = overlog("run", "prog.olg", "--backend", "spark", "--spark-threshold", "5",
                        cwd=tmp_path)
    assert (threshold.returncode, threshold.stderr) == (
        2, "overlog: error: --spark-threshold goes with --backend auto\n")


def test_run_steps_and_text_tables(tmp_path: Path) -> None:
    (tmp_path / "prog.olg").write_text("tick(E) :- periodic[_, E, 1].\n")
    result = overlog("run", "prog.olg", "--steps", "4", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "tick (2 rows)\n  1\n  2\n"


def test_run_program_error_exits_1(tmp_path: Path) -> None:
    (tmp_path / "prog.olg").write_text("p(X) :- q(Y).\n")
    result = overlog("run", "prog.olg", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("prog.olg:1:3: error[E205]:")


def test_runs_are_reproducible_across_processes(tmp_path: Path) -> None:
    (tmp_path / "prog.olg").write_text(
        'item("a"). item("b"). item("c"). item("d"). item("e").\ngo[1].\n'
        "pick(X, R) :- go[_], item(X), R := f_rand().\n")
    outputs = set()
    for _ in range(3):  # a fresh process each time, with a different string hash seed
        env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
        done = subprocess.run([sys.executable, "-m", "overlog", "run", "prog.olg", "--seed",
                               "3", "--format", "jsonl", "--print", "pick"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60, check=True)
        outputs.add(done.stdout)
    assert len(outputs) == 1
    assert len(outputs.pop().splitlines()) == 5


def test_run_trace_reports_rule_firings(tmp_path: Path) -> None:
    (tmp_path / "prog.olg").write_text(
        'r1 reach(X, Y) :- link(X, Y).\nreach(X, Z) :- link(X, Y), reach(Y, Z).\n'
        'link(1, 2).\nlink(2, 3).\n')
    result = overlog("run", "prog.olg", "--trace", "--format", "jsonl", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stderr == ("trace: step 1 @0: r1 derived 2, rule 2 derived 1; "
                             "+3 reach, +2 link\n")


def test_a_reader_that_goes_away_ends_the_run_quietly(tmp_path: Path) -> None:
    """`overlog run ... | head -1`: no traceback, no error per remaining row; exit 141."""
    (tmp_path / "count.olg").write_text(
        "n(0).\nn(Y) :- n(X), X < 20000, Y := X + 1.\nwatch(n).\n")
    with subprocess.Popen([sys.executable, "-m", "overlog", "run", "count.olg", "--format",
                           "csv"], cwd=tmp_path, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline() == "step,time,table,op,field1\n"
        assert process.stdout.readline() == "1,0.0,n,insert,0\n"
        process.stdout.close()
        stderr = process.stderr.read()
        assert process.wait(timeout=60) == 141
    assert stderr == ""


def test_a_step_failing_without_inputs_ends(tmp_path: Path) -> None:
    (tmp_path / "div.olg").write_text("p(X) :- X := 1 / 0.\n")
    for extra in ([], ["--steps", "1"]):
        result = overlog("run", "div.olg", *extra, cwd=tmp_path)
        assert result.returncode == 3
        assert result.stderr == ("div.olg:1:14: error[E302]: step 1 (time 0): division by "
                                 "zero\n  in rule 1, at `1 / 0`\n"
                                 "  dropped for good: rule 1 (it has no positive atom)\n")
        assert result.stdout == "p (0 rows)\n"


def test_defines_work_with_locations_keys_and_timers(tmp_path: Path) -> None:
    (tmp_path / "lease.olg").write_text(
        "materialize(lease, 30, infinity, keys(1, 2)).\n"
        "tick(@N, E) :- periodic[@N, E, 1, 3].\n"
        "lease(@N, X) :- tick(@N, X), X < LIMIT.\n")
    result = overlog("run", "lease.olg", "--define", "LIMIT=3", "--print", "lease",
                     "--format", "jsonl", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == ('{"table": "lease", "row": ["localhost", 1]}\n'
                             '{"table": "lease", "row": ["localhost", 2]}\n')


def test_until_nan_is_a_usage_error(tmp_path: Path) -> None:
    result = overlog("run", "programs/tc.olg", "--until", "nan")
    assert (result.returncode, result.stderr) == (
        2, "overlog: error: --until takes a number of seconds, not nan\n")


def test_ctrl_c_stops_the_run_with_130_and_the_committed_tables(tmp_path: Path) -> None:
    import signal
    import time

    (tmp_path / "forever.olg").write_text(
        "count(0).\ncount(N) :- tick[_], count(M), N := M + 1, notin count(N).\n"
        "delete count(M) :- tick[_], count(M).\ntick[E] :- periodic[_, E, 0.05].\n")
    out = tmp_path / "out"
    with subprocess.Popen([sys.executable, "-m", "overlog", "run", "forever.olg", "--clock",
                           "real", "-D", str(out), "--print", "count"], cwd=tmp_path,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as process:
        time.sleep(3)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130
    assert stderr.startswith("interrupted: tables as of step ")
    step = int(stderr.split()[-1])
    assert step > 10
    (count,) = (out / "count.csv").read_text().splitlines()
    assert stdout == f"count (1 row)\n  {count}\n"


SPY = "import pathlib\npathlib.Path('imported').write_text('{}')\n"


def test_a_program_binds_only_allowed_native_modules(tmp_path: Path) -> None:
    (tmp_path / "spy.py").write_text(SPY.format("spy") + "def seen(row):\n    print(row)\n")
    (tmp_path / "prog.olg").write_text(
        'a["x"].\nregisterNativeEventHandler["a", "spy:seen"].\n'
        'registerNativeEventHandler["a", "subprocess:call"].\n')
    result = overlog("check", "prog.olg", cwd=tmp_path)
    assert result.returncode == 1
    assert "native handler `spy:seen` is not allowed" in result.stderr
    assert "(`--native subprocess`)" in result.stderr
    result = overlog("check", "prog.olg", "--native", "spy", "--native", "subprocess",
                     cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    assert not (tmp_path / "imported").exists()  # checking imports nothing
    (tmp_path / "prog.olg").write_text(
        'a["x"].\nregisterNativeEventHandler["a", "spy:seen"].\n')
    result = overlog("run", "prog.olg", "--native", "spy", "--print", "a", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "('x',)\n[step 1 @0]  a[\"x\"]\n")
    assert (tmp_path / "imported").read_text() == "spy"


def test_the_console_script_runs_no_module_planted_beside_the_program(tmp_path: Path) -> None:
    """The `overlog` command re-executes itself (to fix the hash seed) without putting the
    current directory on the import path: a `lark.py` there is not imported."""
    (tmp_path / "lark.py").write_text(SPY.format("lark"))
    (tmp_path / "prog.olg").write_text("p(1).\n")
    script = Path(sys.executable).parent / "overlog"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    result = subprocess.run([str(script), "check", "prog.olg"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stderr) == (0, "")
    assert not (tmp_path / "imported").exists()


def test_unreadable_text_is_a_usage_error_located(tmp_path: Path) -> None:
    (tmp_path / "latin.olg").write_bytes(b"p(1).\n// caf\xe9\n")
    for command in ("check", "run", "explain"):
        result = overlog(command, "latin.olg", cwd=tmp_path)
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr == ("overlog: error: cannot read latin.olg: not UTF-8 text "
                                 "(byte 0xe9 at line 2, column 7)\n")


def test_a_byte_order_mark_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "bom.olg").write_bytes(b"\xef\xbb\xbfq(X, Y) :- link(X, Y).\n")
    (tmp_path / "facts").mkdir()
    (tmp_path / "facts" / "link.csv").write_bytes(b"\xef\xbb\xbf1,2\n")
    result = overlog("run", "bom.olg", "-F", "facts", "--print", "q", "--format", "jsonl",
                     cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, '{"table": "q", "row": [1, 2]}\n')


def test_big_integers_print_in_every_format(tmp_path: Path) -> None:
    digits = "9" * 5000
    (tmp_path / "big.olg").write_text(f"q({digits}).\n")
    for fmt, expected in (("jsonl", f'{{"table": "q", "row": [{digits}]}}\n'),
                          ("csv", f"step,time,table,op,field1\n1,0.0,q,final,{digits}\n"),
                          ("text", f"q (1 row)\n  {digits}\n")):
        result = overlog("run", "big.olg", "--format", fmt, "-D", "out", cwd=tmp_path)
        assert (result.returncode, result.stderr, result.stdout) == (0, "", expected)
        assert (tmp_path / "out" / "q.csv").read_text() == digits + "\n"


def test_output_that_cannot_be_written_is_refused_before_the_run(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked").chmod(0o500)
    try:
        for target, message in [
                ("file", "-D: file is not a directory"),
                ("file/sub", "-D: cannot create file/sub: Not a directory")] + (
                [] if os.geteuid() == 0 else  # root writes anywhere
                [("locked", "-D: cannot write to locked: permission denied")]):
            result = overlog("run", str(ROOT / "programs" / "tc.olg"), "-D", target,
                             cwd=tmp_path)
            assert (result.returncode, result.stdout) == (2, "")
            assert result.stderr == f"overlog: error: {message}\n"
    finally:
        (tmp_path / "locked").chmod(0o700)


def test_a_failed_write_leaves_no_partial_files(tmp_path: Path) -> None:
    """A full disk, simulated with a file-size limit: no table file, no temporary left."""
    import resource

    (tmp_path / "big.olg").write_text(
        'n(0).\nn(Y) :- n(X), X < 3000, Y := X + 1.\nw(X, "padding padding padding") :- n(X).\n')
    out = tmp_path / "out"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))

    result = subprocess.run([sys.executable, "-m", "overlog", "run", "big.olg", "-D", "out",
                             "--print", "n"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60, preexec_fn=limit)
    assert result.returncode == 2
    assert result.stderr == "overlog: error: -D: cannot write to out: File too large\n"
    assert list(out.iterdir()) == []


def test_tables_round_trip_through_output_and_facts(tmp_path: Path) -> None:
    (tmp_path / "values.olg").write_text(
        'v(1, 2.5, "007", true, null, infinity, [1, "a,b", [false]], "line\\nbreak", '
        '"say \\"hi\\"", -infinity, "", " x").\n'
        'copy(A, B, C, D, E, F, G, H, I, J, K, L) :- v(A, B, C, D, E, F, G, H, I, J, K, L).\n')
    first = overlog("run", "values.olg", "-D", "out", "--format", "jsonl", "--print", "v",
                    cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    (tmp_path / "load.olg").write_text(
        "copy(A, B, C, D, E, F, G, H, I, J, K, L) :- v(A, B, C, D, E, F, G, H, I, J, K, L).\n")
    (tmp_path / "out" / "copy.csv").unlink()
    second = overlog("run", "load.olg", "-F", "out", "--format", "jsonl", "--print", "copy",
                     cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout.replace('"table": "v"', '"table": "copy"')


def test_step_limits_from_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "runaway.olg").write_text("n(0).\nr1 n(Y) :- n(X), Y := X + 1.\n")
    result = overlog("run", "runaway.olg", "--max-rounds", "200", cwd=tmp_path)
    assert result.returncode == 3
    assert result.stderr == (
        "runaway.olg:2:18: warning[W204]: `n` may grow without end: this recursive rule "
        "computes new values and no comparison bounds them\n"
        "  2 | r1 n(Y) :- n(X), Y := X + 1.\n"
        "    |                  ^^^^^^^^^^\n"
        "  note: add a condition (such as `X < 100`), or rely on the step limits "
        "(--max-tuples, --max-rounds, --step-timeout)\n"
        "runaway.olg:2:1: error[E307]: step 1 (time 0): step limit: more than 200 rounds in "
        "one stratum (rule `r1` keeps deriving `n` tuples: 1 in the last round)\n"
        "  in rule `r1`\n  quarantined input: n(0)\n")
    assert result.stdout == "n (0 rows)\n"
    for flag, value in (("--max-rounds", "0"), ("--max-tuples", "-5"), ("--step-timeout", "0")):
        result = overlog("run", "runaway.olg", flag, value, cwd=tmp_path)
        assert result.returncode == 2 and result.stderr.startswith("overlog: error: --")


def test_unreadable_facts_are_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "p.olg").write_text("q(X) :- link(X).\n")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "link.csv").write_bytes(b"1\n\xff\n")
    result = overlog("run", "p.olg", "-F", "bad", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.endswith("overlog: error: cannot read bad/link.csv: not UTF-8 text "
                                  "(byte 0xff at line 2, column 1)\n")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "link.csv").mkdir()
    result = overlog("run", "p.olg", "-F", "dir", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.endswith("overlog: error: cannot read dir/link.csv: Is a directory\n")



def test_version() -> None:
    from importlib import metadata

    done = overlog("--version")
    assert (done.returncode, done.stdout, done.stderr) == (
        0, f"overlog {metadata.version('overlog')}\n", "")


def test_a_program_from_stdin(tmp_path: Path) -> None:
    source = 'p(1).\nq(X) :- p(X), X > "a".\n'
    for command, expected_out, expected_err, expected_code in [
            (["run", "-"], "p (0 rows)\nq (0 rows)\n",
             "<stdin>:2:15: error[E301]: step 1 (time 0): cannot compare int with string\n"
             "  in rule 1, at `X > \"a\"`\n  binding: X=1\n  quarantined input: p(1)\n", 3),
            (["check", "-"], "-: ok (2 relations, 1 rule, 1 stratum)\n", "", 0)]:
        done = subprocess.run([sys.executable, "-m", "overlog", *command], cwd=tmp_path,
                              input=source, capture_output=True, text=True, timeout=60)
        assert (done.returncode, done.stdout, done.stderr) == (
            expected_code, expected_out, expected_err)


def test_print_of_an_event_relation_prints_its_events(tmp_path: Path) -> None:
    (tmp_path / "e.olg").write_text("go[1]. go[2].\nt(X) :- go[X].\nout[X] :- go[X].\n")
    done = overlog("run", "e.olg", "--print", "out", "--print", "t", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        0, "[step 1 @0]  out[1]\n[step 1 @0]  out[2]\nt (2 rows)\n  1\n  2\n", "")


def test_a_lone_node_says_what_it_could_not_send(tmp_path: Path) -> None:
    (tmp_path / "ping.olg").write_text('link(@"n1", "n2").\nlink(@"n1", "n3").\n'
                                       "ping[@Y, X] :- link(@X, Y).\n")
    result = overlog("run", "ping.olg", "--address", "n1", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, 'link (2 rows)\n  "n1"  "n2"\n  "n1"  "n3"\n')
    assert result.stderr == ('overlog: note: 2 tuples sent to other addresses ("n2", "n3") had '
                             "nowhere to go: run the nodes together with --nodes, or each with "
                             "--listen (docs/distribution.md)\n")
