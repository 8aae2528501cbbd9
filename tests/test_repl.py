"""``overlog repl``: through a pseudo-terminal (prompts, readline, Ctrl-C, Ctrl-D), through
a pipe, and the session, the statement scanner and the completer in this process."""

from __future__ import annotations

import io
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from overlog.api import atom_values
from overlog.repl import Session, completions, query_text, scan

ROOT = Path(__file__).parents[1]
TIMEOUT = 20.0  # seconds to wait for any one answer
TC = """link("a", "b").
link("b", "c").
reach(X, Y) :- link(X, Y).
reach(X, Z) :- link(X, Y), reach(Y, Z).
"""


# -- through a pseudo-terminal --------------------------------------------------------------

class Terminal:
    """``overlog repl ARGS`` on a pseudo-terminal (TERM=dumb, a private history file)."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.history = tmp_path / "history"
        env = dict(os.environ, TERM="dumb", OVERLOG_HISTORY=str(self.history),
                   PYTHONPATH=str(ROOT))
        env.pop("COLUMNS", None)
        import pty

        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: run the REPL on the terminal
            try:
                import fcntl
                import struct
                import termios

                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
                os.chdir(tmp_path)
                os.execve(sys.executable, [sys.executable, "-m", "overlog", "repl", *args],
                          env)
            finally:
                os._exit(127)
        self.seen = b""
        self.status: int | None = None

    def read_until(self, *markers: str, timeout: float = TIMEOUT) -> str:
        """What the REPL writes up to the first of ``markers`` (consumed), \\r\\n as \\n."""
        wanted = [marker.encode() for marker in markers]
        deadline = time.monotonic() + timeout
        while True:
            found = [(self.seen.find(m), m) for m in wanted if m in self.seen]
            if found:
                at, marker = min(found)
                text, self.seen = self.seen[:at], self.seen[at + len(marker):]
                return text.decode().replace("\r\n", "\n")
            left = deadline - time.monotonic()
            assert left > 0, f"no {markers} in {self.seen!r}"
            if select.select([self.fd], [], [], left)[0]:
                self.seen += self._read()

    def _read(self) -> bytes:
        try:
            data = os.read(self.fd, 4096)
        except OSError:  # (EIO: the child closed the terminal)
            data = b""
        assert data, f"the REPL ended; it wrote {self.seen!r}"
        return data

    def interrupt(self) -> str:
        """Ctrl-C at a prompt: what the REPL writes up to the next prompt. (CPython's
        readline loop misses a SIGINT that comes between drawing the prompt and waiting for
        a key, as a test's can: it is sent again until it is seen; a pending one is one
        KeyboardInterrupt however often it came.)"""
        for _ in range(int(TIMEOUT)):
            time.sleep(0.1)
            self.send("\x03")
            try:
                return self.read_until("olg> ", timeout=1.0)
            except AssertionError:
                continue
        raise AssertionError(f"Ctrl-C was not seen; the REPL wrote {self.seen!r}")

    def send(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def enter(self, line: str, prompt: str = "olg> ") -> str:
        """Type ``line`` at a prompt: what the REPL answers before ``prompt``, without the
        echo of the line."""
        self.send(line + "\n")
        echo, _, answer = self.read_until(prompt).partition("\n")
        assert echo == line
        return answer

    def wait(self) -> int:
        """The exit status, once the REPL ends (within TIMEOUT)."""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            if select.select([self.fd], [], [], 0.1)[0]:
                try:
                    data = os.read(self.fd, 4096)
                except OSError:
                    data = b""
                self.seen += data
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
                return self.status
        raise AssertionError(f"the REPL did not end; it wrote {self.seen!r}")

    def close(self) -> None:
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        os.close(self.fd)


@pytest.fixture
def terminal(tmp_path: Path):
    pytest.importorskip("pty")
    started: list[Terminal] = []

    def start(*args: str) -> Terminal:
        started.append(Terminal(tmp_path, *args))
        return started[-1]

    yield start
    for term in started:
        term.close()


def test_a_session_on_a_terminal(terminal, tmp_path: Path) -> None:
    term = terminal()
    assert term.read_until("olg> ").endswith(": empty program (0 relations); :help for help\n")
    assert term.enter('link("a", "b"). link("b", "c").') == ""
    assert term.enter("reach(X, Y) :- link(X, Y).") == ""
    term.send("reach(X, Z) :-\n")  # a continuation line
    assert term.read_until("...> ") == "reach(X, Z) :-\n"
    assert term.enter("  link(X, Y), reach(Y, Z).") == ""
    assert term.enter('reach("a", X)?') == 'reach("a", "b")\nreach("a", "c")\n(2 rows)\n'
    # a statement that does not compile is reported, and not added
    assert term.enter("reach(X) :- link(X, _).") == (
        "<repl>:1:1: error[E201]: relation `reach` is used with 1 argument here but with 2 "
        "arguments before\n"
        "  1 | reach(X) :- link(X, _).\n"
        "    | ^^^^^^^^\n"
        "  <repl>:1:1: note: first used with 2 arguments here\n"
        "    1 | reach(X, Y) :- link(X, Y).\n"
        "      | ^^^^^^^^^^^\n")
    assert term.enter("p(X) :- q(X) r(X).") == (
        "<repl>:1:14: error[E101]: unexpected `r`; expected `,` or `.`\n"
        "  1 | p(X) :- q(X) r(X).\n"
        "    |              ^\n")
    assert term.enter(":program") == (
        'link("a", "b"). link("b", "c").\nreach(X, Y) :- link(X, Y).\n'
        "reach(X, Z) :-\n  link(X, Y), reach(Y, Z).\n")
    term.send(":quit\n")
    assert term.wait() == 0
    assert term.history.read_text().splitlines()[-2:] == [":program", ":quit"]


def test_steps_inputs_and_replay_on_a_terminal(terminal, tmp_path: Path) -> None:
    (tmp_path / "tc.olg").write_text(TC)
    term = terminal("tc.olg")
    assert term.read_until("olg> ").endswith(": tc.olg (2 relations); :help for help\n")
    assert term.enter(":step") == "[step 2 @0] no changes\n"
    assert term.enter(':insert link("c", "d")') == (
        '[step 3 @0] +link("c", "d")\n[step 3 @0] +reach("a", "d")\n'
        '[step 3 @0] +reach("b", "d")\n[step 3 @0] +reach("c", "d")\n')
    assert term.enter('reach(X, "d")?') == (
        'reach("a", "d")\nreach("b", "d")\nreach("c", "d")\n(3 rows)\n')
    # a new rule recompiles the program: the insert is replayed, and still holds
    assert term.enter('far(X) :- reach("a", X), notin link("a", X).') == ""
    assert term.enter("far(X)?") == 'far("c")\nfar("d")\n(2 rows)\n'
    term.send("\x04")  # Ctrl-D
    assert term.wait() == 0


def test_completion_and_interrupt_on_a_terminal(terminal, tmp_path: Path) -> None:
    pytest.importorskip("readline")
    (tmp_path / "tc.olg").write_text(TC)
    term = terminal("tc.olg")
    term.read_until("olg> ")
    term.send("rea\t")  # completes to the relation's name
    assert term.read_until("reach") == ""  # (the echo: "rea", then "ch")
    assert term.enter('("a", X)?') == 'reach("a", "b")\nreach("a", "c")\n(2 rows)\n'
    term.send(":st\t\n")  # a command's name
    assert term.read_until("olg> ") == ":step\n[step 2 @0] no changes\n"
    term.send("p(1,\n")
    term.read_until("...> ")
    assert term.interrupt() == "\n"  # Ctrl-C: the incomplete statement is forgotten
    assert term.enter("p?") == "error: unknown relation `p`\n"
    term.send("\x04")
    assert term.wait() == 0


# -- through a pipe -------------------------------------------------------------------------

def repl(*args: str, stdin: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, OVERLOG_HISTORY="")
    return subprocess.run([sys.executable, "-m", "overlog", "repl", *args], input=stdin,
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def test_a_script_through_a_pipe(tmp_path: Path) -> None:
    result = repl(stdin="p(1).\np(X)?\n")
    assert (result.returncode, result.stdout, result.stderr) == (0, "p(1)\n(1 row)\n", "")
    (tmp_path / "tc.olg").write_text(TC)
    result = repl("tc.olg", cwd=tmp_path, stdin=(
        ':insert link("c", "d")\n'
        'reach("a", X)? far(X) :- reach("a", X), notin link("a", X).\n'
        "far?\n"
        ":relations\n"
        'p(X) :- q(Y).\n'
        ":rows far\n"))
    assert result.stdout == (
        '[step 2 @0] +link("c", "d")\n[step 2 @0] +reach("a", "d")\n'
        '[step 2 @0] +reach("b", "d")\n[step 2 @0] +reach("c", "d")\n'
        'reach("a", "b")\nreach("a", "c")\nreach("a", "d")\n(3 rows)\n'
        'far("c")\nfar("d")\n(2 rows)\n'
        "link/2   table  3 rows\nreach/2  table  6 rows\nfar/1    table  2 rows\n"
        'far (2 rows)\n  "c"\n  "d"\n')
    assert result.stderr == (
        "<repl>:1:3: error[E205]: unsafe rule: variable `X` in the head is not bound by the "
        "body\n"
        "  1 | p(X) :- q(Y).\n"
        "    |   ^\n"
        "  note: bind it in a positive body atom or with `Var := expression`\n"
        "<repl>:1:11: warning[W202]: variable `Y` is used only once; write `_` if that is "
        "intended\n"
        "  1 | p(X) :- q(Y).\n"
        "    |           ^\n")
    assert result.returncode == 1  # (something failed)


def test_the_example_of_the_docs() -> None:
    """docs/repl.md's example session, typed through a pipe: the same answers."""
    text = (ROOT / "docs" / "repl.md").read_text(encoding="utf-8")
    block = text[text.index("## An example"):].split("```")[1]
    lines = block.strip("\n").splitlines()[2:]  # (past the command and the banner)
    typed = [line[5:] for line in lines if line.startswith(("olg> ", "...> "))]
    answers = [line for line in lines if not line.startswith(("olg> ", "...> "))]
    result = subprocess.run(
        [sys.executable, "-m", "overlog", "repl", "programs/tc.olg"], cwd=ROOT,
        input="\n".join(typed) + "\n", stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, timeout=60, env=dict(os.environ, OVERLOG_HISTORY=""))
    assert result.stdout.splitlines() == answers


def test_a_program_that_does_not_compile_or_cannot_be_read(tmp_path: Path) -> None:
    (tmp_path / "bad.olg").write_text("ok(1).\np(X) :- ok(Y), Y > 0.\n")
    result = repl("bad.olg", cwd=tmp_path, stdin="")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith("bad.olg:2:3: error[E205]: ")
    result = repl("missing.olg", cwd=tmp_path, stdin="")
    assert (result.returncode, result.stderr) == (
        2, "overlog: error: cannot read missing.olg: No such file or directory\n")


# -- the session, in this process -----------------------------------------------------------

class Run:
    """A session fed lines in this process; ``lines`` gives what each wrote."""

    def __init__(self, program: str | None = None, **options) -> None:
        self.out, self.err = io.StringIO(), io.StringIO()
        self.session = Session(self.out, self.err, program, **options)
        self.started = self.session.start()

    def lines(self, *lines: str) -> tuple[str, str]:
        for line in lines:
            self.session.feed(line)
        out, err = self.out.getvalue(), self.err.getvalue()
        for stream in (self.out, self.err):
            stream.seek(0)
            stream.truncate()
        return out, err


@pytest.fixture
def tc(tmp_path: Path) -> Run:
    (tmp_path / "tc.olg").write_text(TC)
    run = Run(str(tmp_path / "tc.olg"))
    assert run.lines() == ("", "")
    return run


def test_inputs_are_replayed_in_order_after_each_addition(tc: Run) -> None:
    assert tc.lines(':delete link("a", "b")', ':insert link("a", "c")', ":step 2")[1] == ""
    assert tc.session.log == [("delete", "link", ("a", "b")), ("insert", "link", ("a", "c")),
                              ("step", 2)]
    before = tc.session.engine.step_count
    assert tc.lines('two(X, Z) :- reach(X, Y), reach(Y, Z).') == ("", "")
    assert tc.session.engine.step_count == before  # the same steps again
    assert tc.lines("reach?", "two?") == (
        'reach("a", "c")\nreach("b", "c")\n(2 rows)\n(0 rows)\n', "")
    assert tc.lines(":reset", "reach?") == (
        'reset: ' + tc.session.program + ' (2 relations)\n'
        'reach("a", "b")\nreach("a", "c")\nreach("b", "c")\n(3 rows)\n', "")
    assert tc.session.log == []


def test_a_replay_that_fails_leaves_the_session(tc: Run) -> None:
    tc.lines(':insert link("x", 1)')
    assert tc.lines("materialize(link, infinity, infinity, keys(1, 2:str)).") == (
        "", 'error: replaying :insert link("x", 1) fails: field 2 of `link` must be str, not '
        "int; not added\n")
    assert "materialize" not in tc.lines(":program")[0]


def test_step_errors_are_reported_once() -> None:
    run = Run()
    out, err = run.lines("r[Z] :- calc[X, Y], Z := X / Y.", ":event calc[1, 0]")
    assert out == "[step 1 @0] no changes\n[step 2 @0] no changes\n"
    assert err == ("<repl>:1:26: error[E302]: step 1 (time 0): division by zero\n"
                   "  in rule 1, at `X / Y`\n  binding: X=1, Y=0\n"
                   "  quarantined input: calc[1, 0]\n")
    # the replay after an addition meets it again: not news
    assert run.lines("p(1).") == ("", "")
    # an error the new statement causes is: located on the line as it was typed
    assert run.lines('p(X)?   w(X) :- p(X), X > "a".')[1] == (
        '<repl>:1:23: error[E301]: step 1 (time 0): cannot compare int with string\n'
        '  in rule 2, at `X > "a"`\n  binding: X=1\n  quarantined input: p(1)\n')


def test_warnings_of_the_new_statement_only() -> None:
    run = Run()
    assert run.lines("q(X) :- r(X, Y).") == ("", (
        "<repl>:1:14: warning[W202]: variable `Y` is used only once; write `_` if that is "
        "intended\n  1 | q(X) :- r(X, Y).\n    |              ^\n"))
    assert run.lines("s(X) :- r(X, _).") == ("", "")  # (no W201 for r, nor the old W202)


def test_watched_relations_narrow_what_steps_print(tc: Run) -> None:
    assert tc.lines("watch(link).", ':insert link("c", "a")') == (
        '[step 2 @0] +link("c", "a")\n', "")
    assert tc.lines(":step") == ("[step 3 @0] no changes of the watched relations\n", "")


def test_events_and_state_rules_run_until_idle() -> None:
    run = Run()
    assert run.lines("seen(X) :- ping[X].", ':event ping["a"]') == (
        '[step 1 @0]  ping["a"]\n[step 2 @0] +seen("a")\n', "")
    assert run.lines(":run") == ("(idle: nothing to run)\n", "")


def test_commands() -> None:
    run = Run()
    run.lines("ping[1].", "r(X) :- ping[X].")
    assert run.lines(":relations") == ("ping/1  event  0 rows\nr/1     table  1 row\n", "")
    assert run.lines(":rows r", ":rows nope") == ("r (1 row)\n  1\n",
                                                  "error: unknown relation `nope`\n")
    assert run.lines(":explain")[0].startswith("program <repl>: 2 relations, 1 rule, ")
    assert run.lines(":why r(1)", ":whynot r(2)") == (
        "r(1)  [written by rule 1 (<repl>:1) at step 1: r(X) :- ping[X].]  X=1\n"
        "└─ ping[1]  [event at step 1]\n"
        "rule 1 (<repl>:1): r(X) :- ping[X].\n  no binding of its body matches\n", "")
    assert run.lines(":why r(2)", ":whynot r(1)", ":why nope(1)") == ("", (
        "error: r(2) is not in `r` now (why-not says what is missing)\n"
        "error: r(1) is in `r` (why explains it)\n"
        "error: unknown relation `nope`\n"))
    assert run.lines(":r", ":zz", ":run now", ":rows", ":step x") == ("", (
        "error: `:r` is ambiguous: :run, :relations, :rows, :reset\n"
        "error: unknown command `:zz` (:help lists them)\n"
        "error: `:run` takes no argument\n"
        "error: `:rows` takes REL: :rows reach\n"
        "error: `:step` takes a number of steps >= 1, not 'x'\n"))
    assert run.lines(":insert r(X)", ":insert ping[2]", ":event r(1)", ":insert q(1)") == (
        "", "error: `X` is a variable: write a tuple of values\n"
        "error: `ping` is an event relation: use :event\n"
        "error: `r` is a persistent relation: use :insert and :delete\n"
        "error: unknown relation `q` (a typed fact adds one: q(1).)\n")
    assert run.lines("quit") == ("use :quit or Ctrl-D to leave\n", "")
    assert run.session.feed(":q") is False


def test_load_adds_a_file(tc: Run, tmp_path: Path) -> None:
    (tmp_path / "more.olg").write_text('link("c", "a").\nbad(X) :- link(X).\n')
    out, err = tc.lines(f":load {tmp_path / 'more.olg'}")
    assert out == ""
    assert err.startswith(f"{tmp_path / 'more.olg'}:2:11: error[E201]: ")
    (tmp_path / "more.olg").write_text('link("c", "a").\n')
    assert tc.lines(f":load {tmp_path / 'more.olg'}", 'reach("c", X)?') == (
        'reach("c", "a")\nreach("c", "b")\nreach("c", "c")\n(3 rows)\n', "")
    assert tc.lines(":load nowhere.olg") == (
        "", "error: cannot read nowhere.olg: No such file or directory\n")


def test_the_end_of_the_input_inside_a_statement() -> None:
    run = Run()
    run.lines("p(1,")
    assert run.session.pending
    run.session.finish()
    assert run.lines() == ("", "error: incomplete statement at the end of the input: p(1,\n")


# -- statements, atoms, completion ----------------------------------------------------------

@pytest.mark.parametrize(("text", "units", "complete"), [
    ("p(1).", [("statement", "p(1).")], True),
    ("p(1", [], False),
    ("p(1).  // one", [("statement", "p(1).")], True),
    ("p(2.5). q(X)?", [("statement", "p(2.5)."), ("query", "q(X)?")], True),
    ("p(X) :- q(X), X > 1.5", [], False),
    ("/* a", [], False),
    ("/* a /* b */ still */ p(1).", [("statement", "p(1).")], True),
    ('p("a.b?").', [("statement", 'p("a.b?").')], True),
    ('p("a\\"").', [("statement", 'p("a\\"").')], True),
    ('p("abc', [("statement", 'p("abc')], True),  # (strings end with their line)
    ("?- reach(X, Y).", [("query", "?- reach(X, Y).")], True),
    ("p([1,\n2]).", [("statement", "p([1,\n2]).")], True),
    ("p(1)).", [("statement", "p(1)).")], True),
    ("#define N 3", [("statement", "#define N 3")], True),
    ("program x;", [("statement", "program x;")], True),
    ("%% note\np(1).", [("statement", "p(1).")], True),
    ("p(1) // x.", [], False),
    ("", [], True),
])
def test_scan(text: str, units: list[tuple[str, str]], complete: bool) -> None:
    found = scan(text)
    assert [(u.kind, text[u.start:u.end]) for u in found.units] == units
    assert found.complete is complete


def test_query_text_and_parse_atom() -> None:
    assert [query_text(q) for q in ('reach("a", X)?', "?- reach(X, Y).", "reach?")] == [
        'reach("a", X)', "reach(X, Y)", "reach"]
    assert atom_values('link("a", [1, 2.5], true, null, -3).') == (
        "link", ("a", (1, 2.5), True, None, -3))
    assert atom_values('ping["a"]') == ("ping", ("a",))
    for bad, message in (("p(1 + 2)", "`1 + 2` is not a value"), ("p(_)", "`_` is a variable"),
                         ("p(1), q(2)", "not an atom of values")):
        with pytest.raises(ValueError, match=message.replace("+", r"\+")):
            atom_values(bad)


def test_completions(tc: Run, tmp_path: Path) -> None:
    session = tc.session

    def offered(line: str) -> list[str]:
        start = len(line) - len(line.split(" ")[-1].split("(")[-1])
        return completions(session, line, start, len(line))

    assert offered("rea") == ["reach"]
    assert offered("") == ["delete", "false", "infinity", "keys", "link", "materialize",
                           "notin", "null", "reach", "true", "watch"]
    assert offered("p(X) :- li") == ["link"]
    assert offered("p(X) :- f_con") == ["f_concat", "f_cons"]
    assert offered(":st") == [":step"]
    assert offered(":re") == [":relations", ":reset"]
    assert offered(":rows l") == ["link"]
    assert offered(":step l") == []
    (tmp_path / "more.olg").write_text("")
    (tmp_path / "sub").mkdir()
    assert offered(f":load {tmp_path}/m") == [f"{tmp_path}/more.olg"]
    assert offered(f":load {tmp_path}/s") == [f"{tmp_path}/sub/"]
    session.feed("p(1,")  # in a statement, `:` starts no command
    assert offered("  :st") == []
