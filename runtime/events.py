"""The event API's plumbing: the timed input queue, the inbox of delivered tuples, the
listener registry, and the protocol that native handlers (``overlog.stdlib``) program against.

The event API is the engine's only door to the outside (design.md 3.6): listeners see what
a step did (``post``), its input events (``pre``) and the tuples it sends (``send``);
``generate_event``, ``insert`` and ``delete`` queue inputs from the engine's own thread;
``deliver`` takes tuples from anywhere, another thread included (a transport).
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from overlog.values import same

if TYPE_CHECKING:
    from overlog.plan import ProgramPlan


class _Any:
    """Matches any value in a listener pattern."""

    _instance = None

    def __new__(cls) -> _Any:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ANY"


ANY = _Any()


def matches(pattern: tuple | None, row: tuple) -> bool:
    """Whether a row (of plain Python values) matches a listener's pattern: each field ANY or
    the same value (same type: ``1`` does not match ``1.0`` or ``True``)."""
    if pattern is None:
        return True
    return len(pattern) == len(row) and all(
        p is ANY or same(p, v) for p, v in zip(pattern, row, strict=True))


@dataclass(frozen=True, slots=True)
class Listener:
    relation: str
    pattern: tuple | None
    callback: Callable[[tuple], Any]
    phase: str  # "pre" | "post" | "send"
    op: str | None  # "insert" | "delete" | None (both) for persistent relations


class EventQueue:
    """Events waiting for their time, in time order and then in the order queued."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, str, tuple]] = []
        self._seq = 1  # the next event's place in line (pushed to the front: negated)

    def push(self, when: float, relation: str, row: tuple) -> None:
        seq = self._seq
        self._seq = seq + 1
        heapq.heappush(self._heap, (when, seq, relation, row))

    def push_front(self, when: float, relation: str, row: tuple) -> None:
        """Queue an event ahead of every other one due at ``when`` (an event handed back)."""
        seq = self._seq
        self._seq = seq + 1
        heapq.heappush(self._heap, (when, -seq, relation, row))

    def mark(self) -> int:
        """Where the queue is now, for ``forget_since``."""
        return self._seq

    def forget_since(self, mark: int) -> None:
        """Take out the events ``push`` queued since ``mark`` (by a step attempt rolled
        back)."""
        if self._seq == mark:  # (none)
            return
        kept = [entry for entry in self._heap if entry[1] < mark]
        if len(kept) < len(self._heap):
            heapq.heapify(kept)
            self._heap = kept

    def pop_due(self, now: float) -> list[tuple[str, tuple]]:
        due = []
        while self._heap and self._heap[0][0] <= now:
            _, _, relation, row = heapq.heappop(self._heap)
            due.append((relation, row))
        return due

    def next_time(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def __len__(self) -> int:
        return len(self._heap)


@dataclass(frozen=True, slots=True)
class Outbound:
    """A tuple this node sends: ``op`` is "event" for an event relation, "insert" or
    "delete" for a persistent one, or "retract" (a remote view no longer derives the row);
    ``address`` is the row's location field."""

    address: Any
    relation: str
    op: str
    row: tuple


class Inbox:
    """Delivered tuples waiting for the next step, in arrival order; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # what waits: one list for the inbox's life, so that its truth (anything waiting?)
        # can be read without a call or the lock (a step checks it several times)
        self.items: list[tuple[str, str, tuple]] = []

    def put(self, kind: str, relation: str, row: tuple) -> None:
        with self._lock:
            self.items.append((kind, relation, row))

    def put_many(self, items: list[tuple[str, str, tuple]]) -> None:
        with self._lock:
            self.items += items

    def take(self) -> list[tuple[str, str, tuple]]:
        with self._lock:
            items = self.items[:]
            self.items.clear()
        return items

    def __len__(self) -> int:
        return len(self.items)


class EventAPI(Protocol):
    """What a native handler may use of an engine."""

    address: str
    plan: ProgramPlan

    @property
    def now(self) -> float: ...

    def register_listener(self, relation: str, pattern: tuple | None = None,
                          callback: Callable[[tuple], Any] | None = None, *,
                          phase: str = "post", op: str | None = None) -> None: ...

    def generate_event(self, relation: str, row: tuple, when: float | None = None) -> None: ...

    def deliver(self, relation: str, row: tuple, op: str | None = None) -> None: ...

    def deliver_many(self, items: Iterable[tuple[str, tuple, str | None]]) -> None: ...

    def on_sent(self, hook: Callable[[], None]) -> None: ...


Handler = Callable[[EventAPI], None]  # installs listeners on an engine
