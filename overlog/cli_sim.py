"""``overlog run --nodes A,B,C``: several nodes in one process on the simulated network
(docs/distribution.md, "Several nodes from the command line")."""

from __future__ import annotations

import argparse
import math
import os
import zlib
from typing import Any, TextIO

from overlog import csvio, parquetio
from overlog.cli_run import (
    EXIT_INTERRUPTED,
    Printer,
    UsageError,
    _OutputClosed,
    check_output,
    load_facts,
    make_engine,
    print_tables,
    report_profiles,
    report_step,
    watch,
    write_output,
)
from overlog.errors import OverlogError
from overlog.source import UnreadableSource


def node_programs(args: argparse.Namespace) -> dict[str, str]:
    """Each node's program, in the order the nodes were named: those of --nodes run the
    program, unless --node gives one its own; --node may also add a node."""
    names = [] if args.nodes is None else args.nodes.split(",")
    for name in names:
        if not name:
            raise UsageError(f"--nodes takes names separated by commas, not {args.nodes!r}")
    if len(set(names)) < len(names):
        raise UsageError(f"--nodes names a node twice: {args.nodes!r}")
    programs = dict.fromkeys(names, args.program)
    for text in args.node:
        name, equals, path = text.partition("=")
        if not equals or not name or not path:
            raise UsageError(f"--node takes NAME=PROGRAM.olg, not {text!r}")
        if name in programs and programs[name] != args.program:
            raise UsageError(f"--node gives node {name!r} two programs")
        programs[name] = path
    return programs


def _check(args: argparse.Namespace) -> None:
    if args.clock == "real":
        raise UsageError("--nodes runs on the simulated network's clock: no --clock real")
    if args.address != "localhost":
        raise UsageError("--address names the node of a single-node run: with --nodes, "
                         "the nodes are named by --nodes")
    if args.latency is not None and not (math.isfinite(args.latency) and args.latency >= 0):
        raise UsageError("--latency takes a number of milliseconds >= 0")
    if args.loss is not None and not 0 <= args.loss <= 1:
        raise UsageError("--loss takes a probability between 0 and 1")


def node_seed(seed: int, node: str) -> int:
    """Each node's seed (for f_rand): the run's and the node's name, mixed."""
    return zlib.crc32(f"{seed}/{node}".encode()) ^ seed


def run_nodes(args: argparse.Namespace, out: TextIO, err: TextIO,
              spark_conf: dict[str, str]) -> int:
    _check(args)
    programs = node_programs(args)
    from overlog.cli_net import read_secret
    from overlog.stdlib.sim import SimNetwork

    network = SimNetwork(seed=args.seed, latency=(args.latency or 0.0) / 1000,
                         loss=args.loss or 0.0, secret=read_secret(args.secret_file),
                         report=lambda text: print(text, file=err))
    engines: dict[str, Any] = {}
    watched: dict[str, list[str]] = {}
    printers: dict[str, Printer] = {}
    for name, path in programs.items():
        # a fact goes to the node its location names: a node running the same program
        # loads it there; others are sent from the first node running it
        peers = {other for other, p in programs.items() if p == path}
        first = next(other for other in programs if programs[other] == path) == name
        engine = make_engine(args, path, err, spark_conf, first, address=name,
                             clock=network.clock,
                             seed=node_seed(args.seed, name), handlers=network.handlers(),
                             send_facts=(lambda address, peers=peers: address not in peers)
                             if first else False)
        if engine is None:
            return 1
        engines[name] = engine
        printers[name] = Printer(args.format, out, name)
        watched[name] = watch(engine, printers[name], args.print_tables)
    next(iter(printers.values())).header(engines.values())  # (one, for every node)
    for table in args.print_tables:
        if not any(table in engine.plan.relations for engine in engines.values()):
            raise UsageError(f"--print names `{table}`, which no node's program has")
    if args.facts:
        _load_node_facts(engines, args.facts, args.header, err)

    failed = 0
    placed: dict[str, set[str]] = {name: set() for name in engines}
    interrupted = False
    try:
        for address, report in network.run(steps=args.steps, until=args.until):
            failed += report_step(engines[address], report, args.trace, placed[address], err)
    except OverlogError as error:
        print(str(error), file=err)
        return 1
    except KeyboardInterrupt:
        interrupted = True
    except _OutputClosed:
        raise BrokenPipeError from None
    if interrupted:
        err.write(f"interrupted: tables as of time {network.clock.now():g}\n")
    for name, engine in engines.items():
        print_tables(engine, printers[name], args.print_tables, watched[name], err)
    report_profiles(args, dict(engines), err)
    _counts(network, err)
    if args.output:
        for name, engine in engines.items():
            directory = os.path.join(args.output, name)
            check_output(directory)
            write_output(engine, directory, args.output_format)
    return EXIT_INTERRUPTED if interrupted else 3 if failed else 0


def _counts(network: Any, err: TextIO) -> None:
    """What the network lost and the nodes refused, if anything, on stderr."""
    from overlog.cli_net import say_counts

    stats = network.stats
    say_counts(err, f"{stats['sent']:,} packets sent, {stats['delivered']:,} delivered",
               stats, ("lost", "duplicated", "partitioned", "unknown address", "oversized"),
               {name: network.dropped(name) for name in network.nodes})


def _load_node_facts(engines: dict[str, Any], directory: str, header: bool,
                     err: TextIO) -> None:
    """``DIR/NODE/TABLE.csv`` (or .parquet) into each node with such a directory; if none
    has one, ``DIR/TABLE.csv`` with each row going to the node its location field names
    (into every node, for a table without one)."""
    if not os.path.isdir(directory):
        raise UsageError(f"--facts: {directory} is not a directory")
    own = [name for name in engines if os.path.isdir(os.path.join(directory, name))]
    if own:
        for name in own:
            load_facts(engines[name], os.path.join(directory, name), header, err)
        return
    for entry in sorted(os.listdir(directory)):
        base, ext = os.path.splitext(entry)
        if ext not in (".csv", ".parquet"):
            continue
        path = os.path.join(directory, entry)
        takers = [e for e in engines.values() if base in e.plan.relations]
        if not takers:
            print(f"overlog: warning: {path}: no node's program has a relation `{base}`; "
                  "skipped", file=err)
            continue
        rel = takers[0].plan.relations[base]
        try:
            rows = (csvio.read_rows(path, rel.arity, header) if ext == ".csv"
                    else parquetio.read_rows(path, rel.arity))
            for row in rows:
                targets = (takers if rel.location is None else
                           [e for e in takers if e.address == row[rel.location]])
                if not targets:
                    raise ValueError(f"{path}: a row for {row[rel.location]!r}, which is "
                                     "not among the nodes")
                for engine in targets:
                    if rel.event:
                        engine.generate_event(base, row)
                    else:
                        engine.insert(base, row)
        except (UnreadableSource, TypeError, ValueError) as error:
            raise UsageError(str(error)) from None
