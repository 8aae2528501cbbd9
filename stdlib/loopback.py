"""The default transport: tuples a node sends to its own address come back to it (inputs of
a later step); tuples for other addresses have nowhere to go and are counted as
undeliverable. The network transports (``sim``, ``udp``, ``tcp``) replace it."""

from __future__ import annotations

from collections import Counter
from typing import Any

from overlog.stdlib.transport import Transport


class Loopback(Transport):
    """A handler: ``Loopback()(engine)`` installs it; ``undeliverable`` counts what it could
    not deliver, and ``addresses`` how many tuples for each address."""

    def __init__(self) -> None:
        self.undeliverable = 0
        self.addresses: Counter = Counter()

    def ship(self, address: Any, op: str, relation: str, row: tuple) -> None:
        self.undeliverable += 1
        self.addresses[address] += 1
