"""The value model (docs/language.md, "Values"): what an Overlog value is, in Python.

Overlog's values are ints, floats, strings, booleans, null and lists, and distinct types stay
distinct: `1`, `1.0` and `true` are three values, three rows of a table. Python conflates them
(``1 == 1.0 == True``, with one hash), so inside the engine two of them are represented by
types of their own:

- a boolean is ``TRUE`` or ``FALSE`` (a ``Bool``, not a number);
- a float with an integral value is an ``IntFloat`` (a ``float`` that is never equal to an
  int, and on a tie with one sorts first).

Every other value is the plain Python value (int, float, str, None; a list is a tuple). NaN
is not a value. ``internal`` turns a Python value into this representation (at every door
into the engine), ``python`` turns it back (at every door out), so users see plain Python
values whose types say what they were.
"""

from __future__ import annotations

import re
from typing import Any

from overlog.limits import MAX_NESTING, recursion_room


class Bool:
    """An Overlog boolean. Unlike Python's ``bool`` it is not a number: ``true`` and ``1``
    are different values. ``false < true``; compared with anything else it is a type error."""

    __slots__ = ("truth",)
    truth: bool

    def __init__(self, truth: bool) -> None:
        object.__setattr__(self, "truth", truth)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Overlog booleans are immutable")

    def __bool__(self) -> bool:
        return self.truth

    def __hash__(self) -> int:
        return 0x7472_7565 if self.truth else 0x6661_6C73

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __lt__(self, other: object) -> bool:
        if other.__class__ is Bool:
            return not self.truth and other.truth  # type: ignore[attr-defined]
        return NotImplemented

    def __le__(self, other: object) -> bool:
        if other.__class__ is Bool:
            return not self.truth or other.truth  # type: ignore[attr-defined]
        return NotImplemented

    def __gt__(self, other: object) -> bool:
        if other.__class__ is Bool:
            return self.truth and not other.truth  # type: ignore[attr-defined]
        return NotImplemented

    def __ge__(self, other: object) -> bool:
        if other.__class__ is Bool:
            return self.truth or not other.truth  # type: ignore[attr-defined]
        return NotImplemented

    def __repr__(self) -> str:
        return "true" if self.truth else "false"

    def __reduce__(self) -> tuple:
        return (boolean, (self.truth,))


TRUE = Bool(True)
FALSE = Bool(False)


def boolean(truth: object) -> Bool:
    return TRUE if truth else FALSE


class IntFloat(float):
    """A float whose value is integral (``2.0``). It is never equal to an int (``2.0`` and
    ``2`` are different values), and where it ties with one it sorts first (``2.0 < 2``),
    so that numbers have one total order consistent with equality."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ in _INTEGERS:
            return False
        return float.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        if other.__class__ in _INTEGERS:
            return True
        return float.__ne__(self, other)

    __hash__ = float.__hash__

    def __lt__(self, other: object) -> bool:
        if other.__class__ in _INTEGERS:
            return float.__le__(self, other)  # type: ignore[operator]
        return float.__lt__(self, other)  # type: ignore[operator]

    def __ge__(self, other: object) -> bool:
        if other.__class__ in _INTEGERS:
            return float.__gt__(self, other)  # type: ignore[operator]
        return float.__ge__(self, other)  # type: ignore[operator]

    __repr__ = float.__repr__


RING = 2**160  # the size of P2's identifier ring


class RingId(int):
    """P2's 160-bit identifier (``0x1fI``, ``f_sha1``): an int in [0, 2^160) whose
    arithmetic wraps around the ring (``runtime/builtins.py``). It is equal to the int of
    its value (the same row), writes as ``0x...I`` and leaves the engine as a plain int."""

    __slots__ = ()

    def __new__(cls, value: int) -> RingId:
        return int.__new__(cls, value % RING)

    def __repr__(self) -> str:
        return f"0x{int(self):x}I"

    __str__ = __repr__

    def __reduce__(self) -> tuple:
        return (RingId, (int(self),))


_INTEGERS = frozenset({int, RingId})
NUMBERS = frozenset({int, float, IntFloat, RingId})
_TO_CONVERT = frozenset({Bool, IntFloat, tuple, RingId})  # what python() changes
_AS_IS = frozenset({int, str, type(None), Bool, IntFloat, RingId})  # what internal() keeps


class NotAValue(TypeError):
    """A Python object that is not an Overlog value."""


def number(value: float) -> float:
    """A float result as a value: integral -> IntFloat; NaN is refused (ValueError)."""
    if value.is_integer():
        return IntFloat(value)
    if value != value:
        raise ValueError("NaN is not an Overlog value")
    return value


def internal(value: Any) -> Any:
    """A Python value in the engine's representation. Raises NotAValue (a TypeError) for an
    object that is no Overlog value, ValueError for NaN or for lists nested more than
    MAX_NESTING deep (as terms may be)."""
    kind = value.__class__
    if kind in _AS_IS:
        return value
    if kind is bool:  # (as ``_internal`` does, one call less: values coming back from
        return TRUE if value else FALSE  # DuckDB and Spark come here one by one)
    if kind is float:
        return number(value)
    try:  # (lists, and subclasses)
        return _internal(value, 0)
    except RecursionError:  # nested deeper than Python's limit allows: with room (it may
        with recursion_room():  # nest MAX_NESTING deep)
            return _internal(value, 0)


def _internal(value: Any, depth: int) -> Any:
    kind = value.__class__
    if kind in _AS_IS:
        return value
    if kind is bool:
        return TRUE if value else FALSE
    if kind is float:
        return number(value)
    if kind is tuple or kind is list:
        if depth == MAX_NESTING:
            raise ValueError(f"a list nested more than {MAX_NESTING:,} deep (the limit)")
        return tuple([_internal(v, depth + 1) for v in value])
    for base in (bool, int, float, str, tuple, list):  # subclasses, as their base
        if isinstance(value, base):
            return _internal(base(value), depth)
    raise NotAValue(f"not an Overlog value: {kind.__name__}")


def internal_row(row: tuple) -> tuple:
    """A row of Python values in the engine's representation (see ``internal``)."""
    for v in row:
        if v.__class__ not in _AS_IS:
            return tuple([internal(v) for v in row])
    return row if row.__class__ is tuple else tuple(row)


def python(value: Any) -> Any:
    """An engine value as the plain Python value users see."""
    kind = value.__class__
    if kind is Bool:
        return value.truth
    if kind is IntFloat:
        return float(value)
    if kind is tuple:
        return tuple(python(v) for v in value)
    if kind is RingId:
        return int(value)
    return value


def python_row(row: tuple) -> tuple:
    for v in row:
        if v.__class__ in _TO_CONVERT:
            return tuple(python(v) for v in row)
    return row


def same(a: Any, b: Any) -> bool:
    """Overlog's equality of two Python values: same type and value, lists item by item
    (``1``, ``1.0`` and ``True`` are three different values)."""
    if a.__class__ is not b.__class__:
        return False
    if a.__class__ is tuple:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


_TYPE_NAMES = {"int": "int", "RingId": "int", "float": "float", "IntFloat": "float",
               "str": "string", "Bool": "boolean", "bool": "boolean", "NoneType": "null",
               "tuple": "list", "list": "list"}


def type_name(value: Any) -> str:
    """The Overlog name of a value's type: int, float, string, boolean, null or list."""
    return _TYPE_NAMES.get(value.__class__.__name__, value.__class__.__name__)


_UNORDERED = re.compile(r"'[<>]=?' not supported between instances of '(\w+)' and '(\w+)'")


def comparison_error(message: str) -> str | None:
    """Python's message for an ordering of two values it cannot order, in Overlog's words
    (None if ``message`` is not one)."""
    found = _UNORDERED.fullmatch(message)
    if found is None:
        return None
    a, b = (_TYPE_NAMES.get(name, name) for name in found.groups())
    return f"cannot compare {a} with {b}"


def sort_key(value: Any) -> tuple:
    """A total order over all values, engine or Python (for deterministic output): null,
    booleans, numbers (by value; a float before an int it equals), strings, lists."""
    if value is None:
        return (0, 0)
    kind = value.__class__
    if kind is Bool or kind is bool:
        return (1, bool(value))
    if kind is int or kind is RingId:
        return (2, value, 1)
    if kind is float or kind is IntFloat:
        return (2, value, 0)
    if kind is str:
        return (3, value)
    if kind is tuple:
        return (4, tuple(sort_key(v) for v in value))
    return (5, repr(value))


# P2's and RapidNet's typed keys (``keys(2:str, 3:int32)``): each type name -> the Overlog
# type it admits and, for the sized ints, the range
KEY_TYPES: dict[str, tuple[str, tuple[int, int] | None]] = {
    "int": ("int", None), "int64": ("int", (-2**63, 2**63 - 1)), "long": ("int", None),
    "int32": ("int", (-2**31, 2**31 - 1)), "uint32": ("int", (0, 2**32 - 1)),
    "uint64": ("int", (0, 2**64 - 1)), "double": ("float", None), "float": ("float", None),
    "str": ("string", None), "string": ("string", None), "ipv4": ("string", None),
    "bool": ("boolean", None), "list": ("list", None),
}


def type_fault(value: Any, kind: str) -> str | None:
    """Why ``value`` (engine representation) is not of key type ``kind`` (None: it is)."""
    wanted, bounds = KEY_TYPES[kind]
    found = type_name(value)
    if found != wanted:
        return f"must be {kind}, not {found}"
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        return f"must be {kind}, and {value} is out of its range"
    return None
