"""Soft state: a table's lifetime (tuples expire L seconds after their last insertion or
refresh) and size cap (the oldest tuples beyond S are evicted).

Each soft table keeps the time each asserted tuple was last stamped and a heap ordered by
stamp; a heap entry is valid while it is the tuple's latest (a tuple stamped twice at one time
is counted once). Changes are journaled, so a rolled-back step leaves the stamps as they were:
a stamp put back gets an entry of its own (those of the failed attempt, or that it took off
the heap, are never valid again).
"""

from __future__ import annotations

import heapq
import itertools
import math

from overlog.runtime.backend import Row, Store


class SoftState:
    def __init__(self, store: Store, lifetime: float, size: float) -> None:
        self.store = store
        self.lifetime = lifetime
        self.size = size
        # each stamped tuple: its stamp, and the place in line of its valid heap entry
        self.stamps: dict[Row, tuple[float, int]] = {}
        self.heap: list[tuple[float, int, Row]] = []
        self.seq = itertools.count()

    def _set(self, row: Row, stamp: float | None) -> None:
        if stamp is None:
            self.stamps.pop(row, None)
        else:
            seq = next(self.seq)
            self.stamps[row] = (stamp, seq)
            heapq.heappush(self.heap, (stamp, seq, row))

    def _journal(self, row: Row) -> None:
        """A rollback puts ``row``'s stamp back as it is now (with an entry of its own)."""
        old = self.stamps.get(row)
        self.store.on_rollback(lambda stamp: self._set(row, stamp),
                               None if old is None else old[0])

    def stamp(self, row: Row, now: float) -> None:
        """``row`` was inserted or refreshed at ``now``."""
        self._journal(row)
        self._set(row, now)

    def forget(self, row: Row) -> None:
        if row in self.stamps:
            self._journal(row)
            self._set(row, None)

    def _oldest(self) -> tuple[float, Row] | None:
        while self.heap:
            stamp, seq, row = self.heap[0]
            if self.stamps.get(row, (None, None))[1] == seq:
                return stamp, row
            heapq.heappop(self.heap)  # stale: stamped again, or deleted, since
        return None

    def next_expiry(self) -> float | None:
        if self.lifetime == math.inf:
            return None
        oldest = self._oldest()
        return None if oldest is None else oldest[0] + self.lifetime

    def expired(self, now: float) -> list[Row]:
        """Take the asserted tuples whose lifetime has run out at ``now`` (oldest first)."""
        rows: list[Row] = []
        while self.lifetime != math.inf:
            oldest = self._oldest()
            if oldest is None or oldest[0] + self.lifetime > now:
                break
            heapq.heappop(self.heap)
            rows.append(oldest[1])
        return rows

    def over_cap(self) -> list[Row]:
        """Take the oldest asserted tuples beyond the size cap."""
        rows: list[Row] = []
        while len(self.stamps) - len(rows) > self.size:
            oldest = self._oldest()
            if oldest is None:
                break
            heapq.heappop(self.heap)
            rows.append(oldest[1])
        return rows
