"""Lists on Spark (runtime/spark.py): a list is a binary value, one encoding per list, so
that Spark's equality of the bytes is Overlog's equality of the lists (a join, a set
difference, a group); and the list functions Spark's workers run on them as Python UDFs,
with the local meaning (runtime/builtins.py). Workers import this module (as they do
runtime/sparkudf.py): no pyspark at import.

The encoding: ``n`` null, ``t``/``f`` a boolean, ``i<digits>;`` an int, ``d`` and 8 bytes
a float, ``s<n>:`` and n bytes of UTF-8 a string, ``l<n>:`` and n items a list. Values it
cannot give back as they are (-0.0, a lone surrogate, lists nested past ``DEPTH``) raise
ValueError."""

import math
import struct

from overlog.values import FALSE, TRUE, Bool, IntFloat, internal, number

_DOUBLE = struct.Struct(">d")
DEPTH = 100  # lists nested deeper (lists in lists ...) stay local


def encode(items: tuple) -> bytes:
    out = bytearray()
    _put(out, items, 0)
    return bytes(out)


def _put(out: bytearray, value, depth: int) -> None:
    kind = value.__class__
    if value is None:
        out += b"n"
    elif kind is Bool:
        out += b"t" if value.truth else b"f"
    elif kind is int:
        out += b"i%d;" % value
    elif kind is float or kind is IntFloat:
        if not value and math.copysign(1, value) < 0:
            raise ValueError("-0.0 in a list")
        out += b"d" + _DOUBLE.pack(value)
    elif kind is str:
        data = value.encode("utf-8")  # (a lone surrogate: UnicodeEncodeError, a ValueError)
        out += b"s%d:" % len(data) + data
    elif kind is tuple:
        if depth == DEPTH:
            raise ValueError(f"lists nested more than {DEPTH} deep")
        out += b"l%d:" % len(value)
        for item in value:
            _put(out, item, depth + 1)
    else:
        raise ValueError(f"not an Overlog value: {kind.__name__}")


def decode(data: bytes) -> tuple:
    value, end = _get(data, 0)
    assert end == len(data)
    return value


def _get(data: bytes, at: int):
    tag = data[at:at + 1]
    if tag == b"n":
        return None, at + 1
    if tag == b"t":
        return TRUE, at + 1
    if tag == b"f":
        return FALSE, at + 1
    if tag == b"i":
        end = data.index(b";", at)
        return int(data[at + 1:end]), end + 1
    if tag == b"d":
        return number(_DOUBLE.unpack_from(data, at + 1)[0]), at + 9
    end = data.index(b":", at)
    size = int(data[at + 1:end])
    if tag == b"s":
        return data[end + 1:end + 1 + size].decode("utf-8"), end + 1 + size
    items = []
    at = end + 1
    for _ in range(size):
        item, at = _get(data, at)
        items.append(item)
    return tuple(items), at


def value(arg):
    """An argument a Python UDF gets from Spark as an engine value (only lists are
    binary)."""
    if arg.__class__ in (bytes, bytearray):
        return decode(bytes(arg))
    return internal(arg)


def result(found, kind: str):
    """An engine value as a Python UDF of Spark type ``kind`` returns it; TypeError for
    one of another type (the stratum then runs locally, which reports what it must)."""
    if found is None:
        return None
    expected = {"binary": tuple, "boolean": Bool, "bigint": int, "string": str}[kind]
    if found.__class__ is not expected or (
            kind == "bigint" and not -(2**63) <= found < 2**63):
        raise TypeError(f"a {kind} was expected, not {found!r}")
    if kind == "binary":
        return encode(found)
    return found.truth if kind == "boolean" else found


def udf(function: str, kind: str):
    """The Python function Spark's workers run for a list function (``MAKE``: a list of
    its arguments) of result type ``kind``."""
    from overlog.runtime.builtins import make_functions, tostr

    if function == MAKE:
        def make(*args):
            return result(tuple(map(value, args)), kind)
        return make
    fn = tostr if function == TOSTR else make_functions(lambda: 0.0, None)[function]  # type: ignore[arg-type]

    def call(*args):
        return result(fn(*map(value, args)), kind)
    return call


MAKE = "list"  # [X, Y, ...]
TOSTR = "tostr"  # a value as Overlog writes it (f_tostr of a float or a list)
# list functions and their Spark result types (f_size and f_concat: of lists)
FUNCTIONS = {"f_cons": "binary", "f_append": "binary", "f_cdr": "binary",
             "f_member": "boolean", "f_size": "bigint", "f_concat": "binary"}
