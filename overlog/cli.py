"""The ``overlog`` command. Exit codes: 0 ok, 1 program error, 2 usage, 3 steps failed."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from overlog.plan import ProgramPlan

# The rest is imported where it is used: the console script re-executes itself before a run
# (see ``entry``), and ``check`` should not wait for the engine to import.

EXIT_OK, EXIT_PROGRAM, EXIT_USAGE, EXIT_STEPS = 0, 1, 2, 3
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a tool killed by a closed pipe returns


class _UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    from overlog.cli_run import add_arguments, add_program_arguments

    parser = argparse.ArgumentParser(
        prog="overlog", description="Check, explain and run Overlog programs.")
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="show the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    check = commands.add_parser("check", help="check programs for errors")
    check.add_argument("programs", nargs="+", metavar="PROGRAM.olg",
                       help="program files; - reads one from stdin")
    explain = commands.add_parser(
        "explain", help="print relations, strata, rule kinds and every plan the runtime runs")
    explain.add_argument("program", metavar="PROGRAM.olg")
    explain.add_argument("--spark-threshold", type=int, metavar="ROWS",
                         help="the threshold `overlog run` would use with --backend auto")
    explain.add_argument("--vector-threshold", type=int, metavar="ROWS",
                         help="the DuckDB threshold `overlog run` would use with --backend "
                         "auto")
    picture = explain.add_mutually_exclusive_group()
    picture.add_argument("--dot", action="store_true",
                         help="print the rule/relation dependency graph as Graphviz DOT instead")
    picture.add_argument("--svg", metavar="FILE",
                         help="render the dependency graph to an SVG file (runs Graphviz's dot)")
    run = commands.add_parser("run", help="run a program's timesteps")
    add_arguments(run)
    repl = commands.add_parser(
        "repl", help="an interactive session: add statements, query, step (docs/repl.md)")
    repl.add_argument("program", nargs="?", metavar="PROGRAM.olg",
                      help="the program to start with")
    add_program_arguments(repl)
    for command in (check, explain):
        add_program_arguments(command)
    return parser


class _Version(argparse.Action):
    """--version, looked up only when asked (importlib.metadata costs a tenth of a second
    of every start-up)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"overlog {_version()}")
        parser.exit()


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("overlog")
    except metadata.PackageNotFoundError:  # (run from a checkout that is not installed)
        return "(not installed)"


def _read(path: str, dialect: str | None, err: TextIO) -> str:
    from overlog.dialect import read_program
    from overlog.source import UnreadableSource

    try:
        text, note = read_program(path, dialect)
    except UnreadableSource as error:
        raise _UsageError(str(error)) from None
    if note:
        print(note, file=err)
    return text


def _compile(path: str, err: TextIO, args: argparse.Namespace) -> ProgramPlan | None:
    # overlog.api.compile_program's policy, without importing the engine (check, explain)
    from overlog.cli_run import UsageError, parse_define
    from overlog.compile import compile_program
    from overlog.diagnostics import render_all
    from overlog.errors import CompileError
    from overlog.stdlib.natives import Natives

    try:
        defines = dict(parse_define(d) for d in args.define)
    except UsageError as error:
        raise _UsageError(str(error)) from None
    try:
        plan = compile_program(_read(path, args.dialect, err),
                               "<stdin>" if path == "-" else path,
                               natives=Natives(args.native).check,
                               defines=defines, dialect=args.dialect)
    except CompileError as error:
        print(error.render(), file=err)
        return None
    if plan.checked.warnings:
        print(render_all(list(plan.checked.warnings), plan.checked.source), file=err)
    return plan


def _check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from overlog.plan import summary

    status = EXIT_OK
    for path in args.programs:
        plan = _compile(path, err, args)
        if plan is None:
            status = EXIT_PROGRAM
        else:
            print(f"{path}: ok ({summary(plan)})", file=out)
    return status


def _explain(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    dot = _dot_command(args) if args.svg is not None else None
    plan = _compile(args.program, err, args)
    if plan is None:
        return EXIT_PROGRAM
    if args.dot or dot is not None:
        from overlog.dot import program_graph

        graph = program_graph(plan)
        if dot is None:
            out.write(graph)
        else:
            _render_svg(dot, graph, args.svg)
        return EXIT_OK
    from overlog.plan import format_program_plan
    from overlog.runtime import spark, vector
    from overlog.runtime.memory import THRESHOLD, VECTOR_THRESHOLD

    threshold = THRESHOLD if args.spark_threshold is None else args.spark_threshold
    vector_threshold = (VECTOR_THRESHOLD if args.vector_threshold is None
                        else args.vector_threshold)
    for flag, value in (("--spark-threshold", threshold),
                        ("--vector-threshold", vector_threshold)):
        if value < 0:
            raise _UsageError(f"{flag} takes a number of rows >= 0")
    notes = spark.placement(plan, threshold)
    for stratum, lines in vector.placement(plan, vector_threshold, threshold).items():
        notes[stratum][1:1] = lines  # after where Spark runs its views
    print(format_program_plan(plan, notes), file=out)
    return EXIT_OK


def _dot_command(args: argparse.Namespace) -> str:
    """Graphviz's ``dot`` for ``explain --svg``, or a usage error saying how to get it."""
    import shlex
    import shutil

    dot = shutil.which("dot")
    if dot is None:
        pipe = (f"overlog explain {shlex.quote(args.program)} --dot | dot -Tsvg -o "
                f"{shlex.quote(args.svg)}")
        raise _UsageError(
            "--svg runs Graphviz's `dot`, which is not on PATH: install Graphviz "
            "(`apt install graphviz`, `brew install graphviz`, or from "
            "https://graphviz.org/download/), or run `" + pipe + "` where it is installed")
    return dot


def _render_svg(dot: str, graph: str, path: str) -> None:
    """Render DOT text to an SVG file with ``dot -Tsvg``; written only if dot succeeds."""
    import subprocess

    try:
        done = subprocess.run([dot, "-Tsvg"], input=graph.encode("utf-8"),
                              capture_output=True, check=False)
    except OSError as error:
        raise _UsageError(f"--svg: cannot run {dot}: {error.strerror or error}") from None
    if done.returncode != 0:
        problem = done.stderr.decode("utf-8", "replace").strip() or "no message"
        raise _UsageError(f"--svg: dot -Tsvg failed (exit {done.returncode}): {problem}")
    try:
        with open(path, "wb") as file:
            file.write(done.stdout)
    except OSError as error:
        raise _UsageError(f"--svg: cannot write {path}: {error.strerror or error}") from None


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from overlog.cli_run import UsageError, run_command

    try:
        return run_command(args, out, err)
    except UsageError as error:
        raise _UsageError(str(error)) from None


def _repl(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from overlog.cli_run import UsageError
    from overlog.repl import repl_command

    try:
        return repl_command(args, out, err)
    except UsageError as error:
        raise _UsageError(str(error)) from None


_COMMANDS = {"check": _check, "explain": _explain, "run": _run, "repl": _repl}


def main(argv: Sequence[str] | None = None, out: TextIO | None = None,
         err: TextIO | None = None) -> int:
    from overlog.limits import recursion_room, unlimited_int_digits

    out = out or sys.stdout
    err = err or sys.stderr
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0) and EXIT_USAGE
    try:
        # terms and values may nest MAX_NESTING deep, and integers have any number of digits
        with recursion_room(), unlimited_int_digits():
            return _COMMANDS[args.command](args, out, err)
    except _UsageError as error:
        print(f"overlog: error: {error}", file=err)
        return EXIT_USAGE


_REENTRY = ("import sys; sys.path[:1] = [] if sys.path[:1] == [''] else sys.path[:1]; "
            "from overlog.cli import entry; entry()")


def entry() -> None:
    """The console script. Runs are reproducible across processes only with a fixed string
    hash seed (set iteration order decides which binding draws which f_rand() value), so
    unless the user chose one, re-execute a run once with PYTHONHASHSEED=0 (before this
    module imports anything more: the other commands do not draw random numbers)."""
    if os.environ.get("PYTHONHASHSEED") is None and "run" in sys.argv[1:2]:
        # not `python -m overlog`, which would put the current directory first on the
        # import path (a `lark.py` beside the program would run): drop it before importing
        env = dict(os.environ, PYTHONHASHSEED="0")
        os.execve(sys.executable, [sys.executable, "-c", _REENTRY, *sys.argv[1:]], env)
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader went away (`overlog run ... | head`): stop quietly, as a tool killed by
        # SIGPIPE would, and keep the interpreter from complaining when it flushes stdout
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = EXIT_BROKEN_PIPE
    sys.exit(code)


if __name__ == "__main__":
    entry()
