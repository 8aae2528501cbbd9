"""The ``overlog`` command. Exit codes: 0 ok, 1 program error, 2 usage, 3 steps failed."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import TextIO

from overlog.analysis import CheckedProgram
from overlog.cli_run import UsageError, add_arguments, run_command
from overlog.compile import compile_program
from overlog.diagnostics import render_all
from overlog.errors import CompileError
from overlog.plan import format_plan
from overlog.planner import plan_rule
from overlog.printer import format_statement

EXIT_OK, EXIT_PROGRAM, EXIT_USAGE, EXIT_STEPS = 0, 1, 2, 3
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a tool killed by a closed pipe returns


class _UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="overlog", description="Check, explain and run Overlog programs.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    check = commands.add_parser("check", help="check programs for errors")
    check.add_argument("programs", nargs="+", metavar="PROGRAM.olg")
    explain = commands.add_parser("explain", help="print relations, strata and rule kinds")
    explain.add_argument("program", metavar="PROGRAM.olg")
    run = commands.add_parser("run", help="run a program's timesteps")
    add_arguments(run)
    return parser


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as error:
        raise _UsageError(f"cannot read {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise _UsageError(f"cannot read {path}: not UTF-8 text") from None


def _compile(path: str, err: TextIO) -> CheckedProgram | None:
    try:
        checked = compile_program(_read(path), path)
    except CompileError as error:
        print(error.render(), file=err)
        return None
    if checked.warnings:
        print(render_all(list(checked.warnings), checked.source), file=err)
    return checked


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else plural or word + 's'}"


def summary(checked: CheckedProgram) -> str:
    return (f"{_plural(len(checked.relations), 'relation')}, "
            f"{_plural(len(checked.rules), 'rule')}, "
            f"{_plural(len(checked.strata), 'stratum', 'strata')}")


def _check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    status = EXIT_OK
    for path in args.programs:
        checked = _compile(path, err)
        if checked is None:
            status = EXIT_PROGRAM
        else:
            print(f"{path}: ok ({summary(checked)})", file=out)
    return status


def _bound(value: float) -> str:
    return "infinity" if value == math.inf else f"{value:g}"


def explain(checked: CheckedProgram, with_plans: bool = True) -> str:
    """Relations, strata, rule kinds and each rule's plans, deterministically."""
    lines = [f"program {checked.source.path}: {summary(checked)}", "", "relations:"]
    width = max((len(name) for name in checked.relations), default=0)
    for relation in checked.relations.values():
        kind = "event" if relation.event else "persistent"
        text = f"  {relation.name:<{width}}  {kind:<10}  arity {relation.arity}"
        if not relation.event:
            keys = ", ".join(str(k + 1) for k in relation.keys)
            text += f"  keys({keys})"
            if relation.lifetime != math.inf or relation.size != math.inf:
                text += f"  lifetime {_bound(relation.lifetime)}  size {_bound(relation.size)}"
        if relation.builtin:
            text += "  (built-in)"
        lines.append(text.rstrip())

    def rule_line(index: int) -> str:
        info = checked.rules[index]
        kind = info.kind + (", remote" if info.remote else "")
        text = f"  {info.label} [{kind}]  {format_statement(replace(info.rule, name=None))}"
        if with_plans:
            plans = plan_rule(index, info.rule, info.kind == "view" and not info.deferred)
            for plan in (*plans.triggers, plans.full):
                text += "\n" + "\n".join("      " + line for line in format_plan(plan).split("\n"))
        return text

    for stratum in checked.strata:
        lines += ["", f"stratum {stratum.index}: {', '.join(stratum.relations)}"]
        lines += [rule_line(i) for i in stratum.rules]
    deferred = [info.index for info in checked.rules if info.deferred]
    if deferred:
        lines += ["", "deferred (after the fixpoint, written at commit or sent):"]
        lines += [rule_line(i) for i in deferred]
    return "\n".join(lines)


def _explain(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    checked = _compile(args.program, err)
    if checked is None:
        return EXIT_PROGRAM
    print(explain(checked), file=out)
    return EXIT_OK


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        return run_command(args, out, err)
    except UsageError as error:
        raise _UsageError(str(error)) from None


_COMMANDS = {"check": _check, "explain": _explain, "run": _run}


def main(argv: Sequence[str] | None = None, out: TextIO | None = None,
         err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0) and EXIT_USAGE
    try:
        return _COMMANDS[args.command](args, out, err)
    except _UsageError as error:
        print(f"overlog: error: {error}", file=err)
        return EXIT_USAGE


def entry() -> None:
    """The console script. Runs are reproducible across processes only with a fixed string
    hash seed (set iteration order decides which binding draws which f_rand() value), so
    unless the user chose one, re-execute once with PYTHONHASHSEED=0."""
    if os.environ.get("PYTHONHASHSEED") is None:
        env = dict(os.environ, PYTHONHASHSEED="0")
        os.execve(sys.executable, [sys.executable, "-m", "overlog", *sys.argv[1:]], env)
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
