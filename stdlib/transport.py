"""What every transport shares (docs/distribution.md): a ``send`` listener for each relation
and operation a program sends, handing each outbound tuple to the transport; and the
receiving side, where packets are checked and their tuples delivered, and what is refused
is counted by reason and reported, never raised."""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from overlog.limits import recursion_room
from overlog.runtime.events import EventAPI
from overlog.stdlib import wire
from overlog.values import internal_row

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


def accepted(engine: EventAPI) -> dict[str, Any]:
    """The relations a node takes from the network: those of its program with a location
    field or a ``materialize`` declaration (not built in)."""
    return {name: rel for name, rel in engine.plan.relations.items()
            if (rel.location is not None or rel.declared) and not rel.builtin}


class Support:
    """Which senders support each row a node received into a table (design.md 3.7): an
    insert adds its sender, a retraction (the sender no longer derives the row) takes it
    away, and the row is deleted when no sender is left; a delete deletes it whatever
    supports it. Rows are told apart as the engine tells them (``1``, ``1.0`` and
    ``true`` are three rows). A row that leaves the table otherwise (a delete, key
    replacement, expiry) is forgotten, unless an insert of it arrived during that step
    (it is applied at the next). Thread-safe: transports' threads and the step's use it;
    a tuple is delivered under the lock, so the order of deliveries is the order of
    these decisions."""

    def __init__(self, engine: EventAPI) -> None:
        self.engine = engine
        # (relation, row) -> (senders, the step during which the last insert arrived)
        self.senders: dict[tuple[str, tuple], tuple[set[Any], int]] = {}
        self._lock = threading.Lock()
        for name, rel in accepted(engine).items():
            if not rel.event:
                engine.register_listener(name, None, self._forgetter(name), op="delete")

    def _step(self) -> int:
        return getattr(self.engine, "step_count", 0)

    def _forgetter(self, relation: str) -> Callable[[tuple], None]:
        def forget(row: tuple) -> None:
            if not self.senders:  # (nothing received: nothing to forget)
                return
            with recursion_room():
                key = (relation, internal_row(row))
            with self._lock:
                found = self.senders.get(key)
                if found is not None and found[1] < self._step():
                    del self.senders[key]
        return forget

    def take(self, sender: Any, op: str, relation: str, row: tuple) -> None:
        """Deliver one tuple from ``sender`` (checked already by the receiver)."""
        self.take_many(sender, [(op, relation, row)])

    def take_many(self, sender: Any, messages: list[tuple[str, str, tuple]]) -> list:
        """Deliver (op, relation, row) tuples from ``sender``, checked already by the
        receiver, at once; returns (message, error) for each whose values the engine
        cannot take (they are not delivered)."""
        refused = []
        converted = []
        with recursion_room():  # values may nest MAX_NESTING deep
            for message in messages:
                try:
                    converted.append((message[0], message[1], internal_row(message[2])))
                except (TypeError, ValueError, RecursionError) as error:
                    refused.append((message, error))
            deliveries: list[tuple[str, tuple, str | None]] = []
            with self._lock:
                step = self._step()
                for op, relation, values in converted:
                    if op == "event":
                        deliveries.append((relation, values, None))
                        continue
                    key = (relation, values)
                    if op == "insert":
                        found = self.senders.get(key)
                        senders = found[0] if found is not None else set()
                        senders.add(sender)
                        self.senders[key] = (senders, step)
                    elif op == "retract":
                        found = self.senders.get(key)
                        if found is None or sender not in found[0]:
                            continue  # not supported by it (a duplicate, or never received)
                        found[0].discard(sender)
                        if found[0]:
                            continue
                        del self.senders[key]
                    else:
                        self.senders.pop(key, None)
                    deliveries.append((relation, values,
                                       "insert" if op == "insert" else "delete"))
                self.engine.deliver_many(deliveries)
        return refused


class Transport:
    """A handler: installed on an engine, it takes the engine's outbound tuples. A tuple
    for the engine's own address is delivered back at once (an input of its next step);
    one for another address goes to ``ship(address, op, relation, row)``, which by default
    encodes it into the step's batch for that address (``batches`` takes them)."""

    engine: EventAPI
    outgoing: dict[Any, list[bytes]]

    def __call__(self, engine: EventAPI) -> None:
        self.engine = engine
        self.outgoing = {}
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
        self.outgoing.setdefault(address, []).append(wire.encode_message(op, relation, row))

    def batches(self, max_size: int, secret: bytes | None,
                say: Callable[[str], None]) -> Iterator[tuple[Any, list[bytes], int]]:
        """Take the step's batches: (address, encoded tuples that fit in a packet of
        ``max_size`` bytes, how many did not), each address once; what did not fit is
        reported through ``say``."""
        outgoing, self.outgoing = self.outgoing, {}
        room = wire.room(str(self.engine.address), max_size, secret)
        for address, messages in outgoing.items():
            fit = [m for m in messages if len(m) <= room]
            if len(fit) < len(messages):
                say(f"not sent to {address}: {len(messages) - len(fit)} tuple(s) too large "
                    f"for a packet (more than {room:,} bytes encoded)")
            yield address, fit, len(messages) - len(fit)


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
        self.accepts = accepted(engine)
        self._lock = threading.Lock()  # several threads may receive (one per connection)

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
        taken: list[tuple[str, str, tuple]] = []
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
            taken.append((op, relation, row))
        refused = self.support.take_many(packet.sender, taken)
        for (_, relation, _), error in refused:
            self._drop("malformed", f"a tuple from {packet.sender!r}: `{relation}`: {error}")
        with self._lock:
            self.received += len(taken) - len(refused)

    def _drop(self, reason: str, text: str) -> None:
        with self._lock:
            self.dropped[reason] += 1
            count = self.dropped[reason]
        if count <= REPORTED:
            more = " (further ones are counted, not reported)" if count == REPORTED else ""
            self.report(f"overlog: {self.engine.address}: dropped {text}{more}")
