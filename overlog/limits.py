"""Limits on the shape of programs, and the recursion room their deepest allowed terms need.

Terms (expressions, lists, function calls) may nest at most ``MAX_NESTING`` deep; a deeper
one is refused where it starts (E106). Within the limit, the passes that walk terms
recursively (analysis, planning, printing, code generation) run inside ``recursion_room()``,
which lifts Python's recursion limit for their duration: recursion in pure Python does not
grow the C stack, and each level of nesting costs a few frames.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

MAX_NESTING = 1000
_ROOM = 20 * MAX_NESTING  # frames: a few per level of nesting, with a wide margin
_lock = threading.Lock()


class _RecursionRoom:
    """Python's recursion limit raised to at least what ``MAX_NESTING`` needs while any room
    is open (in any thread), then put back as it was. (A class, not a generator: a step
    opens one, and steps can be a few microseconds.)"""

    __slots__ = ("active", "before")

    def __init__(self) -> None:
        self.active = 0  # rooms open, in any thread
        self.before = 0  # the limit before the first of them

    def __enter__(self) -> None:
        with _lock:
            if self.active == 0:
                self.before = sys.getrecursionlimit()
                if self.before < _ROOM:
                    sys.setrecursionlimit(_ROOM)
            self.active += 1

    def __exit__(self, *exc: object) -> None:
        with _lock:
            self.active -= 1
            if self.active == 0 and self.before < _ROOM == sys.getrecursionlimit():
                sys.setrecursionlimit(self.before)


_ROOM_MANAGER = _RecursionRoom()


def recursion_room() -> _RecursionRoom:
    """``with recursion_room():`` lifts Python's recursion limit for the block."""
    return _ROOM_MANAGER


# Integer literals may have at most this many digits (E106). Python refuses to convert
# integers of more than 4,300 digits to and from text by default (conversion is quadratic):
# within this limit, overlog converts them anyway, so that big values print.
MAX_INT_DIGITS = 100_000


def _unlimited_digits(convert):
    def call(value):
        limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
        if not limit:
            return convert(value)
        try:
            return convert(value)
        except ValueError:  # past the limit: lift it for this one conversion
            with _lock:
                sys.set_int_max_str_digits(0)
                try:
                    return convert(value)
                finally:
                    sys.set_int_max_str_digits(limit)
    return call


@contextmanager
def unlimited_int_digits() -> Iterator[None]:
    """Integers of any number of digits convert to and from text (for output in bulk, such
    as JSON, where each conversion cannot be wrapped)."""
    if not hasattr(sys, "set_int_max_str_digits"):
        yield
        return
    with _lock:
        limit = sys.get_int_max_str_digits()
        sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        with _lock:
            sys.set_int_max_str_digits(limit)


int_from_text = _unlimited_digits(int)
"""``int(text)`` for integers of any number of digits."""

int_text = _unlimited_digits(str)
"""``str(n)`` for integers of any number of digits."""
