"""The simulated network (docs/distribution.md, "The simulated network"): many nodes in one
process, on one virtual clock, exchanging real packets (stdlib/wire.py) through links with
latency, jitter (which reorders), loss, duplication and partitions, all drawn from one seeded
random generator, so that a run is exactly reproducible.

    net = SimNetwork(seed=1, latency=0.01)
    a = Engine(program, address="a", clock=net.clock, handlers=net.handlers())
    b = Engine(program, address="b", clock=net.clock, handlers=net.handlers())
    net.run()

``run`` steps every node that has something to do at the current time, in the order they
joined, until none has; then the clock moves to the next timed input of any node or the
next packet's arrival. A test may change links and partitions between runs.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from overlog.runtime.clock import SimClock
from overlog.runtime.events import EventAPI, Handler
from overlog.runtime.report import StepReport
from overlog.stdlib import periodic, wire
from overlog.stdlib.transport import Receiver, Transport

MAX_PACKET = 65_507  # what fits in a UDP datagram: the sim splits packets as udp does


@dataclass(frozen=True, slots=True)
class Link:
    """How packets from one node to another travel: ``latency`` seconds, plus a uniform
    draw in [0, ``jitter``) each (so later packets may overtake earlier ones); each is lost
    with probability ``loss`` and, if not, sent twice with probability ``duplicate``."""

    latency: float = 0.0
    jitter: float = 0.0
    loss: float = 0.0
    duplicate: float = 0.0

    def __post_init__(self) -> None:
        for name in ("latency", "jitter"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0 seconds, not {getattr(self, name)!r}")
        for name in ("loss", "duplicate"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be a probability in [0, 1], not "
                                 f"{getattr(self, name)!r}")


class _Node(Transport):
    """One node's side of the network: what it sends, batched per destination until the
    network takes it after the step."""

    def __init__(self, network: SimNetwork) -> None:
        self.network = network

    def __call__(self, engine: EventAPI) -> None:
        super().__call__(engine)
        self.network._join(self)
        engine.on_sent(lambda: self.network._flush(self))
        self.receiver = Receiver(engine, self.support, self.network.secret,
                                 report=self.network._report)


class SimNetwork:
    """Nodes in one process on a simulated network; see the module's doc. ``stats`` counts,
    for the whole network: packets ``sent``, ``delivered``, ``lost``, ``duplicated``,
    ``partitioned`` (dropped between the sides of a partition) and ``unknown address``
    (sent to an address no node has). ``dropped(address)`` is what a node's receiver
    refused, by reason."""

    def __init__(self, seed: int = 0, latency: float = 0.0, jitter: float = 0.0,
                 loss: float = 0.0, duplicate: float = 0.0, secret: bytes | None = None,
                 report: Any = None) -> None:
        self.clock = SimClock()
        self.random = random.Random(seed)
        self.default = Link(latency, jitter, loss, duplicate)
        self.links: dict[tuple[Any, Any], Link] = {}
        self.secret = secret
        self.nodes: dict[Any, _Node] = {}
        self.stats: Counter[str] = Counter()
        self._groups: list[frozenset] | None = None
        self._flight: list[tuple[float, int, Any, bytes]] = []  # (due, seq, to, packet)
        self._sequence = 0
        self._report_to = report
        self.reports: list[tuple[Any, StepReport]] = []

    # -- set-up ------------------------------------------------------------------------

    def handlers(self) -> list[Handler]:
        """The handlers of one node: the ``periodic`` timers and this network's transport
        (in place of the loopback)."""
        return [periodic.install, _Node(self)]

    def _join(self, node: _Node) -> None:
        address = node.engine.address
        if address in self.nodes:
            raise ValueError(f"two nodes with address {address!r}")
        if node.engine.clock is not self.clock:  # type: ignore[attr-defined]
            raise ValueError("a node of a SimNetwork runs on its clock: Engine(..., "
                             "clock=network.clock)")
        self.nodes[address] = node

    def _report(self, text: str) -> None:
        if self._report_to is not None:
            self._report_to(text)

    def engine(self, address: Any) -> Any:
        return self.nodes[address].engine

    def dropped(self, address: Any) -> Counter[str]:
        return self.nodes[address].receiver.dropped

    # -- faults, changeable between runs ----------------------------------------------

    def link(self, source: Any, target: Any, *, both: bool = True, **settings: Any) -> None:
        """Change the link from ``source`` to ``target`` (and back, with ``both``):
        ``latency``, ``jitter``, ``loss``, ``duplicate`` as in Link; the rest as before."""
        pairs = [(source, target), (target, source)] if both else [(source, target)]
        for pair in pairs:
            self.links[pair] = replace(self.links.get(pair, self.default), **settings)

    def partition(self, *groups: Iterable[Any]) -> None:
        """Cut the network into ``groups`` of addresses: packets between two groups are
        dropped, those in flight included (a node in no group is cut off from all)."""
        self._groups = [frozenset(group) for group in groups]

    def heal(self) -> None:
        self._groups = None

    def _cut(self, source: Any, target: Any) -> bool:
        if self._groups is None:
            return False
        return not any(source in group and target in group for group in self._groups)

    # -- running ----------------------------------------------------------------------

    def run(self, steps: int | None = None, until: float | None = None,
            ) -> list[tuple[Any, StepReport]]:
        """Run the nodes until every node is idle and no packet is in flight, each node
        has run ``steps`` steps, or the clock would pass ``until``. Returns (address,
        report) for each step, in the order they ran."""
        reports: list[tuple[Any, StepReport]] = []
        nodes = list(self.nodes.values())
        while True:
            self._arrive()
            moved = False
            for node in nodes:
                engine = node.engine
                if steps is not None and engine.step_count >= steps:
                    continue
                if not engine.idle:  # type: ignore[attr-defined]
                    report = engine.step()  # type: ignore[attr-defined]
                    reports.append((engine.address, report))
                    moved = True
            if moved:
                continue
            times = [node.engine.next_time() for node in nodes  # type: ignore[attr-defined]
                     if steps is None or node.engine.step_count < steps]
            if self._flight:
                times.append(self._flight[0][0])
            upcoming = min((t for t in times if t is not None), default=None)
            if upcoming is None or (until is not None and upcoming > until):
                break
            self.clock.wait(upcoming)
        self.reports += reports
        return reports

    def _flush(self, node: _Node) -> None:
        source = node.engine.address
        say = lambda text: self._report(f"overlog: {source}: {text}")  # noqa: E731
        for address, fit, too_large in node.batches(MAX_PACKET, self.secret, say):
            if too_large:
                self.stats["oversized"] += too_large
            for packet in wire.packets(source, fit, MAX_PACKET, self.secret):
                self._send(source, address, packet)

    def _send(self, source: Any, target: Any, packet: bytes) -> None:
        self.stats["sent"] += 1
        link = self.links.get((source, target), self.default)
        draw = self.random.random
        if link.loss and draw() < link.loss:
            self.stats["lost"] += 1
            return
        copies = 1
        if link.duplicate and draw() < link.duplicate:
            copies = 2
            self.stats["duplicated"] += 1
        for _ in range(copies):
            delay = link.latency + (draw() * link.jitter if link.jitter else 0.0)
            # (in whole nanoseconds: 1.0 + 0.1 + 0.1 is 1.2, as a user reads the times)
            due = round(self.clock.now() + delay, 9)
            self._sequence += 1
            heapq.heappush(self._flight, (due, self._sequence, (source, target), packet))

    def _arrive(self) -> None:
        now = self.clock.now()
        while self._flight and self._flight[0][0] <= now:
            _, _, (source, target), packet = heapq.heappop(self._flight)
            node = self.nodes.get(target)
            if node is None:
                self.stats["unknown address"] += 1
            elif self._cut(source, target):
                self.stats["partitioned"] += 1
            else:
                self.stats["delivered"] += 1
                node.receiver.take(packet, str(source))
