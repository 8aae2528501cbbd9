"""``overlog run``: run a program's timesteps and print what it watched and its final tables."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import time
from collections.abc import Iterable
from operator import itemgetter
from typing import Any, TextIO

from overlog import columnar, parquetio
from overlog import syntax as s
from overlog.csvio import format_cells, format_row
from overlog.diagnostics import render
from overlog.dialect import read_program
from overlog.errors import CompileError, OverlogError, ParseError
from overlog.limits import MAX_ROUNDS, MAX_TUPLES
from overlog.parser import parse
from overlog.printer import format_tuple, format_values
from overlog.runtime.memory import THRESHOLD as SPARK_THRESHOLD
from overlog.runtime.memory import VECTOR_THRESHOLD
from overlog.source import UnreadableSource

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C


class UsageError(Exception):
    """A bad command line: exit 2."""


def add_arguments(run: argparse.ArgumentParser) -> None:
    run.add_argument("program", metavar="PROGRAM.olg")
    run.add_argument("--steps", type=int, metavar="N", help="stop after N steps")
    run.add_argument("--until", type=float, metavar="SECONDS", help="clock limit")
    run.add_argument("--clock", choices=["sim", "real"],
                     help="sim (virtual time; the default) or real (the default with --listen)")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--address", default="localhost", help="this node's address")
    run.add_argument("--nodes", metavar="A,B,C",
                     help="run these nodes in one process, on the simulated network")
    run.add_argument("--node", action="append", default=[], metavar="NAME=PROGRAM.olg",
                     help="with --nodes: node NAME runs its own program (repeatable)")
    run.add_argument("--latency", type=float, metavar="MS",
                     help="with --nodes: each packet's delay (default 0)")
    run.add_argument("--loss", type=float, metavar="P",
                     help="with --nodes: the probability that a packet is lost (default 0)")
    run.add_argument("--listen", metavar="HOST:PORT",
                     help="run as a real node, receiving on this endpoint")
    run.add_argument("--transport", choices=["udp", "tcp"], help="with --listen")
    run.add_argument("--peer", action="append", default=[], metavar="NAME=HOST:PORT",
                     help="with --listen: where address NAME is (repeatable)")
    run.add_argument("--peers", metavar="FILE",
                     help="with --listen: lines of NAME HOST:PORT")
    run.add_argument("--secret-file", metavar="FILE",
                     help="authenticate packets with this shared secret (HMAC-SHA256)")
    run.add_argument("-F", "--facts", metavar="DIR", help="load TABLE.csv files")
    run.add_argument("--header", action="store_true", help="CSV facts have a header line")
    run.add_argument("-D", "--output", metavar="DIR", help="write final tables as CSV")
    run.add_argument("--output-format", choices=["csv", "parquet"], default="csv",
                     help="what -D writes (parquet needs pyarrow)")
    run.add_argument("--print", action="append", dest="print_tables", metavar="TABLE",
                     default=[])
    run.add_argument("--format", choices=["text", "csv", "jsonl"], default="text")
    run.add_argument("--backend", choices=["auto", "local", "spark", "vector"],
                     default="auto",
                     help="where strata run: auto moves a stratum to DuckDB once its tables "
                     "hold --vector-threshold rows, and to Spark once they hold "
                     "--spark-threshold rows; spark runs every stratum it can there; "
                     "vector runs every stratum it can in DuckDB, in this process")
    run.add_argument("--spark-threshold", type=int, metavar="ROWS",
                     help="with --backend auto; also the rows from which a relation DuckDB "
                     "derives stays there (default: a quarter of this machine's "
                     f"memory as rows, here {SPARK_THRESHOLD:,})")
    run.add_argument("--vector-threshold", type=int, metavar="ROWS",
                     help="with --backend auto: the rows a stratum's tables hold when it "
                     f"moves to DuckDB (default {VECTOR_THRESHOLD:,})")
    run.add_argument("--spark-master", metavar="URL",
                     help="the Spark master (default local[2]; spark://HOST:PORT; "
                     "sc://HOST:PORT for Spark Connect)")
    run.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                     help="a Spark setting (repeatable)")
    run.add_argument("--trace", action="store_true", help="rule firings to stderr")
    run.add_argument("--why", action="append", default=[], metavar="TUPLE",
                     help="at the end, how a tuple came to be: its derivation tree "
                     "(repeatable; e.g. --why 'reach(\"a\", \"d\")')")
    run.add_argument("--why-not", action="append", default=[], metavar="TUPLE",
                     help="at the end, why a tuple is not there: what each rule that could "
                     "derive it lacks (repeatable)")
    run.add_argument("--profile", action="store_true",
                     help="where the time went, per rule and stratum, to stderr at the end")
    run.add_argument("--profile-json", metavar="FILE",
                     help="write that profile as JSON to FILE")
    run.add_argument("--max-tuples", type=int, default=MAX_TUPLES, metavar="N",
                     help=f"stop a step deriving more new tuples (default {MAX_TUPLES:,})")
    run.add_argument("--max-rounds", type=int, default=MAX_ROUNDS, metavar="N",
                     help=f"stop a step running more rounds in a stratum (default "
                     f"{MAX_ROUNDS:,})")
    run.add_argument("--step-timeout", type=float, metavar="SECONDS",
                     help="stop a step running longer (default: no limit)")
    add_program_arguments(run)


def add_program_arguments(command: argparse.ArgumentParser) -> None:
    """The options of how a program is read (every command that reads one)."""
    command.add_argument("--native", action="append", default=[], metavar="MODULE",
                         help="let the program bind native handlers of Python module MODULE "
                         "(repeatable; the standard library's are always allowed)")
    command.add_argument("--define", action="append", default=[], metavar="NAME=VALUE",
                         help="replace variable NAME by VALUE (in the P2 dialect: a macro, "
                         "as cpp's -D); repeatable")
    command.add_argument("--dialect", choices=["canonical", "p2", "jol"],
                         help="the program's dialect (default: its pragma, or detected; "
                         "docs/dialects.md)")


def parse_define(text: str) -> tuple[str, Any]:
    """``NAME=VALUE``: VALUE is an Overlog literal (``10``, ``2.5``, ``"s"``, ``true``), or else
    taken as a string."""
    name, sep, raw = text.partition("=")
    if not sep or not name.isidentifier():
        raise UsageError(f"--define takes NAME=VALUE, not {text!r}")
    try:
        term = parse(f"d({raw}).").facts[0].atom.args[0]
    except (ParseError, IndexError):
        return name, raw
    return name, term.value if isinstance(term, s.Const) else raw


def _json_value(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, float) and math.isinf(value):
        return "infinity" if value > 0 else "-infinity"
    return value


class Printer:
    """Watched changes and final tables in one of the output formats; with ``node`` (a run
    of several nodes), each line says which node it is from: a ``"node"`` field first in
    jsonl, a first column in csv, a prefix in text. CSV has a header line (``header``) and
    one layout for both kinds of line: ``step,time,table,op,field1,...`` where a final
    table's rows have op ``final`` and the last step's number and time (docs/csv.md)."""

    def __init__(self, fmt: str, out: TextIO, node: str | None = None) -> None:
        self.fmt = fmt
        self.out = out
        self.node = node
        self.fields = {} if node is None else {"node": node}
        self.cells = () if node is None else (node,)
        self.prefix = "" if node is None else f"{node}: "

    def change(self, step: int, when: float, table: str, op: str, row: tuple,
               event: bool) -> None:
        if self.fmt == "jsonl":
            record = {**self.fields, "step": step, "time": when, "table": table, "op": op,
                      "row": _json_value(row)}
            self.out.write(json.dumps(record, ensure_ascii=False) + "\n")
        elif self.fmt == "csv":
            self.out.write(format_row((*self.cells, step, when, table, op, *row)) + "\n")
        else:
            sign = {"event": " ", "insert": "+", "delete": "-"}[op]
            where = "" if self.node is None else f"{self.node} "
            self.out.write(f"[{where}step {step} @{when:g}] "
                           f"{sign}{format_tuple(table, row, event)}\n")

    def header(self, engines: Iterable[Any]) -> None:
        """CSV's header line, with as many field columns as the widest relation has."""
        if self.fmt != "csv":
            return
        width = max((rel.arity for engine in engines
                     for rel in engine.plan.relations.values()), default=0)
        names = ("node",) if self.node is not None else ()
        names += ("step", "time", "table", "op", *(f"field{i}" for i in range(1, width + 1)))
        self.out.write(",".join(names) + "\n")

    def final(self, table: str, rows: list[tuple], step: int = 0, when: float = 0.0) -> None:
        """A table's rows, formatted a column at a time and written in large chunks."""
        if self.fmt == "jsonl":
            for row in rows:
                self.out.write(json.dumps({**self.fields, "table": table,
                                           "row": _json_value(row)},
                                          ensure_ascii=False) + "\n")
            return
        columns = [list(map(itemgetter(i), rows)) for i in range(len(rows[0]))] if rows else []
        if self.fmt == "csv":
            prefix = format_row((*self.cells, step, when, table, "final"))
            lines = map(",".join, zip([prefix] * len(rows), *map(format_cells, columns),
                                      strict=True))
        else:
            self.out.write(f"{self.prefix}{table} ({len(rows)} "
                           f"row{'' if len(rows) == 1 else 's'})\n")
            texts = [format_values(column) for column in columns]
            for i, column in enumerate(texts[:-1]):
                width = max(map(len, column))
                texts[i] = [text.ljust(width) for text in column]
            if texts:
                texts[0] = ["  " + text for text in texts[0]]
                lines = map("  ".join, zip(*texts, strict=True))
            else:  # no columns
                lines = iter(["  "] * len(rows))
        while chunk := list(itertools.islice(lines, CHUNK)):
            self.out.write("\n".join(chunk) + "\n")

    def final_table(self, table: str, rows: Any, step: int = 0, when: float = 0.0) -> None:
        """``final`` of ``Engine.sorted_table``'s Arrow table (text and CSV)."""
        assert self.fmt != "jsonl"
        if self.fmt == "csv":
            prefix = format_row((*self.cells, step, when, table, "final"))
            columnar.write_csv(self.out, rows, prefix, CHUNK)
            return
        self.out.write(f"{self.prefix}{table} ({rows.num_rows} "
                       f"row{'' if rows.num_rows == 1 else 's'})\n")
        columnar.write_text(self.out, rows, CHUNK)


CHUNK = 65536  # lines written at once


def run_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    spark_conf = check_arguments(args)
    if args.nodes is not None or args.node:
        if args.why or args.why_not:
            raise UsageError("--why and --why-not explain one node's tuples: not with "
                             "--nodes (run the node alone, or use Engine.why per node)")
        from overlog.cli_sim import run_nodes

        return run_nodes(args, out, err, spark_conf)
    if args.latency is not None or args.loss is not None:
        raise UsageError("--latency and --loss shape the network of --nodes")
    net = None
    if args.listen or args.transport:
        from overlog.cli_net import make_transport

        net = make_transport(args, err)
    elif args.peer or args.peers or args.secret_file:
        raise UsageError("--peer, --peers and --secret-file go with --listen (and "
                         "--secret-file with --nodes)")
    from overlog.stdlib import Loopback, periodic

    loopback = Loopback()  # (alone: what is sent elsewhere is counted, and said)
    options: dict[str, Any] = {"handlers": [periodic.install, loopback]}
    if net is not None:
        options["handlers"] = [periodic.install]  # and the transport, below
        options["send_facts"] = False  # every node runs the program: each loads its own
    engine = make_engine(args, args.program, err, spark_conf, address=args.address,
                         clock=args.clock or ("real" if net else "sim"), seed=args.seed,
                         **options)
    if engine is None:
        return 1
    if net is not None:
        from overlog.cli_net import open_transport

        open_transport(net, engine)
    try:
        return _run_node(args, engine, net, out, err, loopback)
    finally:
        if net is not None:
            from overlog.stdlib.net import drain

            drain([net], 1.0)  # what TCP still holds for its peers, for a second
            net.close()


def _run_node(args: argparse.Namespace, engine: Any, net: Any, out: TextIO,
              err: TextIO, loopback: Any = None) -> int:
    from overlog.cli_net import advance, stopped_by_sigterm

    for name in args.print_tables:
        if name not in engine.plan.relations:
            raise UsageError(f"--print names `{name}`, which the program does not have")
    questions = [(flag, *question_tuple(engine, flag, text))
                 for flag, texts in (("--why", args.why), ("--why-not", args.why_not))
                 for text in texts]
    if args.facts:
        load_facts(engine, args.facts, args.header, err)
    printer = Printer(args.format, out)
    printer.header([engine])
    watched = watch(engine, printer, args.print_tables)
    failed = 0
    placed: set[str] = set()  # what was said of where strata run
    interrupted = False
    progress = _is_terminal(err)
    last = time.monotonic()
    try:
        with stopped_by_sigterm() if net is not None else contextlib.nullcontext() as stop:
            while args.steps is None or engine.step_count < args.steps:
                # reported as each step ends; a node that listens waits when idle
                reports = (engine.run(steps=1, until=args.until) if net is None
                           else advance(engine, args.until, stop))
                for report in reports:
                    failed += report_step(engine, report, args.trace, placed, err)
                if progress and time.monotonic() - last > 0.5:
                    last = time.monotonic()
                    err.write(f"\rstep {engine.step_count}  time {engine.now:g}")
                    err.flush()
                if not reports:
                    break
    except OverlogError as error:
        print(str(error), file=err)
        return 1
    except KeyboardInterrupt:  # the step it cut short was undone: the tables stand
        interrupted = True
    except _OutputClosed:
        raise BrokenPipeError from None
    if progress:
        err.write("\r\x1b[K")
    if interrupted:
        err.write(f"interrupted: tables as of step {engine.step_count}\n")
    print_tables(engine, printer, args.print_tables, watched, err)
    answer(engine, questions, out if args.format == "text" else err)
    report_profiles(args, {None: engine}, err)
    if net is not None:
        from overlog.cli_net import counts

        counts(net, err)
    elif loopback is not None and loopback.undeliverable:
        from overlog.printer import format_value

        where = ", ".join(map(format_value, sorted(loopback.addresses, key=str)))
        print(f"overlog: note: {loopback.undeliverable:,} tuple"
              f"{'s' if loopback.undeliverable != 1 else ''} sent to other addresses ({where}) "
              "had nowhere to go: run the nodes together with --nodes, or each with --listen "
              "(docs/distribution.md)", file=err)
    if args.output:
        write_output(engine, args.output, args.output_format)
    return EXIT_INTERRUPTED if interrupted else 3 if failed else 0


def question_tuple(engine: Any, flag: str, text: str) -> tuple[str, tuple]:
    """The (relation, row) a --why or --why-not names, or a usage error."""
    from overlog.api import atom_values

    try:
        relation, row = atom_values(text)
    except ValueError as error:
        raise UsageError(f"{flag}: {error}") from None
    rel = engine.plan.relations.get(relation)
    if rel is None:
        raise UsageError(f"{flag} names `{relation}`, which the program does not have")
    if len(row) != rel.arity:
        raise UsageError(f"{flag}: `{relation}` has {rel.arity} fields, not {len(row)}")
    return relation, row


def answer(engine: Any, questions: list[tuple[str, str, tuple]], out: TextIO) -> None:
    """The explanations --why and --why-not asked for, after the run."""
    for flag, relation, row in questions:
        try:
            found = [engine.why(relation, row)] if flag == "--why" else \
                engine.why_not(relation, row)
        except ValueError as error:
            out.write(f"{flag}: {error}\n")
            continue
        out.write(f"{flag} {format_tuple(relation, row, engine.plan.relations[relation].event)}:"
                  "\n" + "".join(x.format() for x in found))


def report_profiles(args: argparse.Namespace, engines: dict[str | None, Any],
                    err: TextIO) -> None:
    """--profile: each engine's profile on stderr (a node's lines prefixed with its name);
    --profile-json: written to the file (several nodes: an object by node)."""
    if args.profile:
        for node, engine in engines.items():
            text = engine.profile.format()
            err.write(text if node is None else
                      "".join(f"{node}: {line}\n" for line in text.splitlines()))
    if args.profile_json is not None:
        found = {node: engine.profile.as_json() for node, engine in engines.items()}
        data = found.get(None, found)
        with open(args.profile_json, "w", encoding="utf-8") as file:
            file.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def check_arguments(args: argparse.Namespace) -> dict[str, str]:
    """Refuse a bad command line before anything runs; the Spark settings."""
    if (args.spark_master or args.spark_conf) and args.backend in ("local", "vector"):
        raise UsageError("--spark-master and --spark-conf go with --backend spark or auto")
    for flag, value in (("--spark-threshold", args.spark_threshold),
                        ("--vector-threshold", args.vector_threshold)):
        if value is not None and args.backend != "auto":
            raise UsageError(f"{flag} goes with --backend auto")
        if value is not None and value < 0:
            raise UsageError(f"{flag} takes a number of rows >= 0")
    spark_conf = dict(_setting(text) for text in args.spark_conf)
    if (args.listen or args.transport) and (args.nodes is not None or args.node):
        raise UsageError("--listen runs one real node; --nodes runs simulated ones")
    if args.output_format == "parquet" and args.output:
        try:
            parquetio.require()
        except parquetio.ParquetError as error:
            raise UsageError(str(error)) from None
    if args.profile_json is not None:
        folder = os.path.dirname(args.profile_json) or "."
        if not os.path.isdir(folder) or os.path.isdir(args.profile_json):
            raise UsageError(f"--profile-json: cannot write {args.profile_json}")
    if args.steps is not None and args.steps < 0:
        raise UsageError("--steps must be >= 0")
    if args.until is not None and math.isnan(args.until):
        raise UsageError("--until takes a number of seconds, not nan")
    if args.output:
        check_output(args.output)
    if args.max_tuples < 1 or args.max_rounds < 1:
        raise UsageError("--max-tuples and --max-rounds take a positive number")
    if args.step_timeout is not None and not args.step_timeout > 0:
        raise UsageError("--step-timeout takes a positive number of seconds")
    return spark_conf


def make_engine(args: argparse.Namespace, path: str, err: TextIO, spark_conf: dict[str, str],
                warn: bool = True, **options: Any) -> Any:
    """The engine of program ``path`` with the command line's settings and ``options``,
    its warnings printed (if ``warn``); None (its errors printed) if it does not compile."""
    defines = dict(parse_define(d) for d in args.define)
    try:
        source, note = read_program(path, args.dialect)
    except UnreadableSource as error:
        raise UsageError(str(error)) from None
    if note:
        print(note, file=err)

    from overlog.api import Engine

    try:
        engine = Engine(source, "<stdin>" if path == "-" else path, defines=defines,
                        native_modules=args.native,
                        dialect=args.dialect,
                        max_tuples=args.max_tuples, max_rounds=args.max_rounds,
                        step_timeout=args.step_timeout,
                        progress=_Progress(err) if _is_terminal(err) else None,
                        backend=args.backend, spark_master=args.spark_master or "local[2]",
                        spark_conf=spark_conf, spark_threshold=args.spark_threshold,
                        vector_threshold=args.vector_threshold,
                        profile=args.profile or args.profile_json is not None,
                        provenance=bool(args.why or args.why_not),
                        **options)
    except CompileError as error:
        print(error.render(), file=err)
        return None
    if args.backend == "spark":
        from overlog.runtime.spark import SparkUnavailable

        try:
            engine.spark.start()
        except SparkUnavailable as error:
            raise UsageError(str(error)) from None
    if args.backend == "vector":
        from overlog.runtime.vector import VectorUnavailable

        try:
            engine.vector.start()
        except VectorUnavailable as error:
            raise UsageError(str(error)) from None
    checked = engine.plan.checked
    supplied = fact_relations(args.facts) if args.facts else set()
    for warning in checked.warnings if warn else ():
        if warning.code == "W201" and warning.subject in supplied:
            continue  # fed from outside: by -F
        print(render(warning, checked.source), file=err)
    return engine


def fact_relations(directory: str) -> set[str]:
    """The relations files in a -F directory (or in its node directories) supply."""
    names: list[str] = []
    with contextlib.suppress(OSError):  # a missing directory is reported where it is read
        for entry in os.scandir(directory):
            names += os.listdir(entry.path) if entry.is_dir() else [entry.name]
    return {base for base, ext in map(os.path.splitext, names)
            if ext in (".csv", ".parquet")}


def watch(engine: Any, printer: Printer, printed: Iterable[str] = ()) -> list[str]:
    """Print the watched relations' changes as they happen, and the events of the event
    relations in ``printed`` (--print); the watched relations."""
    checked = engine.plan.checked
    watched = list(checked.watched)
    events = [name for name in dict.fromkeys(printed) if name not in watched
              and name in checked.relations and checked.relations[name].event]
    for name in watched + events:
        for op in checked.watch_ops(name) if name in watched else ("event",):
            if op == "event":
                engine.register_listener(name, None, _watcher(engine, printer, name, op, True))
            else:
                engine.register_listener(name, None, _watcher(engine, printer, name, op, False),
                                         op=op)
    return watched


def report_step(engine: Any, report: Any, trace: bool, placed: set[str], err: TextIO) -> int:
    """A step's errors (and with ``trace`` its firings and placements) on stderr; how many
    errors."""
    for error in report.errors:
        print(str(error), file=err)
    if trace:
        _trace(engine, report, err)
    for offload in (engine.spark, engine.vector):
        if offload is not None:
            _placement(engine, offload, placed, err, trace)
    return len(report.errors)


def print_tables(engine: Any, printer: Printer, asked: list[str], watched: list[str],
                 err: TextIO) -> None:
    """The final tables: those asked for with --print, or the watched ones, or all."""
    checked = engine.plan.checked
    tables = asked or watched or [name for name, rel in checked.relations.items()
                                  if not rel.event]
    from overlog.runtime.engine import ROWS_LIMIT

    for name in tables:
        if name not in checked.relations or checked.relations[name].event:
            continue
        holder = engine.holder(name)
        if holder is not None and holder.held[name] > ROWS_LIMIT and name not in asked:
            print(f"overlog: note: `{name}` holds {holder.held[name]:,} rows in "
                  f"{holder.name}: not printed (--print {name} prints them; -D DIR writes "
                  "them)", file=err)
            continue
        table = engine.sorted_table(name) if printer.fmt != "jsonl" else None
        if table is not None:
            printer.final_table(name, table, engine.step_count, engine.now)
        else:
            printer.final(name, engine.rows(name, max_rows=None), engine.step_count,
                          engine.now)


def _is_terminal(stream: TextIO) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)())


class _Progress:
    """A long step's progress on a terminal: rounds and tuples, twice a second."""

    def __init__(self, err: TextIO) -> None:
        self.err = err
        self.last = time.monotonic()

    def __call__(self, rounds: int, tuples: int, added: dict[str, int]) -> None:
        now = time.monotonic()
        if now - self.last < 0.5:
            return
        self.last = now
        busiest = ", ".join(f"+{n:,} {name}" for name, n in
                            sorted(added.items(), key=lambda item: -item[1])[:3])
        self.err.write(f"\r\x1b[Kround {rounds:,}: {tuples:,} new tuples ({busiest})")
        self.err.flush()


class _OutputClosed(BaseException):
    """stdout's reader went away while a watcher printed. A BaseException, so that the
    engine, which reports what listeners raise and goes on, lets it end the run."""


def _watcher(engine, printer: Printer, name: str, op: str, event: bool):
    def callback(row: tuple) -> None:
        try:
            printer.change(engine.step_count, engine.now, name, op, row, event)
        except BrokenPipeError as error:
            raise _OutputClosed from error
    return callback


def _trace(engine, report, err: TextIO) -> None:
    fired = [f"{label} derived {n}" for label, n in report.firings.items() if n]
    changes = [f"+{n} {name}" for name, n in report.counts("inserted").items()]
    changes += [f"-{n} {name}" for name, n in report.counts("deleted").items()]
    changes += [f"{n} {name} events" for name, n in report.counts("events").items()]
    changes += [f"{sign}{n} {name} ({_where(engine, name)})"
                for name, change in report.held.items()
                for sign, n in zip("+-", change, strict=True) if n]
    print(f"trace: step {report.step} @{report.time:g}: "
          f"{', '.join(fired) or 'no rule fired'}; {', '.join(changes) or 'no changes'}",
          file=err)


def _where(engine, relation: str) -> str:
    """Where a relation the step's report counts as held is (a callback may have brought
    it back since)."""
    holder = engine.holder(relation)
    return f"in {holder.name}" if holder is not None else "held"


def _placement(engine, offload, said: set[str], err: TextIO, trace: bool) -> None:
    """Once each, for Spark or DuckDB (``offload``): unavailable when a stratum reached its
    threshold (a note); with ``trace``, what moved there and back, and each stratum and
    aggregate rule left to run locally, with why."""
    name = offload.name
    if offload.unavailable is not None and f"{name} unavailable" not in said:
        said.add(f"{name} unavailable")
        print(f"overlog: note: running locally: {offload.unavailable}", file=err)
    if not trace:
        return
    for index, (what, size, there) in enumerate(offload.transitions):
        if f"{name} move {index}" not in said:
            said.add(f"{name} move {index}")
            where = f"to {name}" if there else f"back from {name}"
            print(f"trace: {what} moves {where}: its tables hold {size:,} rows "
                  f"(threshold {offload.threshold:,})", file=err)
    rules = engine.plan.rules
    where = [*(f"stratum {stratum}" for stratum in offload.local),
             *(rules[index].label for index in offload.local_rules)]
    reasons = [*offload.local.values(), *offload.local_rules.values()]
    for what, reason in zip(where, reasons, strict=True):
        if f"{name} {what}" not in said:
            said.add(f"{name} {what}")
            print(f"trace: {what} runs locally: {reason}", file=err)


def load_facts(engine, directory: str, header: bool, err: TextIO) -> None:
    if not os.path.isdir(directory):
        raise UsageError(f"--facts: {directory} is not a directory")
    for entry in sorted(os.listdir(directory)):
        base, ext = os.path.splitext(entry)
        if ext not in (".csv", ".parquet"):
            continue
        relation = engine.plan.relations.get(base)
        if relation is None:
            print(f"overlog: warning: {os.path.join(directory, entry)}: the program has no "
                  f"relation `{base}`; skipped", file=err)
            continue
        try:
            engine.load(base, os.path.join(directory, entry), header=header)
        except (UnreadableSource, TypeError, ValueError) as error:
            raise UsageError(str(error)) from None


def check_output(directory: str) -> None:
    """Refuse, before running, an output directory that cannot be written."""
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise UsageError(f"-D: {directory} is not a directory")
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        raise UsageError(f"-D: cannot create {directory}: {error.strerror}") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(f"-D: cannot write to {directory}: permission denied")


def write_output(engine, directory: str, fmt: str = "csv") -> None:
    """Every persistent table as DIRECTORY/TABLE.csv (or .parquet): all written to temporary
    files first, then renamed, so that a failure (a full disk, a Parquet column of two types)
    leaves no partial file behind."""
    written: list[tuple[str, str]] = []
    try:
        for name, relation in engine.plan.relations.items():
            if relation.event:
                continue
            final = os.path.join(directory, f"{name}.{fmt}")
            temporary = os.path.join(directory, f".{name}.{fmt}.{os.getpid()}.tmp")
            written.append((temporary, final))
            holder = engine.holder(name)
            if holder is not None:  # from Spark or DuckDB, batch by batch
                _write_held(temporary, fmt, holder.batches(name))
                continue
            if fmt == "parquet":
                try:
                    parquetio.write_table(temporary, name, engine.rows(name), relation.arity)
                except parquetio.ParquetError as error:
                    raise UsageError(f"-D: {error}") from None
                continue
            with open(temporary, "w", encoding="utf-8", newline="") as f:
                table = engine.sorted_table(name)
                if table is not None:
                    columnar.write_csv(f, table, None, CHUNK)
                    continue
                for row in engine.rows(name):
                    f.write(format_row(row) + "\n")
        for temporary, final in written:
            os.replace(temporary, final)
    except BaseException as error:  # a full disk, or Ctrl-C: no temporary file stays
        for temporary, _ in written:
            with contextlib.suppress(OSError):
                os.remove(temporary)
        if isinstance(error, OSError):
            raise UsageError(f"-D: cannot write to {directory}: {error.strerror}") from None
        raise


def _write_held(path: str, fmt: str, tables: Iterable[Any]) -> None:
    """A relation held in Spark or DuckDB, as Arrow tables (or record batches) in order,
    written as CSV or Parquet."""
    if fmt == "parquet":
        parquetio.write_arrow(path, tables)
        return
    with open(path, "w", encoding="utf-8", newline="") as f:
        for table in tables:
            if table.num_rows and table.num_columns:
                columnar.write_csv(f, table, None, CHUNK)
            else:  # (a relation of no fields)
                f.write("\n" * table.num_rows)


def _setting(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise UsageError(f"--spark-conf takes KEY=VALUE, not {text!r}")
    return name, value
