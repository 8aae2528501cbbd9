"""Clocks: what time it is, and how to wait for a time (design.md 3.5).

The engine reads ``now()`` at each step and, when idle, ``wait(until)`` for its next timed
input. ``wake()`` (safe from any thread) ends a wait early: a transport that delivers a tuple
calls it through ``Engine.deliver``.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the engine started."""

    def wait(self, until: float | None) -> None:
        """Return at time ``until`` (never, for None), or earlier when woken."""

    def wake(self) -> None:
        """End a wait now. Safe to call from another thread."""


class SimClock:
    """Virtual time: waiting jumps to the time waited for. Deterministic and instant."""

    def __init__(self, start: float = 0.0) -> None:
        self.time = start

    def now(self) -> float:
        return self.time

    def wait(self, until: float | None) -> None:
        if until is not None:
            self.time = max(self.time, until)

    def wake(self) -> None:
        pass


class RealClock:
    """Wall-clock time since creation (monotonic); a wait sleeps, and a wake ends it. One
    clock serves one engine (a wake is consumed by the wait it ends)."""

    def __init__(self) -> None:
        self._start = time.monotonic()
        self._woken = threading.Event()

    def now(self) -> float:
        return time.monotonic() - self._start

    def wait(self, until: float | None) -> None:
        timeout = None if until is None else max(0.0, until - self.now())
        self._woken.wait(timeout)
        self._woken.clear()

    def wake(self) -> None:
        self._woken.set()


def make_clock(clock: str | Clock) -> Clock:
    if isinstance(clock, str):
        if clock == "sim":
            return SimClock()
        if clock == "real":
            return RealClock()
        raise ValueError(f"clock must be 'sim', 'real' or a Clock, not {clock!r}")
    return clock
