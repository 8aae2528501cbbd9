"""``overlog run --listen HOST:PORT --transport udp|tcp``: one real node (docs/distribution.md,
"Real nodes"): its peers, its secret, and a loop that waits on its sockets and its clock."""

from __future__ import annotations

import argparse
import signal
from collections.abc import Iterator
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
                entries.append((line.replace(" ", "=", 1) if "=" not in line else line,
                                f"{args.peers}:{number}"))
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


class Stopped(Exception):
    """SIGTERM: stop cleanly, as at --until."""


@contextmanager
def stopped_by_sigterm() -> Iterator[None]:
    def stop(signum: int, frame: Any) -> None:
        raise Stopped

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread: no handler to install
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def wait(engine: Any, until: float | None) -> bool:
    """Idle while listening: wait for a delivery, the next timed input or ``until``
    (checking for signals twice a second); False once ``until`` has passed."""
    now = engine.clock.now()
    if until is not None and now >= until:
        return False
    upcoming = engine.next_time()
    deadline = min(t for t in (upcoming, until, now + 0.5) if t is not None)
    engine.clock.wait(deadline)
    return True


def counts(net: Any, err: TextIO) -> None:
    """What the transport could not send and the node refused, if anything, on stderr."""
    stats = net.stats
    faults = ("unknown address", "oversized", "send errors", "queue overflow")
    said = ", ".join(f"{stats[f]:,} {f}" for f in faults if stats[f])
    if said:
        print(f"overlog: network: {stats['tuples sent']:,} tuples sent; {said}", file=err)
    dropped = net.receiver.dropped
    if dropped:
        said = ", ".join(f"{n:,} {reason}" for reason, n in sorted(dropped.items()))
        print(f"overlog: {net.engine.address} dropped: {said}", file=err)
