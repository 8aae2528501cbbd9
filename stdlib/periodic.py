"""``periodic[@N, E, Period, Count]``: the built-in timer, as a listener that re-generates its
own event (the P2 event proposal's sketch). Each distinct (Period, Count) read by the program
is one timer at the local node; each firing carries a fresh id E (1, 2, 3, ...). Rows always
have four fields; the three-argument form reads the first three (Count = infinity).

A timer keeps its schedule: firing k is due at start + k * Period, and the next firing is
scheduled when the engine has seen this one, as an event of a step or, when that step failed
and quarantined it, as the ``error`` event that carries it."""

from __future__ import annotations

import itertools

from overlog.runtime.events import EventAPI
from overlog.values import internal_row

RELATION = "periodic"
ERROR = "error"  # error[Step, Relation, Row, Message]


def install(engine: EventAPI) -> None:
    """Schedule each timer's first firing and re-arm it after each one."""
    schedule = engine.plan.timers
    if not schedule:
        return
    ids = itertools.count(1)
    fired: dict[tuple, int] = {}  # (Period, Count) as values -> firings seen
    due: dict[int, float] = {}  # firing id -> when it was due (until it is seen)

    def fire(timer: tuple[float, float], when: float) -> None:
        period, count = timer
        firing = next(ids)
        due[firing] = when
        engine.generate_event(RELATION, (engine.address, firing, period, count), when=when)

    def rearm(event: tuple) -> None:
        timer = (event[2], event[3])
        when = due.pop(event[1], None)
        key = internal_row(timer)  # periods 1 and 1.0 are two timers
        if event[0] != engine.address or key not in fired or when is None:
            return
        fired[key] += 1
        if fired[key] < timer[1]:
            fire(timer, when + timer[0])

    def rearm_quarantined(error: tuple) -> None:
        _, relation, row, _ = error
        if relation == RELATION:
            rearm(row)

    for timer in schedule:
        fired[internal_row(timer)] = 0
        fire(timer, engine.now + timer[0])
    engine.register_listener(RELATION, None, rearm)
    engine.register_listener(ERROR, None, rearm_quarantined)

