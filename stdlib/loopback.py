"""The default transport: tuples a node sends to its own address come back to it through
``deliver`` (inputs of a later step); tuples for other addresses have nowhere to go and are
counted as undeliverable. Network transports replace it."""

from __future__ import annotations

from collections.abc import Callable

from overlog.runtime.events import EventAPI


class Loopback:
    """A handler: ``Loopback()(engine)`` installs it; ``undeliverable`` counts what it could
    not deliver."""

    def __init__(self) -> None:
        self.undeliverable = 0

    def __call__(self, engine: EventAPI) -> None:
        sent = {rule.head for rule in engine.plan.rules if rule.remote}
        sent |= {fact.relation for fact in engine.plan.facts if fact.location is not None}
        for relation in sorted(sent):
            rel = engine.plan.relations[relation]
            for op in (None,) if rel.event else ("insert", "delete"):
                engine.register_listener(relation, None,
                                         self._carrier(engine, relation, rel.location, op),
                                         phase="send", op=op)

    def _carrier(self, engine: EventAPI, relation: str, location: int | None,
                 op: str | None) -> Callable[[tuple], None]:
        def carry(row: tuple) -> None:
            if location is not None and row[location] == engine.address:
                engine.deliver(relation, row, op)
            else:
                self.undeliverable += 1
        return carry
