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
    "f_abs": (1, 1),
    "f_pow": (2, 2),
    "f_sqrt": (1, 1),
    "f_round": (1, 2),
    "f_floor": (1, 1),
    "f_ceil": (1, 1),
    "f_toint": (1, 1),
    "f_tofloat": (1, 1),
    "f_strlen": (1, 1),
    "f_substr": (2, 3),
    "f_upper": (1, 1),
    "f_lower": (1, 1),
    "f_split": (2, 2),
    "f_join": (2, 2),
    "f_format": (1, math.inf),
}

# the P2 dialect's table (docs/dialects.md, "Built-in functions"): the canonical functions,
# P2's own, and those P2 gives another meaning (P2_MEANINGS: lists and randomness as P2 has
# them; its booleans are the ints 1 and 0)
P2_FUNCTIONS: dict[str, tuple[int, float]] = {
    **BUILTIN_FUNCTIONS,
    "f_append": (1, 2),
    "f_initlist": (0, math.inf),
    "f_removeLast": (1, 1),
    "f_contains": (2, 2),
    "f_strfind": (2, 2),
    "f_sha1": (1, 1),
    "f_typeOf": (1, 1),
    "f_coinFlip": (1, 1),
    "f_idgen": (0, 0),
    "f_drand": (0, 0),
    "f_rowid": (0, 0),
}
P2_MEANINGS = frozenset({"f_append", "f_member", "f_rand"})


def builtin_functions(dialect: str = "canonical") -> dict[str, tuple[int, float]]:
    """The built-in functions of a dialect, with their arities."""
    return P2_FUNCTIONS if dialect == "p2" else BUILTIN_FUNCTIONS


AGGREGATES = ("count", "sum", "min", "max", "avg", "countdistinct", "set", "list", "topk",
              "bottomk")
RANKED = ("topk", "bottomk")  # the aggregates that take a count: topk<X, K>


def describe_arity(fewest: int, most: float) -> str:
    if fewest == most:
        return f"{fewest} argument{'s' if fewest != 1 else ''}"
    if most == math.inf:
        return f"at least {fewest} argument{'s' if fewest != 1 else ''}"
    return f"{fewest} to {int(most)} arguments"
