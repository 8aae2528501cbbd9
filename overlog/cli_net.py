"""``overlog run --listen HOST:PORT --transport udp|tcp``: one real node (docs/distribution.md,
"Real nodes"): its peers, its secret, and a loop that waits on its sockets and its clock."""

from __future__ import annotations

import argparse
import signal
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TextIO

from overlog.cli_run import UsageError


def read_secret(path: str | None) -> bytes | None:
    """The shared secret of ``--secret-file``: the file's bytes, without the whitespace
    that ends them."""
    if path is None:
        return None
    try:
        with open(path, "rb") as file:
            secret = file.read().rstrip()
    except OSError as error:
        raise UsageError(f"--secret-file: cannot read {path}: {error.strerror}") from None
    if not secret:
        raise UsageError(f"--secret-file: {path} is empty")
    return secret


def read_peers(args: argparse.Namespace) -> dict[str, tuple[str, int]]:
    """``--peer NAME=HOST:PORT`` and the lines of ``--peers FILE`` (``NAME HOST:PORT`` or
    ``NAME=HOST:PORT``; ``#`` starts a comment)."""
    from overlog.stdlib.net import parse_endpoint

    entries = [(text, "--peer") for text in args.peer]
    if args.peers:
        try:
            with open(args.peers, encoding="utf-8") as file:
                lines = file.read().splitlines()
        except (OSError, UnicodeDecodeError) as error:
            raise UsageError(f"--peers: cannot read {args.peers}: "
                             f"{getattr(error, 'strerror', None) or error}") from None
        for number, line in enumerate(lines, 1):
            line = line.split("#", 1)[0].strip()
            if line:
                if "=" not in line:  # NAME HOST:PORT, spaces or tabs between
                    line = "=".join(line.split(None, 1))
                entries.append((line, f"{args.peers}:{number}"))
    peers = {}
    for text, where in entries:
        name, equals, endpoint = (part.strip() for part in text.partition("="))
        try:
            if not equals or not name:
                raise ValueError
            peers[name] = parse_endpoint(endpoint)
        except ValueError:
            raise UsageError(f"{where}: takes NAME=HOST:PORT, not {text!r}") from None
    return peers


def make_transport(args: argparse.Namespace, err: TextIO) -> Any:
    """The transport of ``--listen`` and ``--transport``."""
    from overlog.stdlib.net import parse_endpoint, transport

    if not (args.listen and args.transport):
        raise UsageError("--listen HOST:PORT and --transport udp|tcp go together")
    if args.clock == "sim":
        raise UsageError("a node that listens runs on the real clock: --clock real (the "
                         "default with --listen)")
    try:
        listen = parse_endpoint(args.listen)
    except ValueError:
        raise UsageError(f"--listen takes HOST:PORT, not {args.listen!r}") from None
    net = transport(args.transport, listen, read_peers(args), read_secret(args.secret_file),
                    report=lambda text: print(text, file=err, flush=True))
    return net


def open_transport(net: Any, engine: Any) -> None:
    """Install the transport on the engine: it binds its socket now."""
    try:
        net(engine)
    except OSError as error:
        raise UsageError(f"--listen {net.listen[0]}:{net.listen[1]}: "
                         f"{error.strerror or error}") from None


@contextmanager
def stopped_by_sigterm() -> Iterator[threading.Event]:
    """An event that SIGTERM sets (while the block runs): the run loop stops at it, between
    steps, as at --until."""
    stop = threading.Event()
    try:
        previous = signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    except ValueError:  # not the main thread: no handler to install
        yield stop
        return
    try:
        yield stop
    finally:
        signal.signal(signal.SIGTERM, previous)


def advance(engine: Any, until: float | None, stop: threading.Event) -> list:
    """The next step of a listening node, as a list of its report; waiting on its sockets
    and its clock while it is idle (waking twice a second to see ``stop``); empty once
    ``until`` has passed or ``stop`` is set."""
    while not stop.is_set():
        now = engine.clock.now()
        if until is not None and now > until:
            return []
        if not engine.idle:
            return [engine.step()]
        upcoming = engine.next_time()
        engine.clock.wait(min(t for t in (upcoming, until, now + 0.5) if t is not None))
    return []


def say_counts(err: TextIO, sent: str, stats: Mapping[str, int], faults: tuple[str, ...],
               dropped: Mapping[str, Mapping[str, int]]) -> None:
    """At exit, on stderr, if anything: what the network could not carry (``faults`` of
    ``stats``, after what it ``sent``) and what each node refused."""
    said = ", ".join(f"{stats[f]:,} {f}" for f in faults if stats.get(f))
    if said:
        print(f"overlog: network: {sent}; {said}", file=err)
    for name, counts in dropped.items():
        if counts:
            said = ", ".join(f"{n:,} {reason}" for reason, n in sorted(counts.items()))
            print(f"overlog: {name} dropped: {said}", file=err)


def counts(net: Any, err: TextIO) -> None:
    """What a real node's transport could not send and what it refused."""
    say_counts(err, f"{net.stats['tuples sent']:,} tuples sent", net.stats,
               ("unknown address", "oversized", "send errors", "queue overflow",
                "receive errors"), {net.engine.address: net.receiver.dropped})
