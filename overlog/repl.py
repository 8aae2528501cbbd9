"""``overlog repl``: an interactive session (docs/repl.md).

The session is a program text and a log of inputs. A typed statement is added to the text,
which is compiled whole with a new engine, run to idle, and given the logged inputs again
(``:insert``, ``:delete``, ``:event``, ``:step``, ``:run``, in order): a statement that does
not compile, or that the inputs cannot be replayed on, leaves the session as it was.
Queries (``reach("a", X)?``) and commands (``:rows reach``) read the current engine.

The top layer: imports overlog.api and the CLI's helpers; the engine is made lazily.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import os
import re
import sys
import traceback
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple, TextIO

from overlog.api import atom_values
from overlog.cli_run import EXIT_INTERRUPTED, Printer, UsageError, parse_define
from overlog.diagnostics import Diagnostic
from overlog.errors import CompileError, OverlogError, SemanticError, StepError
from overlog.printer import format_tuple, plural
from overlog.source import Source

PATH = "<repl>"  # what the session program is called; typed lines are reported under it
PROMPT, MORE = "olg> ", "...> "
STEP_LIMIT = 1000  # steps one run to idle (or one settling of an input) takes at most
SHOWN = 100  # changes printed per step; the rest are counted
HISTORY = "~/.overlog_history"  # OVERLOG_HISTORY chooses another file ("": none)
KEYWORDS = ("delete", "false", "infinity", "keys", "materialize", "notin", "null", "true",
            "watch")
# what readline splits words at for completion: not `:` (commands), `_`, `.`, `/`, `-` or
# `~` (file names for :load)
DELIMS = " \t\n\"'`@$><=;|&{(,)}[]!+*%?"
_COMMAND = re.compile(r":[A-Za-z]")


# -- statements -----------------------------------------------------------------------------

class Unit(NamedTuple):
    """One complete statement or query of a typed text."""

    kind: str  # "statement" or "query"
    start: int  # offset of its first character (past blanks and comments)
    end: int  # past its terminator


class Scan(NamedTuple):
    units: list[Unit]
    complete: bool  # nothing is left open: the text can be run


def scan(text: str) -> Scan:
    """The statements and queries of ``text``, and whether it is complete.

    A statement ends with ``.`` (``;`` in JOL), a query with ``?`` (or is written
    ``?- atom.``), outside brackets, strings and comments (``//``, ``%%``, nesting
    ``/* */``); a dot between digits is a float's. A P2 preprocessor line (``#define``)
    is a statement of its own. The text is complete when nothing follows the last
    terminator but blanks and comments, and no comment or bracket is open. A string cannot
    continue on the next line: one left open on the last line completes the text, for the
    parser to report it (as the last unit, a statement)."""
    units: list[Unit] = []
    depth = nesting = 0
    start: int | None = None
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if nesting:
            if text.startswith("/*", i):
                nesting, i = nesting + 1, i + 2
            elif text.startswith("*/", i):
                nesting, i = nesting - 1, i + 2
            else:
                i += 1
            continue
        if text.startswith(("//", "%%"), i):
            i = _line_end(text, i)
            continue
        if text.startswith("/*", i):
            nesting, i = 1, i + 2
            continue
        if c.isspace():
            i += 1
            continue
        if start is None:
            start = i
            if c == "#" and not text[text.rfind("\n", 0, i) + 1:i].strip():
                i = _line_end(text, i)
                units.append(Unit("statement", start, i))
                start = None
                continue
        if c == '"':
            i = _string_end(text, i)
            if i >= n:
                units.append(Unit("statement", start, n))
                return Scan(units, True)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0 and ((c in ".;" and not _in_number(text, i))
                             or (c == "?" and not text.startswith("?-", i))):
            query = c == "?" or text.startswith("?-", start)
            units.append(Unit("query" if query else "statement", start, i + 1))
            start = None
        i += 1
    return Scan(units, start is None and nesting == 0)


def _line_end(text: str, i: int) -> int:
    end = text.find("\n", i)
    return len(text) if end < 0 else end


def _string_end(text: str, i: int) -> int:
    """Past the string literal starting at ``i``; the end of its line (or of the text) if
    it is not closed there."""
    j, n = i + 1, len(text)
    while j < n:
        c = text[j]
        if c == '"':
            return j + 1
        if c == "\n":
            return j
        j += 2 if c == "\\" and j + 1 < n and text[j + 1] != "\n" else 1
    return n


def _in_number(text: str, i: int) -> bool:
    return 0 < i < len(text) - 1 and text[i - 1].isdigit() and text[i + 1].isdigit()


def query_text(text: str) -> str:
    """A query unit as ``Engine.query`` takes it: ``?- atom.`` and ``atom?`` are ``atom``."""
    text = text.strip()
    if text.startswith("?-"):
        text = text[2:].strip()
    return text[:-1].rstrip() if text.endswith((".", ";", "?")) else text


# -- the session program --------------------------------------------------------------------

@dataclass(frozen=True)
class Chunk:
    """A piece of the session program: a file, or statements typed at one prompt."""

    text: str
    origin: str  # the file, or PATH
    line: int = 1  # the line of ``origin`` it starts on
    pad: int = 0  # columns before it on that line (typed after a query)

    @property
    def lines(self) -> int:
        return self.text.count("\n") + 1


def program_text(chunks: Iterable[Chunk]) -> str:
    """The text compiled: each chunk on lines of its own, at the column it was typed."""
    return "".join(" " * chunk.pad + chunk.text + "\n" for chunk in chunks)


def origins(chunks: Iterable[Chunk]) -> tuple[tuple[str, int], ...]:
    """Where each line of ``program_text`` came from: a file's line, or a typed line
    (numbered from 1 at each prompt)."""
    return tuple((chunk.origin, chunk.line + k) for chunk in chunks for k in range(chunk.lines))


def named(source: Source, lines: tuple[tuple[str, int], ...]) -> Source:
    """The compiler's ``source`` of the session text, its lines named after their origins
    (composed with the P2 preprocessor's, when it has them)."""
    if source.path != PATH:
        return source
    if source.origins is None:
        return Source(source.text, source.path, lines)
    return Source(source.text, source.path, tuple(
        lines[line - 1] if path == PATH and 0 < line <= len(lines) else (path, line)
        for path, line in source.origins))


def render_step_error(error: Exception, source: Source | None) -> str:
    """A step's error as ``overlog run`` prints it, its place named as the line was typed."""
    text = str(error)
    span = getattr(error, "span", None)
    if isinstance(error, StepError) and error.path == PATH and span is not None \
            and source is not None:
        where = f"{PATH}:{span.line}:{span.column}:"
        path, line = source.where(span.line)
        if text.startswith(where):
            text = f"{path}:{line}:{span.column}:" + text[len(where):]
    return text


class ReplayError(Exception):
    """The session's inputs cannot be given to the new program."""


Action = tuple  # ("insert" | "delete" | "event", relation, row), ("step", n) or ("run",)


@dataclass
class Built:
    engine: Any
    source: Source  # the engine's program, lines named
    errors: list[str]  # every step error so far, rendered
    stopped: bool  # the last run to idle stopped at STEP_LIMIT


# -- the session ----------------------------------------------------------------------------

class Session:
    """The program, the input log and the engine of one REPL; ``feed`` takes each line."""

    def __init__(self, out: TextIO, err: TextIO, program: str | None = None, *,
                 defines: dict[str, Any] | None = None, native: Iterable[str] = (),
                 dialect: str | None = None) -> None:
        self.out = out
        self.err = err
        self.program = program
        self.defines = dict(defines or {})
        self.native = list(native)
        self.dialect = dialect
        self.initial: list[Chunk] = []
        self.chunks: list[Chunk] = []
        self.log: list[Action] = []
        self.built: Built | None = None
        self.buffer: list[str] = []  # the lines of an incomplete statement
        self.failed = False  # something was reported as an error

    # -- output -------------------------------------------------------------------------

    def say(self, text: str) -> None:
        self.out.write(text + "\n")

    def complain(self, text: str) -> None:
        """An error, on stderr (after what stdout holds)."""
        self.failed = True
        self.out.flush()
        self.err.write(text + "\n")
        self.err.flush()

    def note(self, text: str) -> None:
        self.out.flush()
        self.err.write(text + "\n")
        self.err.flush()

    # -- starting -----------------------------------------------------------------------

    def start(self) -> bool:
        """Compile and run the program given (if any); False (its errors printed) if it
        does not compile. UsageError if it cannot be read."""
        if self.program is not None:
            from overlog.dialect import read_program
            from overlog.source import UnreadableSource

            try:
                text, note = read_program(self.program, self.dialect)
            except UnreadableSource as error:
                raise UsageError(str(error)) from None
            if note:
                self.note(note)
            text = text[:-1] if text.endswith("\n") else text
            self.initial = [Chunk(text, self.program)]
        try:
            built = self._build(self.initial, [])
        except CompileError as error:
            self.complain(self._render(error, self.initial, None))
            return False
        self.chunks, self.built = list(self.initial), built
        from overlog.diagnostics import render

        for warning in built.engine.plan.checked.warnings:
            self.note(render(warning, built.source))
        for text in built.errors:
            self.complain(text)
        self._said_stopped(built.stopped)
        return True

    @property
    def engine(self) -> Any:
        assert self.built is not None
        return self.built.engine

    def banner(self, version: str) -> str:
        what = self.program if self.program is not None else "empty program"
        count = plural(len(self.engine.plan.relations), "relation")
        return f"overlog {version}: {what} ({count}); :help for help"

    # -- building -------------------------------------------------------------------------

    def _build(self, chunks: list[Chunk], log: list[Action]) -> Built:
        """A new engine of ``chunks``, run to idle, given the inputs of ``log`` again.
        CompileError, or ReplayError when an input is refused."""
        from overlog.api import Engine

        engine = Engine(program_text(chunks), PATH, defines=self.defines,
                        native_modules=self.native, dialect=self.dialect, backend="local",
                        provenance=True)  # (for :why and :whynot)
        if engine.plan.calls:  # (the engine's first step would refuse them: none is added)
            raise SemanticError([Diagnostic("E208", f"unknown function `{name}`", span)
                                 for name, span in engine.plan.calls],
                                engine.plan.checked.source)
        built = Built(engine, named(engine.plan.checked.source, origins(chunks)), [], False)
        engine.source = built.source  # (explanations name lines as they were typed)

        def collect(report: Any) -> None:
            built.errors += [render_step_error(e, built.source) for e in report.errors]

        built.stopped = self._apply(engine, ("run",), collect)
        for action in log:
            try:
                built.stopped = self._apply(engine, action, collect)
            except (KeyError, TypeError, ValueError) as error:
                raise ReplayError(f"replaying {describe(action)} fails: "
                                  f"{_message(error)}") from None
        return built

    @staticmethod
    def _apply(engine: Any, action: Action, each: Callable[[Any], None]) -> bool:
        """Do ``action`` on ``engine``, calling ``each`` with each step's report; whether a
        run stopped at STEP_LIMIT with more to do."""
        kind = action[0]
        if kind == "step":
            for _ in range(action[1]):
                # the next step (the clock jumps to a timed input), or an empty one
                for report in engine.run(steps=1) or [engine.step()]:
                    each(report)
            return False
        if kind == "run":
            for _ in range(STEP_LIMIT):
                reports = engine.run(steps=1)
                if not reports:
                    return False
                each(reports[0])
            return engine.next_time() is not None or not engine.idle
        relation, row = action[1], action[2]
        {"insert": engine.insert, "delete": engine.delete,
         "event": engine.generate_event}[kind](relation, row)
        for _ in range(STEP_LIMIT):  # what is due now: not timed inputs
            if engine.idle:
                return False
            each(engine.step())
        return not engine.idle

    def _render(self, error: CompileError, chunks: list[Chunk], new: Chunk | None) -> str:
        """A compile error's diagnostics, lines named; with ``new``, of its warnings only
        those in it."""
        from overlog.diagnostics import render_all

        source = named(error.source, origins(chunks))
        shown = [d for d in error.diagnostics if new is None or d.is_error
                 or self._in_new(d, error.source, chunks)]
        return render_all(shown, source)

    @staticmethod
    def _in_new(diagnostic: Any, source: Source, chunks: list[Chunk]) -> bool:
        """Whether a diagnostic is located in the last chunk (W201 never: a relation may
        be fed with :insert, or by the next statement)."""
        if diagnostic.span is None or diagnostic.code == "W201":
            return False
        line = diagnostic.span.line
        if source.origins is not None:
            path, line = source.where(line)
            if path != PATH:
                return False
        first = sum(chunk.lines for chunk in chunks[:-1]) + 1
        return first <= line < first + chunks[-1].lines

    def _rebuild(self, chunks: list[Chunk], log: list[Action], new: Chunk | None) -> bool:
        """Make the session ``chunks`` and ``log``, if they compile and replay; print what
        is new: warnings of ``new``, step errors the old engine did not have."""
        try:
            built = self._build(chunks, log)
        except CompileError as error:
            self.complain(self._render(error, chunks, new))
            return False
        except ReplayError as error:
            self.complain(f"error: {error}; not added")
            return False
        if new is not None:
            from overlog.diagnostics import render

            checked = built.engine.plan.checked
            for warning in checked.warnings:
                if self._in_new(warning, checked.source, chunks):
                    self.note(render(warning, built.source))
        # the errors a replay meets again are not news (their steps may have moved)
        known = Counter(map(_unstepped, self.built.errors if self.built else ()))
        for text in built.errors:
            if known[_unstepped(text)]:
                known[_unstepped(text)] -= 1
            else:
                self.complain(text)
        self._said_stopped(built.stopped)
        self.chunks, self.log, self.built = chunks, log, built
        return True

    def _said_stopped(self, stopped: bool) -> None:
        if stopped:
            self.note(f"note: stopped after {STEP_LIMIT:,} steps with more to do (a timer?); "
                      ":run runs more")

    # -- lines ----------------------------------------------------------------------------

    @property
    def pending(self) -> bool:
        """An incomplete statement waits for more lines."""
        return bool(self.buffer)

    def discard(self) -> None:
        self.buffer = []

    def feed(self, line: str) -> bool:
        """Take one line; False when the session should end (:quit)."""
        try:
            return self._feed(line)
        except KeyboardInterrupt:
            self.complain("interrupted")
        except BrokenPipeError:  # (stdout's reader went away: the CLI stops quietly)
            raise
        except Exception:  # a bug: say so, and keep the session
            self.complain("internal error (please report it):\n" + traceback.format_exc()
                          .rstrip())
        finally:
            self.out.flush()
        return True

    def _feed(self, line: str) -> bool:
        if not self.buffer:
            stripped = line.strip()
            if _COMMAND.match(stripped):
                return self.command(stripped)
            if stripped in ("exit", "quit", "help"):
                self.say(":help lists the commands" if stripped == "help"
                         else "use :quit or Ctrl-D to leave")
                return True
        self.buffer.append(line)
        text = "\n".join(self.buffer)
        found = scan(text)
        if found.complete:
            self.buffer = []
            self.entry(text, found.units)
        return True

    def finish(self) -> None:
        """The end of the input: an incomplete statement is an error."""
        if self.buffer:
            text = " ".join(line.strip() for line in self.buffer)
            self.buffer = []
            self.complain(f"error: incomplete statement at the end of the input: {text}")

    def entry(self, text: str, units: list[Unit]) -> None:
        """What was typed at one prompt: each run of statements is added, each query
        answered, in order, up to the first error."""
        done = 0  # where the last unit ended
        i = 0
        while i < len(units):
            if units[i].kind == "query":
                if not self.query(query_text(text[units[i].start:units[i].end])):
                    return
                done, i = units[i].end, i + 1
                continue
            last = i
            while last + 1 < len(units) and units[last + 1].kind == "statement":
                last += 1
            start = done
            while start < units[i].start and text[start].isspace():
                start += 1
            end = units[last].end
            if last == len(units) - 1:  # a comment after it on its line goes with it
                end = len(text.rstrip())
            line_start = text.rfind("\n", 0, start) + 1
            chunk = Chunk(text[start:end], PATH, text.count("\n", 0, start) + 1,
                          start - line_start)
            if not self._rebuild([*self.chunks, chunk], self.log, chunk):
                return
            done, i = units[last].end, last + 1

    def query(self, text: str) -> bool:
        try:
            rows = self.engine.query(text)
        except (KeyError, ValueError) as error:
            self.complain(f"error: {_message(error)}")
            return False
        rel = self.engine.plan.relations[_relation_of(text)]
        for row in rows:
            self.say(format_tuple(rel.name, row, rel.event))
        self.say(f"({plural(len(rows), 'row')})")
        return True

    # -- commands -------------------------------------------------------------------------

    def command(self, line: str) -> bool:
        word, _, argument = line.partition(" ")
        argument = argument.strip()
        names = [name for name in COMMANDS if name.startswith(word)]
        if word in COMMANDS:
            names = [word]
        if not names:
            self.complain(f"error: unknown command `{word}` (:help lists them)")
            return True
        if len(names) > 1:
            self.complain(f"error: `{word}` is ambiguous: {', '.join(names)}")
            return True
        command = COMMANDS[names[0]]
        if not command.argument and argument:
            self.complain(f"error: `{names[0]}` takes no argument")
            return True
        if command.argument and not command.argument.startswith("[") and not argument:
            self.complain(f"error: `{names[0]}` takes {command.argument}: "
                          f"{names[0]} {command.example or command.argument}")
            return True
        return command.run(self, argument) is not False

    def cmd_help(self, argument: str) -> None:
        self.say("Statements (facts, rules, materialize, watch) end with `.`: added to the "
                 "program.\n"
                 "A query prints the rows that match: reach(\"a\", X)?  reach?\n"
                 "Commands (a unique prefix will do; Tab completes):")
        width = max(len(f"{name} {c.argument}") for name, c in COMMANDS.items())
        for name, command in COMMANDS.items():
            self.say(f"  {f'{name} {command.argument}':<{width}}  {command.help}")

    def cmd_quit(self, argument: str) -> bool:
        return False

    def cmd_step(self, argument: str) -> None:
        try:
            count = int(argument or "1")
        except ValueError:
            count = 0
        if count < 1:
            self.complain(f"error: `:step` takes a number of steps >= 1, not {argument!r}")
            return
        self._act(("step", count))

    def cmd_run(self, argument: str) -> None:
        if self.engine.idle and self.engine.next_time() is None:
            self.say("(idle: nothing to run)")
            return
        self._act(("run",))

    def cmd_insert(self, argument: str) -> None:
        self._input("insert", argument)

    def cmd_delete(self, argument: str) -> None:
        self._input("delete", argument)

    def cmd_event(self, argument: str) -> None:
        self._input("event", argument)

    def _input(self, kind: str, argument: str) -> None:
        try:
            name, row = atom_values(argument)
        except ValueError as error:
            self.complain(f"error: {error}")
            return
        rel = self.engine.plan.relations.get(name)
        if rel is None:
            hint = f" (a typed fact adds one: {argument.rstrip('.')}.)" \
                if kind == "insert" else ""
            self.complain(f"error: unknown relation `{name}`{hint}")
            return
        if rel.event != (kind == "event"):
            use = ":event" if rel.event else ":insert and :delete"
            self.complain(f"error: `{name}` is {'an event' if rel.event else 'a persistent'} "
                          f"relation: use {use}")
            return
        try:
            self._act((kind, name, row))
        except (KeyError, TypeError, ValueError) as error:
            self.complain(f"error: {_message(error)}")

    def _act(self, action: Action) -> None:
        """Do an action on the engine, printing each step, and log it for replays."""
        done = 0

        def show(report: Any) -> None:
            nonlocal done
            done += 1
            self._show(report)

        try:
            stopped = self._apply(self.engine, action, show)
        except OverlogError as error:  # (not a step's error: those are in its report)
            self.complain(str(error))
            return
        except KeyboardInterrupt:
            # the step it cut short was undone; what ran stands, and is what a replay does
            self.log.append(action if action[0] not in ("step", "run") else ("step", done))
            raise
        self.log.append(action)
        self._said_stopped(stopped)

    def _show(self, report: Any) -> None:
        """A step's changes (those of the watched relations, if the program watches any)
        as ``overlog run`` prints them, and its errors."""
        checked = self.engine.plan.checked
        watched = set(checked.watched)
        printer = Printer("text", self.out)
        shown = hidden = 0
        for name, rel in self.engine.plan.relations.items():
            ops = checked.watch_ops(name) if name in watched else \
                () if watched else ("event",) if rel.event else ("delete", "insert")
            for op in ops:
                kind = {"event": "events", "delete": "deleted", "insert": "inserted"}[op]
                for row in report.rows(kind, name):
                    if shown < SHOWN:
                        printer.change(report.step, report.time, name, op, row, rel.event)
                        shown += 1
                    else:
                        hidden += 1
        where = f"[step {report.step} @{report.time:g}]"
        if hidden:
            self.say(f"{where} ... and {hidden:,} more")
        elif not shown:
            self.say(f"{where} no changes{' of the watched relations' if watched else ''}")
        for error in report.errors:
            text = render_step_error(error, self.built.source if self.built else None)
            if self.built is not None:
                self.built.errors.append(text)
            self.complain(text)

    def cmd_relations(self, argument: str) -> None:
        engine = self.engine
        relations = engine.plan.relations
        if not relations:
            self.say("(no relations)")
            return
        names = {name: f"{name}/{rel.arity}" for name, rel in relations.items()}
        width = max(map(len, names.values()))
        for name, rel in relations.items():
            kind = "event" if rel.event else "table"
            count = len(engine.rows(name, max_rows=None)) if rel.event else engine.count(name)
            extra = "  (built-in)" if rel.builtin else ""
            self.say(f"{names[name]:<{width}}  {kind:<5}  {plural(count, 'row')}{extra}")

    def cmd_rows(self, argument: str) -> None:
        if argument not in self.engine.plan.relations:
            self.complain(f"error: unknown relation `{argument}`")
            return
        Printer("text", self.out).final(argument, self.engine.rows(argument, max_rows=None))

    def cmd_explain(self, argument: str) -> None:
        from overlog.plan import format_program_plan

        self.say(format_program_plan(self.engine.plan))

    def cmd_program(self, argument: str) -> None:
        for chunk in self.chunks:
            if chunk.text:
                self.say(chunk.text)

    def cmd_load(self, argument: str) -> None:
        from overlog.dialect import read_program
        from overlog.source import UnreadableSource

        path = os.path.expanduser(argument)
        try:
            text, note = read_program(path, self.dialect)
        except UnreadableSource as error:
            self.complain(f"error: {error}")
            return
        if note:
            self.note(note)
        chunk = Chunk(text[:-1] if text.endswith("\n") else text, argument)
        self._rebuild([*self.chunks, chunk], self.log, chunk)

    def cmd_reset(self, argument: str) -> None:
        if self._rebuild(list(self.initial), [], None):
            what = self.program if self.program is not None else "empty program"
            self.say(f"reset: {what} ({plural(len(self.engine.plan.relations), 'relation')})")

    def cmd_why(self, argument: str) -> None:
        self._explain(argument, lambda name, row: [self.engine.why(name, row)])

    def cmd_whynot(self, argument: str) -> None:
        self._explain(argument, self.engine.why_not)

    def _explain(self, argument: str, explain: Callable[[str, tuple], list]) -> None:
        """:why and :whynot: the explanations of a tuple (runtime/provenance.py)."""
        try:
            name, row = atom_values(argument)
        except ValueError as error:
            self.complain(f"error: {error}")
            return
        if name not in self.engine.plan.relations:
            self.complain(f"error: unknown relation `{name}`")
            return
        try:
            found = explain(name, row)
        except (TypeError, ValueError) as error:
            self.complain(f"error: {error}")
            return
        self.out.write("".join(x.format() for x in found))


def describe(action: Action) -> str:
    """An action as the command that did it."""
    if action[0] == "step":
        return f":step {action[1]}"
    if action[0] == "run":
        return ":run"
    return f":{action[0]} {format_tuple(action[1], action[2], action[0] == 'event')}"


def _unstepped(error: str) -> str:
    """A step error's text without its step and time."""
    return re.sub(r"step \d+ \(time [^)]*\): ", "", error, count=1)


def _message(error: BaseException) -> str:
    return str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)


def _relation_of(query: str) -> str:
    """The relation a query (that ``Engine.query`` took) reads."""
    from overlog.dialect import code_of

    return re.match(r"\s*([A-Za-z_]\w*)", code_of(query)).group(1)  # type: ignore[union-attr]


class Command(NamedTuple):
    run: Callable[[Session, str], Any]  # False ends the session
    argument: str  # what it takes ("" nothing; "[...]" optional)
    help: str
    example: str = ""


# Every command: name -> handler, argument, help. The one place to add or wire a command.
COMMANDS: dict[str, Command] = {
    ":help": Command(Session.cmd_help, "", "this list"),
    ":quit": Command(Session.cmd_quit, "", "leave (Ctrl-D too)"),
    ":step": Command(Session.cmd_step, "[N]", "run N steps (default 1), printing each "
                     "step's changes"),
    ":run": Command(Session.cmd_run, "", "run steps until idle (timers too), printing them"),
    ":insert": Command(Session.cmd_insert, "ATOM", "insert a tuple, then step until idle",
                       'link("a", "b")'),
    ":delete": Command(Session.cmd_delete, "ATOM", "delete a tuple, then step until idle",
                       'link("a", "b")'),
    ":event": Command(Session.cmd_event, "ATOM", "an event, then step until idle",
                      'ping["a", 1]'),
    ":relations": Command(Session.cmd_relations, "", "each relation: kind, arity, rows"),
    ":rows": Command(Session.cmd_rows, "REL", "a relation's rows", "reach"),
    ":explain": Command(Session.cmd_explain, "", "the plan of the program (overlog explain)"),
    ":program": Command(Session.cmd_program, "", "the program typed and loaded so far"),
    ":load": Command(Session.cmd_load, "FILE", "add a file's statements", "prog.olg"),
    ":reset": Command(Session.cmd_reset, "", "back to the start: the program given, no "
                      "inputs"),
    ":why": Command(Session.cmd_why, "ATOM", "how a tuple came to be: its derivation tree",
                    'reach("a", "c")'),
    ":whynot": Command(Session.cmd_whynot, "ATOM", "why a tuple is not there: what each "
                       "rule that could derive it lacks", 'reach("c", "a")'),
}


# -- completion -----------------------------------------------------------------------------

def completions(session: Session, line: str, begidx: int, endidx: int) -> list[str]:
    """What Tab offers for ``line[begidx:endidx]``: command names at the start of a line,
    file names after :load, relation names (after the other commands too), function names
    for ``f_``, and the language's words."""
    text = line[begidx:endidx]
    head = line[:begidx].lstrip()
    command = not session.pending and (head.startswith(":") or not head)
    if command and not head and text.startswith(":"):
        return [name for name in COMMANDS if name.startswith(text)]
    names = sorted(session.engine.plan.relations) if session.built else []
    if command and head:
        word = head.split()[0]
        found = [name for name in COMMANDS if name.startswith(word)]
        if word in COMMANDS:
            found = [word]
        if found == [":load"]:
            return _paths(text)
        if len(found) != 1 or not COMMANDS[found[0]].argument or found[0] == ":step":
            return []
        return [name for name in names if name.startswith(text)]
    if text.startswith("f_"):
        from overlog.functions import builtin_functions

        dialect = session.engine.plan.dialect if session.built else None
        functions = builtin_functions(dialect.name if dialect else "canonical")
        return sorted(name for name in functions if name.startswith(text))
    return sorted({name for name in (*names, *KEYWORDS) if name.startswith(text)})


def _paths(text: str) -> list[str]:
    """File names starting with ``text`` (``~`` expanded), directories with a ``/``."""
    expanded = os.path.expanduser(text)
    found = []
    for path in sorted(glob.glob(glob.escape(expanded) + "*")):
        shown = text + path[len(expanded):]
        found.append(shown + "/" if os.path.isdir(path) else shown)
    return found


# -- the terminal ---------------------------------------------------------------------------

def history_path() -> str | None:
    """The history file: OVERLOG_HISTORY, or ~/.overlog_history; None if it is empty."""
    path = os.environ.get("OVERLOG_HISTORY", HISTORY)
    return os.path.expanduser(path) if path else None


def _readline(session: Session) -> Any:
    """readline set up to complete for ``session`` (None without it)."""
    try:
        import readline
    except ImportError:
        return None
    matches: list[str] = []

    def complete(text: str, state: int) -> str | None:
        if state == 0:
            matches[:] = completions(session, readline.get_line_buffer(),
                                     readline.get_begidx(), readline.get_endidx())
        return matches[state] if state < len(matches) else None

    readline.set_completer(complete)
    readline.set_completer_delims(DELIMS)
    if "libedit" in (readline.__doc__ or ""):
        readline.parse_and_bind("bind ^I rl_complete")
    else:
        readline.parse_and_bind("tab: complete")
    return readline


def interact(session: Session, version: str) -> None:
    """Read lines at the prompts, with history and completion, until :quit or Ctrl-D."""
    readline = _readline(session)
    history = history_path() if readline is not None else None
    if history is not None:
        readline.set_history_length(1000)
        with contextlib.suppress(OSError):  # (none yet)
            readline.read_history_file(history)
    session.say(session.banner(version))
    try:
        while True:
            try:
                line = input(MORE if session.pending else PROMPT)
            except EOFError:  # Ctrl-D
                session.say("")
                break
            except KeyboardInterrupt:  # Ctrl-C: a fresh line, what was typed forgotten
                session.say("")
                session.discard()
                continue
            if not session.feed(line):
                break
    finally:
        if history is not None:
            try:
                readline.write_history_file(history)
            except OSError as error:
                session.note(f"note: cannot write the history to {history}: "
                             f"{error.strerror or error}")


def repl_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``overlog repl [PROGRAM.olg]``: 0, or when stdin is not a terminal 1 if anything
    failed; 1 if the program does not compile. UsageError for a bad command line."""
    if args.program == "-":
        raise UsageError("the REPL reads what you type from stdin: give the program as a "
                         "file, or :load it")
    defines = dict(parse_define(d) for d in args.define)
    session = Session(out, err, args.program, defines=defines, native=args.native,
                      dialect=args.dialect)
    if not session.start():
        return 1
    if sys.stdin.isatty():
        from overlog.cli import _version

        interact(session, _version())
        return 0
    try:
        for line in sys.stdin:
            if not session.feed(line.rstrip("\r\n")):
                break
        else:
            session.finish()
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    out.flush()
    return 1 if session.failed else 0
