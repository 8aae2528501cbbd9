"""The event API's plumbing: the timed input queue and the listener registry."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


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
    if pattern is None:
        return True
    return len(pattern) == len(row) and all(
        p is ANY or p == v for p, v in zip(pattern, row, strict=True))


@dataclass(frozen=True, slots=True)
class Listener:
    relation: str
    pattern: tuple | None
    callback: Callable[[tuple], Any]
    phase: str  # "pre" | "post"
    op: str | None  # "insert" | "delete" | None (both) for persistent relations


class EventQueue:
    """Events waiting for their time, in time order and then in the order queued."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, str, tuple]] = []
        self._seq = itertools.count()

    def push(self, when: float, relation: str, row: tuple) -> None:
        heapq.heappush(self._heap, (when, next(self._seq), relation, row))

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
