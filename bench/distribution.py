"""Distribution: tuples per second between two real nodes on loopback, and node-steps per
second of a ring on the simulated network.

    python bench/distribution.py [--tuples N] [--batch B] [--ring NODES] [--rounds R]

1. Two nodes, ``a`` and ``b``, each an engine with a UDP or TCP transport on 127.0.0.1, in
   one process (the step loops share it; the transports' threads receive). ``a`` is given
   N rows of ``out`` in steps of B rows each; the remote view ``got(@"b", I) :- out(@"a",
   I).`` sends each row to ``b``. Timed: from ``a``'s first step until ``b`` holds all N
   rows of ``got`` (encoding, sending, receiving, decoding, ``b``'s steps).
2. A ring of NODES nodes on ``SimNetwork`` passing tokens: every node sends a token to its
   successor every 0.1 s for R rounds. Timed: the run; reported as node-steps a second.

Prints one line per measurement; docs/benchmarks.md has the results and the machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from overlog import Engine
from overlog.stdlib import periodic
from overlog.stdlib.net import TcpTransport, UdpTransport
from overlog.stdlib.sim import SimNetwork

SENDER = 'got(@"b", I) :- out(@"a", I).'


def loopback(kind: type, tuples: int, batch: int) -> float:
    b_net = kind(("127.0.0.1", 0))
    b = Engine(SENDER, address="b", clock="real", handlers=[periodic.install, b_net],
               backend="local")
    a_net = kind(("127.0.0.1", 0), peers={"b": b_net.listen})
    a = Engine(SENDER, address="a", clock="real", handlers=[periodic.install, a_net],
               backend="local")
    try:
        start = time.perf_counter()
        for first in range(0, tuples, batch):
            for i in range(first, min(tuples, first + batch)):
                a.insert("out", ("a", i))
            a.step()
            while not b.idle:
                b.step()
        deadline = time.monotonic() + 120
        while len(b.store.rows("got")) < tuples:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{kind.__name__}: {len(b.store.rows('got')):,} of "
                                   f"{tuples:,} arrived; dropped {b_net.receiver.dropped}")
            if b.idle:
                time.sleep(0.0005)
            else:
                b.step()
        return time.perf_counter() - start
    finally:
        a_net.close()
        b_net.close()


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
    args = parser.parse_args()
    for kind in (UdpTransport, TcpTransport):
        best = min(loopback(kind, args.tuples, args.batch) for _ in range(3))
        print(f"{kind.__name__}: {args.tuples:,} tuples in batches of {args.batch:,}: "
              f"{best:.2f} s, {args.tuples / best:,.0f} tuples/s (best of 3)")
    seconds, steps = ring(args.ring, args.rounds)
    print(f"sim ring of {args.ring} nodes, {args.rounds} rounds: {steps:,} node-steps in "
          f"{seconds:.2f} s, {steps / seconds:,.0f} node-steps/s")


if __name__ == "__main__":
    main()
