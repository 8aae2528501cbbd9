"""``periodic[@N, E, Period, Count]``: the built-in timer, as a listener that re-generates its
own event (the P2 event proposal's sketch). Each distinct (Period, Count) read by the program
is one timer at the local node; each firing carries a fresh id E (1, 2, 3, ...). Rows always
have four fields; the three-argument form reads the first three (Count = infinity)."""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

from overlog import syntax as s

if TYPE_CHECKING:
    from runtime.engine import Engine

RELATION = "periodic"


def timers(program: s.Program) -> list[tuple[float, float]]:
    """(period, count) of every periodic atom in the program's rule bodies."""
    found: dict[tuple[float, float], None] = {}
    for rule in program.rules:
        for literal in rule.body:
            if isinstance(literal, s.Atom) and literal.name == RELATION:
                period = literal.args[2].value  # type: ignore[union-attr]
                count = literal.args[3].value if literal.arity == 4 else math.inf  # type: ignore
                found[(period, count)] = None
    return list(found)


def install(engine: Engine) -> None:
    """Schedule each timer's first firing and re-arm it after each one."""
    schedule = timers(engine.checked.program)
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
