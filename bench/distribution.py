"""Distribution: tuples per second between two real nodes on loopback, and node-steps per
second of a ring on the simulated network.

    python bench/distribution.py [--tuples N] [--batch B] [--ring NODES] [--rounds R]

1. Two nodes, ``a`` and ``b``, each an engine in a process of its own with a UDP or TCP
   transport on 127.0.0.1. ``a`` is given N rows of ``out`` in steps of B rows each; the
   remote view ``got(@"b", I) :- out(@"a", I).`` sends each row to ``b``. Timed: from
   ``a``'s first step until ``b`` holds all N rows of ``got`` (inserting, evaluating,
   encoding, sending, receiving, decoding, ``b``'s steps); best of 3.
2. A ring of NODES nodes on ``SimNetwork`` passing tokens: every node sends a token to its
   successor every 0.1 s for R rounds. Timed: the run; reported as node-steps a second.

Prints one line per measurement; docs/benchmarks.md has the results and the machine.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from overlog import Engine
from overlog.stdlib import periodic
from overlog.stdlib.net import TcpTransport, UdpTransport
from overlog.stdlib.sim import SimNetwork

SENDER = 'got(@"b", I) :- out(@"a", I).'
KINDS = {"udp": UdpTransport, "tcp": TcpTransport}


def receive(kind: str, tuples: int) -> None:
    """Node b, in the child process: says where it listens, then when it has them all."""
    net = KINDS[kind](("127.0.0.1", 0))
    b = Engine(SENDER, address="b", clock="real", handlers=[periodic.install, net],
               backend="local")
    print(net.listen[1], flush=True)
    deadline = time.monotonic() + 120
    while len(b.store.rows("got")) < tuples and time.monotonic() < deadline:
        if b.idle:
            time.sleep(0.0002)
        else:
            b.step()
    print(time.monotonic() if len(b.store.rows("got")) == tuples else
          f"only {len(b.store.rows('got')):,}; dropped {dict(net.receiver.dropped)}",
          flush=True)
    net.close()


def loopback(kind: str, tuples: int, batch: int) -> float:
    child = subprocess.Popen([sys.executable, __file__, "--receive", kind,
                              "--tuples", str(tuples)], stdout=subprocess.PIPE, text=True)
    try:
        port = int(child.stdout.readline())  # type: ignore[union-attr]
        net = KINDS[kind](("127.0.0.1", 0), peers={"b": ("127.0.0.1", port)})
        a = Engine(SENDER, address="a", clock="real", handlers=[periodic.install, net],
                   backend="local")
        start = time.monotonic()
        for first in range(0, tuples, batch):
            for i in range(first, min(tuples, first + batch)):
                a.insert("out", ("a", i))
            a.step()
        done = child.stdout.readline().strip()  # type: ignore[union-attr]
        net.close()
        try:
            return float(done) - start
        except ValueError:
            raise RuntimeError(f"{kind}: {done}") from None
    finally:
        child.wait(timeout=60)


RING = """
succ(@N, S) :- ring(@N, S).
token[@S, N] :- periodic[@N, _, 0.1, ROUNDS], succ(@N, S).
seen(@N, count<*>) :- token[@N, _].
"""


def ring(nodes: int, rounds: int) -> tuple[float, int]:
    net = SimNetwork(latency=0.01)
    names = [f"n{i}" for i in range(nodes)]
    for i, name in enumerate(names):
        engine = Engine(RING.replace("ROUNDS", str(rounds)), address=name, clock=net.clock,
                        handlers=net.handlers(), backend="local")
        engine.insert("ring", (name, names[(i + 1) % nodes]))
    start = time.perf_counter()
    reports = net.run()
    return time.perf_counter() - start, len(reports)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tuples", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--ring", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--receive", choices=list(KINDS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.receive:
        receive(args.receive, args.tuples)
        return
    for kind in KINDS:
        best = min(loopback(kind, args.tuples, args.batch) for _ in range(3))
        print(f"{kind}: {args.tuples:,} tuples in batches of {args.batch:,}: "
              f"{best:.2f} s, {args.tuples / best:,.0f} tuples/s (best of 3)")
    seconds, steps = ring(args.ring, args.rounds)
    print(f"sim ring of {args.ring} nodes, {args.rounds} rounds: {steps:,} node-steps in "
          f"{seconds:.2f} s, {steps / seconds:,.0f} node-steps/s")


if __name__ == "__main__":
    main()
