"""Limits on the shape of programs, and the recursion room their deepest allowed terms need.

Terms (expressions, lists, function calls) may nest at most ``MAX_NESTING`` deep; a deeper
one is refused where it starts (E105). Within the limit, the passes that walk terms
recursively (analysis, planning, printing, code generation) run inside ``recursion_room()``,
which lifts Python's recursion limit for their duration: each level of nesting costs a few
frames, well within the C stack.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

MAX_NESTING = 1000
# a step's limits (runtime/seminaive.py, Limits): past them it is stopped and rolled back
MAX_TUPLES = 25_000_000  # new tuples in one step (some GB of memory): more takes --max-tuples
MAX_ROUNDS = 1_000_000  # semi-naive rounds of one stratum in one step
_ROOM = 20 * MAX_NESTING  # frames: a few per level of nesting, with a wide margin
_lock = threading.Lock()


class _Lift:
    """A process-wide setting lifted to ``value`` while any holder is inside (in any thread),
    then put back as it was, unless someone else changed it meanwhile. A class, not a
    generator: a step opens one, and a step can take a few microseconds."""

    __slots__ = ("active", "before", "get", "lifted", "lifts", "put", "value")

    def __init__(self, get: Callable[[], int], put: Callable[[int], None], value: int,
                 lifts: Callable[[int], bool]) -> None:
        self.get, self.put, self.value, self.lifts = get, put, value, lifts
        self.active = 0  # holders inside, in any thread
        self.before = 0  # the setting before the first of them
        self.lifted = False  # whether the first of them lifted it

    def __enter__(self) -> None:
        with _lock:
            if self.active == 0:
                self.before = self.get()
                self.lifted = self.lifts(self.before)
                if self.lifted:
                    self.put(self.value)
            self.active += 1

    def __exit__(self, *exc: object) -> None:
        with _lock:
            self.active -= 1
            if self.active == 0 and self.lifted and self.get() == self.value:
                self.put(self.before)


_RECURSION = _Lift(sys.getrecursionlimit, sys.setrecursionlimit, _ROOM,
                   lambda limit: limit < _ROOM)


def recursion_room() -> _Lift:
    """``with recursion_room():`` lifts Python's recursion limit for the block."""
    return _RECURSION


# Integer literals may have at most this many digits (E106). Python refuses to convert
# integers of more than 4,300 digits to and from text by default (conversion is quadratic):
# within this limit, overlog converts them anyway, so that big values print.
MAX_INT_DIGITS = 100_000

_DIGITS = _Lift(getattr(sys, "get_int_max_str_digits", lambda: 0),
                getattr(sys, "set_int_max_str_digits", lambda limit: None), 0,
                lambda limit: limit != 0)


def unlimited_int_digits() -> _Lift:
    """``with unlimited_int_digits():`` integers of any number of digits convert to and
    from text (for output in bulk, such as JSON, where each conversion cannot be wrapped)."""
    return _DIGITS


def _unlimited_digits(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def call(value: Any) -> Any:
        try:
            return convert(value)
        except ValueError:  # past Python's limit: lift it for this one conversion
            with _DIGITS:
                return convert(value)
    return call


int_from_text = _unlimited_digits(int)
"""``int(text)`` for integers of any number of digits."""

int_text = _unlimited_digits(str)
"""``str(n)`` for integers of any number of digits."""
