"""Built-in functions and arithmetic with Overlog semantics.

Lists are Python tuples. Integer division and remainder of two ints stay integral and
truncate toward zero (P2); dividing by zero raises ZeroDivisionError, reported as a runtime
error of the step.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

from overlog.printer import format_value


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def divide(a: Any, b: Any) -> Any:
    if b == 0:
        raise ZeroDivisionError("division by zero")
    if _is_int(a) and _is_int(b):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    return a / b


def remainder(a: Any, b: Any) -> Any:
    if b == 0:
        raise ZeroDivisionError("division by zero (remainder)")
    if _is_int(a) and _is_int(b):
        return a - b * divide(a, b)
    return math.fmod(a, b)


def tostr(value: Any) -> str:
    return value if isinstance(value, str) else format_value(value)


def _list(name: str, value: Any) -> tuple:
    if not isinstance(value, tuple):
        raise TypeError(f"{name} expects a list, got {format_value(value)}")
    return value


def _nonempty(name: str, value: Any) -> tuple:
    items = _list(name, value)
    if not items:
        raise ValueError(f"{name} of an empty list")
    return items


def f_concat(*args: Any) -> Any:
    if all(isinstance(a, tuple) for a in args):
        return tuple(x for a in args for x in a)
    return "".join(tostr(a) for a in args)


def f_size(value: Any) -> int:
    if isinstance(value, (str, tuple)):
        return len(value)
    raise TypeError(f"f_size expects a list or a string, got {format_value(value)}")


def make_functions(now: Callable[[], float], rng: random.Random) -> dict[str, Callable]:
    """The built-in function table of one engine (f_now and f_rand read its clock and seed)."""
    return {
        "f_now": now,
        "f_rand": rng.random,
        "f_concat": f_concat,
        "f_size": f_size,
        "f_tostr": tostr,
        "f_min": min,
        "f_max": max,
        "f_cons": lambda x, items: (x, *_list("f_cons", items)),
        "f_append": lambda items, x: (*_list("f_append", items), x),
        "f_member": lambda items, x: x in _list("f_member", items),
        "f_car": lambda items: _nonempty("f_car", items)[0],
        "f_cdr": lambda items: _nonempty("f_cdr", items)[1:],
        "f_last": lambda items: _nonempty("f_last", items)[-1],
    }


def aggregate(func: str, values: list[Any]) -> Any:
    """An aggregate over the bag of a group's bindings (``values`` holds the argument of each
    binding; ``None`` for ``count<*>``)."""
    if func == "count":
        return len(values)
    if func == "sum":
        return sum(values)
    if func == "min":
        return min(values)
    if func == "max":
        return max(values)
    if func == "avg":
        return sum(values) / len(values)
    raise ValueError(f"unknown aggregate {func}")
