"""``periodic[@N, E, Period, Count]``: the built-in timer, as a listener that re-generates its
own event (the P2 event proposal's sketch). Each distinct (Period, Count) read by the program
is one timer at the local node; each firing carries a fresh id E (1, 2, 3, ...). Rows always
have four fields; the three-argument form reads the first three (Count = infinity)."""

from __future__ import annotations

import itertools

from overlog.runtime.events import EventAPI

RELATION = "periodic"


def install(engine: EventAPI) -> None:
    """Schedule each timer's first firing and re-arm it after each one."""
    schedule = engine.plan.timers
    if not schedule:
        return
    ids = itertools.count(1)
    fired: dict[tuple[float, float], int] = {}

    def fire(timer: tuple[float, float]) -> None:
        period, count = timer
        engine.generate_event(RELATION, (engine.address, next(ids), period, count),
                              when=engine.now + period)

    def rearm(event: tuple) -> None:
        timer = (event[2], event[3])
        if event[0] != engine.address or timer not in fired:
            return
        fired[timer] += 1
        if fired[timer] < timer[1]:
            fire(timer)

    for timer in schedule:
        fired[timer] = 0
        fire(timer)
    engine.register_listener(RELATION, None, rearm)
