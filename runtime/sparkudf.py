"""Python functions that Spark's workers run for the Spark backend (runtime/spark.py): the
aggregates whose meaning plain Spark SQL does not have (pandas UDFs), and the wrapper of a
user function or built-in run as a Python UDF (``scalar``). Workers import this module, so
overlog must be installed where they run (as for any PySpark UDF; docs/spark.md).

Kept apart from runtime/spark.py, and without postponed annotations, because pandas UDFs
read their type hints at definition time."""

import math

import pandas as pd

from overlog.runtime.builtins import float_sum


def _numbers(values: pd.Series, func: str) -> pd.Series:
    if values.isna().any():  # NaN is no Overlog value: it is a null here
        raise ValueError(f"{func}<> of null")
    return values


def sum_of_floats(values: pd.Series) -> float:
    """``sum`` of a group's floats, as the local backend adds them (in any order)."""
    return float_sum(list(_numbers(values, "sum")), 0, False)


def avg_of_floats(values: pd.Series) -> float:
    return float_sum(list(_numbers(values, "avg")), 0, False, "avg") / len(values)


def avg_of_ints(values: pd.Series) -> float:
    """``avg`` of a group's ints: their exact sum divided once."""
    return sum(map(int, _numbers(values, "avg"))) / len(values)


def scalar(name: str, fn, kind: str):
    """A Python function of plain values as Spark's workers call it, its result checked
    against ``kind`` (its Spark type) as an Overlog value: a result the local backend
    would take otherwise (a value of another type, an int past 64 bits, -0.0, no value)
    raises, so the stratum runs locally, with the local meaning."""
    from overlog.values import internal, python

    expected = {"bigint": int, "double": float, "string": str, "boolean": bool}[kind]

    def call(*args):
        value = python(internal(fn(*args)))
        if value is None:
            return None
        odd = value.__class__ is not expected or (
            not -(2**63) <= value < 2**63 if kind == "bigint" else
            value == 0 and math.copysign(1.0, value) < 0 if kind == "double" else False)
        if odd:
            raise TypeError(f"{name}() gave {value!r}: not a {kind} Spark holds as it is")
        return value

    return call
