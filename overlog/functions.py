"""The built-in functions and aggregates the language knows, with their arities.

The implementations live in ``runtime/builtins.py``; this table is what the analysis checks
calls against (a test keeps the two in step).
"""

from __future__ import annotations

import math

# name -> (fewest, most) arguments
BUILTIN_FUNCTIONS: dict[str, tuple[int, float]] = {
    "f_now": (0, 0),
    "f_rand": (0, 0),
    "f_concat": (1, math.inf),
    "f_size": (1, 1),
    "f_tostr": (1, 1),
    "f_min": (2, 2),
    "f_max": (2, 2),
    "f_cons": (2, 2),
    "f_append": (2, 2),
    "f_member": (2, 2),
    "f_car": (1, 1),
    "f_cdr": (1, 1),
    "f_last": (1, 1),
}

AGGREGATES = ("count", "sum", "min", "max", "avg")


def describe_arity(fewest: int, most: float) -> str:
    if fewest == most:
        return f"{fewest} argument{'s' if fewest != 1 else ''}"
    if most == math.inf:
        return f"at least {fewest} argument{'s' if fewest != 1 else ''}"
    return f"{fewest} to {int(most)} arguments"
