"""Built-in functions and arithmetic with Overlog semantics (docs/language.md, "Values").

Values are in the engine's representation (``overlog.values``). Arithmetic takes numbers
(``+`` also joins two strings); an int and a float give a float; integer division and
remainder of two ints stay integral and truncate toward zero (P2). A type mismatch, a result
that is not a number (``infinity - infinity``) or a division by zero raises, and the step
reports it (E301, E302). The plan code does int-with-int arithmetic inline and calls these
for everything else.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from overlog.printer import format_value
from overlog.values import (
    FALSE,
    NUMBERS,
    TRUE,
    IntFloat,
    RingId,
    comparison_error,
    number,
    sort_key,
    type_fault,
    type_name,
)


class ValueFault(ArithmeticError):
    """An expression applied to values it does not take; the message is the whole report."""


def _result(value: Any, op: str, a: Any, b: Any) -> Any:
    if value.__class__ is not float:
        return value
    if value != value:
        raise ValueFault(f"{format_value(a)} {op} {format_value(b)} is not a number")
    return number(value)


def _numbers(a: Any, b: Any, verb: str) -> None:
    if a.__class__ not in NUMBERS or b.__class__ not in NUMBERS:
        raise ValueFault(verb.format(type_name(a), type_name(b)))


def add(a: Any, b: Any) -> Any:
    if a.__class__ is str and b.__class__ is str:
        return a + b
    _numbers(a, b, "cannot add {} and {}")
    return _result(a + b, "+", a, b)


def subtract(a: Any, b: Any) -> Any:
    _numbers(a, b, "cannot subtract {1} from {0}")
    return _result(a - b, "-", a, b)


def multiply(a: Any, b: Any) -> Any:
    _numbers(a, b, "cannot multiply {} by {}")
    return _result(a * b, "*", a, b)


def negate(a: Any) -> Any:
    if a.__class__ not in NUMBERS:
        raise ValueFault(f"cannot negate {type_name(a)}")
    if a.__class__ is RingId:
        return RingId(-int(a))
    return -a if a.__class__ is not IntFloat else IntFloat(-a)


def divide(a: Any, b: Any) -> Any:
    _numbers(a, b, "cannot divide {} by {}")
    if not b:
        raise ZeroDivisionError("division by zero")
    if a.__class__ is int and b.__class__ is int:
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    return _result(a / b, "/", a, b)


def remainder(a: Any, b: Any) -> Any:
    _numbers(a, b, "cannot take the remainder of {} by {}")
    if not b:
        raise ZeroDivisionError("division by zero (remainder)")
    if a.__class__ is int and b.__class__ is int:
        return a - b * divide(a, b)
    if math.isinf(a):
        raise ValueFault(f"{format_value(a)} % {format_value(b)} is not a number")
    return _result(math.fmod(a, b), "%", a, b)


def _shift_operands(a: Any, b: Any, op: str) -> None:
    if a.__class__ is not int or b.__class__ is not int:
        raise ValueFault(f"cannot shift {type_name(a)} by {type_name(b)} (`{op}` takes ints)")
    if b < 0:
        raise ValueFault(f"negative shift count {b}")


def shift_left(a: Any, b: Any) -> Any:
    _shift_operands(a, b, "<<")
    if b > 65536:
        raise ValueFault(f"shift count {b} is too large (the limit is 65536)")
    return a << b


def shift_right(a: Any, b: Any) -> Any:
    _shift_operands(a, b, ">>")
    return a >> b


def _on_the_ring(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``op`` where an operand is one of P2's identifiers (``RingId``) and the other an int
    or one too: the result taken around the ring (modulo 2^160), an identifier."""
    def ring(a: Any, b: Any) -> Any:
        if (a.__class__ is RingId or b.__class__ is RingId) and \
                a.__class__ in _INTS and b.__class__ in _INTS:
            return RingId(op(int(a), int(b)))
        return op(a, b)
    ring.__name__ = op.__name__
    return ring


_INTS = frozenset({int, RingId})

ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    op: _on_the_ring(fn) for op, fn in (
        ("+", add), ("-", subtract), ("*", multiply), ("/", divide), ("%", remainder),
        ("<<", shift_left), (">>", shift_right))}


# -- booleans ----------------------------------------------------------------------------------

def truth(value: Any, op: str) -> bool:
    """A boolean operand's truth; anything else is refused (``op`` names the operator)."""
    if value is TRUE:
        return True
    if value is FALSE:
        return False
    raise ValueFault(f"`{op}` takes booleans, not {type_name(value)} {format_value(value)}")


def _ordered(compare: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
    def ordered(a: Any, b: Any) -> Any:
        try:
            return TRUE if compare(a, b) else FALSE
        except TypeError:
            raise ValueFault(f"cannot compare {type_name(a)} with {type_name(b)}") from None
    return ordered


COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "==": lambda a, b: TRUE if a == b else FALSE,
    "!=": lambda a, b: TRUE if a != b else FALSE,
    "<": _ordered(lambda a, b: a < b), "<=": _ordered(lambda a, b: a <= b),
    ">": _ordered(lambda a, b: a > b), ">=": _ordered(lambda a, b: a >= b)}


def in_range(value: Any, low: Any, high: Any, ends: str) -> Any:
    """Whether ``value`` lies in the interval from ``low`` to ``high`` with the given
    ``ends`` (``()``, ``(]``, ``[)`` or ``[]``: which ends are closed). When ``low`` is not
    below ``high`` the interval wraps around, as on P2's identifier ring: ``(a, b]`` is
    then ``value > a or value <= b``, so ``(a, a]`` is the whole ring and ``(a, a)`` all
    of it but ``a``."""
    try:
        above = value >= low if ends[0] == "[" else value > low
        below = value <= high if ends[1] == "]" else value < high
        wraps = not low < high
    except TypeError:
        kinds = sorted({type_name(value), type_name(low), type_name(high)})
        raise ValueFault(f"cannot compare {' with '.join(kinds)} (in an interval)") from None
    if wraps and low == high and ends == "[]":
        return TRUE if value == low else FALSE  # [a, a]: just a
    return TRUE if (above or below if wraps else above and below) else FALSE


def evaluate_test(op: str, args: tuple, evaluate: Callable[[Any], Any]) -> Any:
    """A ``Test`` expression's value (``overlog.plan.Test``), its operands evaluated by
    ``evaluate`` as they are needed."""
    if op == "&&":
        return TRUE if truth(evaluate(args[0]), op) and truth(evaluate(args[1]), op) \
            else FALSE
    if op == "||":
        return TRUE if truth(evaluate(args[0]), op) or truth(evaluate(args[1]), op) \
            else FALSE
    if op == "!":
        return FALSE if truth(evaluate(args[0]), op) else TRUE
    values = [evaluate(a) for a in args]
    if op in COMPARE:
        return COMPARE[op](*values)
    if op == "type":
        return typed(*values)
    return in_range(*values, op[2:])


def typed(value: Any, kind: str, field: str) -> Any:
    """TRUE if ``value`` is of key type ``kind``; else the rule fails, naming ``field``."""
    fault = type_fault(value, kind)
    if fault is not None:
        raise ValueFault(f"field {field} {fault}")
    return TRUE


def tostr(value: Any) -> str:
    return value if isinstance(value, str) else format_value(value)


def _refused(name: str, wanted: str, *values: Any) -> ValueFault:
    """The error of a function given values it does not take, in the engine's words:
    "f_upper takes a string, not int 3"."""
    given = " and ".join(f"{type_name(v)} {format_value(v)}" for v in values)
    return ValueFault(f"{name} takes {wanted}, not {given}")


def _list(name: str, value: Any) -> tuple:
    if value.__class__ is not tuple:
        raise _refused(name, "a list", value)
    return value


def _nonempty(name: str, value: Any) -> tuple:
    items = _list(name, value)
    if not items:
        raise ValueFault(f"{name} of an empty list")
    return items


def _string(name: str, value: Any) -> str:
    if value.__class__ is not str:
        raise _refused(name, "a string", value)
    return value


def _int(name: str, value: Any, what: str = "an int") -> int:
    if value.__class__ not in _INTS:
        raise _refused(name, what, value)
    return int(value)


def _finite(name: str, value: Any) -> Any:
    """A number that is not infinite (the argument of a function giving an int)."""
    if value.__class__ not in NUMBERS:
        raise _refused(name, "a number", value)
    if value.__class__ is not int and value.__class__ is not RingId and math.isinf(value):
        raise ValueFault(f"{name} of {format_value(value)} is not an int")
    return value


def f_concat(*args: Any) -> Any:
    if all(isinstance(a, tuple) for a in args):
        return tuple(x for a in args for x in a)
    return "".join(tostr(a) for a in args)


def f_size(value: Any) -> int:
    if value.__class__ is str or value.__class__ is tuple:
        return len(value)
    raise _refused("f_size", "a list or a string", value)


# -- numbers -----------------------------------------------------------------------------------

POW_BITS = 65536  # the largest int f_pow makes, in bits (as for `<<`)


def f_abs(value: Any) -> Any:
    if value.__class__ not in NUMBERS:
        raise _refused("f_abs", "a number", value)
    if value.__class__ is RingId:
        return value
    return abs(value) if value.__class__ is int else number(abs(value))


def f_pow(base: Any, exponent: Any) -> Any:
    """``base`` to the power ``exponent``: an int for ints with an exponent >= 0, else a
    float (an overflow is an infinity, as for ``*``)."""
    if base.__class__ not in NUMBERS or exponent.__class__ not in NUMBERS:
        raise _refused("f_pow", "numbers", base, exponent)
    if base.__class__ in _INTS and exponent.__class__ in _INTS and exponent >= 0:
        base, exponent = int(base), int(exponent)
        if abs(base) > 1 and exponent * math.log2(abs(base)) >= POW_BITS:
            raise ValueFault(f"f_pow({base}, {exponent}) is too large (the limit is "
                             f"{POW_BITS} bits)")
        return base**exponent
    if not base and exponent < 0:
        raise ZeroDivisionError("division by zero (0 to a negative power)")
    a, b = _as_float(base), _as_float(exponent)  # (an int past the floats: infinite)
    try:
        return _result(math.pow(a, b), "^", base, exponent)
    except ValueError:  # a negative base to a fraction
        raise ValueFault(f"f_pow({format_value(base)}, {format_value(exponent)}) is not a "
                         "number") from None
    except OverflowError:
        odd = b.is_integer() and b % 2 == 1
        return number(-math.inf if a < 0 and odd else math.inf)


def _as_float(value: Any) -> float:
    """A number as a float; an int past the largest float as an infinity of its sign."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def f_sqrt(value: Any) -> Any:
    if value.__class__ not in NUMBERS:
        raise _refused("f_sqrt", "a number", value)
    if value < 0:
        raise ValueFault(f"f_sqrt of a negative number ({format_value(value)})")
    if value.__class__ in _INTS and value.bit_length() > 1000:  # past the floats
        return number(_as_float(math.isqrt(value)))
    return number(math.sqrt(value))


def _decimal_round(value: Any, digits: int) -> Any:
    import decimal

    places = decimal.Decimal(1).scaleb(-digits)
    context = decimal.Context(prec=800, rounding=decimal.ROUND_HALF_UP)
    return decimal.Decimal(value).quantize(places, context=context)


def f_round(value: Any, digits: Any = None) -> Any:
    """The nearest int (halves away from zero); with ``digits``, rounded to that many
    decimal places (left of the point when negative), of the type of ``value``."""
    if digits is None:
        value = _finite("f_round", value)
        return value if value.__class__ in _INTS else int(_decimal_round(value, 0))
    if value.__class__ not in NUMBERS:
        raise _refused("f_round", "a number", value)
    places = _int("f_round", digits, "an int number of digits")
    if value.__class__ in _INTS:  # (in ints: exact at any size)
        if places >= 0:
            return value
        unit = 10 ** min(-places, len(str(abs(int(value)))) + 1)
        rounded = (abs(int(value)) + unit // 2) // unit * unit
        return rounded if value >= 0 else -rounded
    if math.isinf(value) or places > 340:  # (past any digit a float has that matters)
        return value
    return number(float(_decimal_round(value, max(places, -400))))


def f_floor(value: Any) -> int:
    value = _finite("f_floor", value)
    return int(value) if value.__class__ in _INTS else math.floor(value)


def f_ceil(value: Any) -> int:
    value = _finite("f_ceil", value)
    return int(value) if value.__class__ in _INTS else math.ceil(value)


_INT_TEXT = re.compile(r"\s*[+-]?[0-9]+\s*")
_FLOAT_TEXT = re.compile(r"\s*[+-]?([0-9]+\.?[0-9]*([eE][+-]?[0-9]+)?|\.[0-9]+([eE][+-]?[0-9]+)?"
                         r"|inf|infinity)\s*", re.IGNORECASE)


def f_toint(value: Any) -> int:
    """A number truncated toward zero, or the int a string writes (decimal digits)."""
    if value.__class__ is str:
        if not _INT_TEXT.fullmatch(value):
            raise ValueFault(f"f_toint: {format_value(value)} is not an int")
        return int(value)
    value = _finite("f_toint", value)
    return int(value)


def f_tofloat(value: Any) -> Any:
    """A number as a float, or the float a string writes."""
    if value.__class__ is str:
        if not _FLOAT_TEXT.fullmatch(value):
            raise ValueFault(f"f_tofloat: {format_value(value)} is not a number")
        return number(float(value))
    if value.__class__ not in NUMBERS:
        raise _refused("f_tofloat", "a number or a string", value)
    try:
        return number(float(value))
    except OverflowError:
        raise ValueFault(f"f_tofloat: {format_value(value)} is too large for a float") \
            from None


# -- strings -----------------------------------------------------------------------------------

def f_strlen(value: Any) -> int:
    return len(_string("f_strlen", value))


def f_substr(text: Any, start: Any, length: Any = None) -> str:
    """The part of ``text`` from position ``start`` (0-based), ``length`` characters long
    (to the end without it; cut short by the end)."""
    text = _string("f_substr", text)
    first = _int("f_substr", start, "an int start")
    if first < 0:
        raise ValueFault(f"f_substr: the start must be 0 or more, not {first}")
    if length is None:
        return text[first:]
    count = _int("f_substr", length, "an int length")
    if count < 0:
        raise ValueFault(f"f_substr: the length must be 0 or more, not {count}")
    return text[first:first + count]


def f_split(text: Any, separator: Any) -> tuple:
    text, separator = _string("f_split", text), _string("f_split", separator)
    if not separator:
        raise ValueFault("f_split: the separator is empty")
    return tuple(text.split(separator))


def f_join(items: Any, separator: Any) -> str:
    """The text of a list's items (each as f_tostr writes it) with ``separator`` between."""
    return _string("f_join", separator).join(tostr(x) for x in _list("f_join", items))


_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{\}|[{}]")


def f_format(template: Any, *values: Any) -> str:
    """``template`` with each ``{}`` replaced by the next value's text (as f_tostr writes
    it); ``{{`` and ``}}`` stand for braces. Only ``{}``: no fields, no format specs."""
    template = _string("f_format", template)
    found = [m.group() for m in _PLACEHOLDER.finditer(template)]
    holes = found.count("{}")
    if "{" in found or "}" in found:
        raise ValueFault("f_format: a lone brace in the format (write {} for a value, {{ "
                         "and }} for braces)")
    if holes != len(values):
        raise ValueFault(f"f_format: the format has {holes} placeholder"
                         f"{'s' if holes != 1 else ''} for {len(values)} value"
                         f"{'s' if len(values) != 1 else ''}")
    given = iter(values)
    return _PLACEHOLDER.sub(
        lambda m: tostr(next(given)) if m.group() == "{}" else m.group()[0], template)


def make_functions(now: Callable[[], float], rng: random.Random,
                   dialect: str = "canonical") -> dict[str, Callable]:
    """The built-in function table of one engine (f_now and f_rand read its clock and seed)
    in a dialect (overlog/functions.py says which functions each has)."""
    table = _canonical_functions(now, rng)
    if dialect == "p2":
        table.update(p2_functions(rng))
    return table


def _member(name: str) -> Callable[[Any, Any], int]:
    def member(items: Any, x: Any) -> int:
        return 1 if x in _list(name, items) else 0
    member.__annotations__ = {"return": int}  # (a Spark UDF can run it: runtime/spark.py)
    return member


def _strfind(needle: Any, haystack: Any) -> int:
    """The 0-based position of ``needle`` in ``haystack``; -1 where it is not."""
    if needle.__class__ is not str or haystack.__class__ is not str:
        raise ValueFault(f"f_strfind takes two strings, not {type_name(needle)} and "
                         f"{type_name(haystack)}")
    return haystack.find(needle)


def _sha1(value: Any) -> RingId:
    import hashlib

    return RingId(int.from_bytes(hashlib.sha1(tostr(value).encode("utf-8")).digest(), "big"))


def _append(*args: Any) -> tuple:
    if len(args) == 1:  # P2: a list of one item
        return (args[0],)
    items, x = args
    return (*_list("f_append", items), x)


def _type_of(value: Any) -> str:
    return type_name(value)


def p2_functions(rng: random.Random) -> dict[str, Callable]:
    """The P2 dialect's functions that the canonical table lacks or means otherwise."""
    def coin_flip(probability: Any) -> int:
        if probability.__class__ not in NUMBERS:
            raise ValueFault(f"f_coinFlip takes a probability, not {type_name(probability)}")
        return 1 if rng.random() < probability else 0

    def remove_last(items: Any) -> tuple:
        return _nonempty("f_removeLast", items)[:-1]

    rows = itertools.count(1)  # the ids of rows of tables without keys (P2's bags)

    return {
        "f_append": _append,
        "f_member": _member("f_member"),
        "f_contains": _member("f_contains"),
        "f_initlist": lambda *items: tuple(items),
        "f_removeLast": remove_last,
        "f_strfind": _strfind,
        "f_sha1": _sha1,
        "f_typeOf": _type_of,
        "f_coinFlip": coin_flip,
        "f_idgen": lambda: RingId(rng.getrandbits(160)),
        "f_rand": lambda: rng.randrange(2**31),
        "f_drand": lambda: number(rng.random()),
        "f_rowid": lambda: next(rows),
    }


def _canonical_functions(now: Callable[[], float], rng: random.Random) -> dict[str, Callable]:
    return {
        "f_now": lambda: number(float(now())),
        "f_rand": lambda: number(rng.random()),
        "f_concat": f_concat,
        "f_size": f_size,
        "f_tostr": tostr,
        "f_min": min,
        "f_max": max,
        "f_cons": lambda x, items: (x, *_list("f_cons", items)),
        "f_append": lambda items, x: (*_list("f_append", items), x),
        "f_member": lambda items, x: TRUE if x in _list("f_member", items) else FALSE,
        "f_car": lambda items: _nonempty("f_car", items)[0],
        "f_cdr": lambda items: _nonempty("f_cdr", items)[1:],
        "f_last": lambda items: _nonempty("f_last", items)[-1],
        "f_abs": f_abs,
        "f_pow": f_pow,
        "f_sqrt": f_sqrt,
        "f_round": f_round,
        "f_floor": f_floor,
        "f_ceil": f_ceil,
        "f_toint": f_toint,
        "f_tofloat": f_tofloat,
        "f_strlen": f_strlen,
        "f_substr": f_substr,
        "f_upper": lambda text: _string("f_upper", text).upper(),
        "f_lower": lambda text: _string("f_lower", text).lower(),
        "f_split": f_split,
        "f_join": f_join,
        "f_format": f_format,
    }


def aggregate(func: str, values: list[Any]) -> Any:
    """An aggregate over the bag of a group's bindings (``values`` holds the argument of each
    binding; ``None`` for ``count<*>``). ``sum`` and ``avg`` take numbers; ``min`` and
    ``max`` any values that compare."""
    if func == "count":
        return len(values)
    if func == "countdistinct":
        return len(set(values))
    if func == "set":
        return tuple(sorted(set(values), key=sort_key))
    if func == "list":
        return tuple(sorted(values, key=sort_key))
    if func.startswith(("topk:", "bottomk:")):  # topk<X, K>: the K greatest, greatest first
        name, k = func.split(":")
        try:
            ranked = sorted(values, reverse=name == "topk")
        except TypeError as error:
            raise ValueFault(comparison_error(str(error)) or str(error)) from None
        return tuple(ranked[:int(k)])
    if func == "min":
        return min(values)
    if func == "max":
        return max(values)
    if func not in ("sum", "avg"):
        raise ValueError(f"unknown aggregate {func}")
    ints = 0
    floats = []
    for value in values:
        if value.__class__ is int or value.__class__ is RingId:
            ints += int(value)
        elif value.__class__ in NUMBERS:
            floats.append(value)
        else:
            raise ValueFault(f"{func}<> of {type_name(value)} values")
    total = float_sum(floats, ints, len(floats) < len(values), func) if floats else ints
    if func == "avg":
        total /= len(values)
    return number(total) if total.__class__ is float else total


def float_sum(floats: list[float], ints: int, with_ints: bool, func: str = "sum") -> float:
    """The float nearest the sum of ``floats`` and (when ``with_ints``) of ``ints``, the
    exact sum of the ints taken as the nearest float, whatever the order of the terms (an
    overflow is an infinity); the sum of infinities of both signs is an error."""
    infinite = {value for value in floats if math.isinf(value)}
    if infinite:
        if len(infinite) > 1:
            raise ValueFault(f"the {func} of infinity and -infinity is not a number")
        return float(infinite.pop())
    try:
        return math.fsum([*floats, float(ints)] if with_ints else floats)
    except OverflowError:  # past the largest float, or ints past it
        exact = sum(map(Fraction, floats), Fraction(ints))
        try:
            return float(exact)
        except OverflowError:
            return math.inf if exact > 0 else -math.inf
