"""What every transport shares (docs/distribution.md): a ``send`` listener for each relation
and operation a program sends, handing each outbound tuple to the transport; and the
receiving side, where packets are checked and their tuples delivered, and what is refused
is counted by reason and reported, never raised."""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from overlog.runtime.events import EventAPI
from overlog.stdlib import wire

# how many refusals of one reason are reported before the rest are only counted
REPORTED = 10


def sent(engine: EventAPI) -> list[tuple[str, int | None, tuple[str | None, ...]]]:
    """What a program sends: each relation a remote rule writes or a fact places, with its
    location field and the operations its send listeners take."""
    plan = engine.plan
    names = {rule.head for rule in plan.rules if rule.remote}
    names |= {fact.relation for fact in plan.facts if fact.location is not None}
    out = []
    for name in sorted(names):
        rel = plan.relations[name]
        ops = (None,) if rel.event else ("insert", "delete", "retract")
        out.append((name, rel.location, ops))
    return out


class Support:
    """Which senders support each row a node received into a table (design.md 3.7): an
    insert adds its sender, a retraction (the sender no longer derives the row) takes it
    away, and the row is deleted when no sender is left; a delete deletes it whatever
    supports it. A row that leaves the table otherwise (a delete, key replacement,
    expiry) is forgotten. Thread-safe: a transport's thread and the step's both use it."""

    def __init__(self, engine: EventAPI) -> None:
        self.engine = engine
        self.senders: dict[tuple[str, tuple], set[Any]] = {}
        self._lock = threading.Lock()
        for name, rel in engine.plan.relations.items():
            if rel.location is not None and not rel.event and not rel.builtin:
                engine.register_listener(name, None, self._forgetter(name), op="delete")

    def _forgetter(self, relation: str) -> Callable[[tuple], None]:
        def forget(row: tuple) -> None:
            with self._lock:
                self.senders.pop((relation, row), None)
        return forget

    def take(self, sender: Any, op: str, relation: str, row: tuple) -> None:
        """Deliver one tuple from ``sender`` (validated already)."""
        if op == "event":
            self.engine.deliver(relation, row)
            return
        key = (relation, row)
        with self._lock:
            if op == "insert":
                self.senders.setdefault(key, set()).add(sender)
            elif op == "retract":
                senders = self.senders.get(key)
                if senders is None or sender not in senders:
                    return  # not supported by it (a duplicate, or never received)
                senders.discard(sender)
                if senders:
                    return
                del self.senders[key]
            else:
                self.senders.pop(key, None)
        self.engine.deliver(relation, row, "insert" if op == "insert" else "delete")


class Transport:
    """A handler: installed on an engine, it takes the engine's outbound tuples. A tuple
    for the engine's own address is delivered back at once (an input of its next step);
    one for another address goes to ``ship(address, op, relation, row)``."""

    engine: EventAPI

    def __call__(self, engine: EventAPI) -> None:
        self.engine = engine
        self.support = Support(engine)
        for relation, location, ops in sent(engine):
            for op in ops:
                engine.register_listener(relation, None,
                                         self._carrier(relation, location, op),
                                         phase="send", op=op)

    def _carrier(self, relation: str, location: int | None,
                 op: str | None) -> Callable[[tuple], None]:
        engine = self.engine
        kind = op or "event"

        def carry(row: tuple) -> None:
            address = row[location] if location is not None else None
            if address == engine.address:
                self.support.take(address, kind, relation, row)
            else:
                self.ship(address, kind, relation, row)
        return carry

    def ship(self, address: Any, op: str, relation: str, row: tuple) -> None:
        raise NotImplementedError


class Receiver:
    """Takes packets for one engine: ``take(data)`` decodes one, checks each tuple and
    hands it to ``support``. A tuple is taken only for a relation of the engine's program
    with a location field or a ``materialize`` declaration (one it can be sent), with the
    right operation (an event for an event relation; insert, delete or retract for a
    table) and arity, addressed to this engine (when the relation has a location field).
    Refusals are counted in ``dropped`` by reason, whole packets (malformed, version,
    unauthenticated, oversized) or single tuples (unknown relation, operation, arity,
    misaddressed), and the first ``REPORTED`` of each reason are reported through
    ``report`` (stderr by default); ``received`` counts the tuples taken."""

    def __init__(self, engine: EventAPI, support: Support, secret: bytes | None = None,
                 max_size: int = 1 << 24,
                 report: Callable[[str], None] | None = None) -> None:
        self.engine = engine
        self.support = support
        self.secret = secret
        self.max_size = max_size
        self.report = report or (lambda text: print(text, file=sys.stderr))
        self.dropped: Counter[str] = Counter()
        self.received = 0
        self.accepts = {name: rel for name, rel in engine.plan.relations.items()
                        if (rel.location is not None or rel.declared) and not rel.builtin}

    def take(self, data: bytes, source: str = "") -> None:
        where = f" from {source}" if source else ""
        if len(data) > self.max_size:
            self._drop("oversized", f"a packet{where} of {len(data):,} bytes (at most "
                       f"{self.max_size:,})")
            return
        try:
            packet = wire.decode(data, self.secret)
        except wire.WireError as error:
            self._drop(error.reason, f"a packet{where}: {error}")
            return
        engine = self.engine
        for op, relation, row in packet.messages:
            rel = self.accepts.get(relation)
            problem = None
            if rel is None:
                reason, problem = "unknown relation", f"no relation `{relation}` it receives"
            elif (op == "event") != rel.event:
                kind = "event relation" if rel.event else "table"
                reason, problem = "operation", f"{op} of {kind} `{relation}`"
            elif len(row) != rel.arity:
                reason, problem = "arity", (f"`{relation}` with {len(row)} fields, not "
                                            f"{rel.arity}")
            elif rel.location is not None and row[rel.location] != engine.address:
                reason, problem = "misaddressed", (f"`{relation}` addressed to "
                                                   f"{row[rel.location]!r}")
            if problem is not None:
                self._drop(reason, f"a tuple from {packet.sender!r}: {problem}")
                continue
            self.support.take(packet.sender, op, relation, row)
            self.received += 1

    def _drop(self, reason: str, text: str) -> None:
        self.dropped[reason] += 1
        count = self.dropped[reason]
        if count <= REPORTED:
            more = " (further ones are counted, not reported)" if count == REPORTED else ""
            self.report(f"overlog: {self.engine.address}: dropped {text}{more}")
