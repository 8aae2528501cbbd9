"""CSV files read by Spark (docs/csv.md has the format, overlog/csvio.py reads it in Python).

Spark reads each line whole; Spark SQL splits it into cells and types each cell as
overlog/csvio.py would, so that a relation held in Spark gets exactly the rows the Python
reader gives. What Spark cannot hold as typed columns, or what is not plainly one record a
line, is left to the Python reader (``read`` returns None), which also reports the errors
in a file with their lines: a column mixing types, a list, an int past 64 bits, -0.0, a
quoted cell spanning lines, a line of another number of cells, a byte-order mark, a NUL, a
file that is not UTF-8.
"""

from __future__ import annotations

import codecs
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

_CHUNK = 1 << 20

# a cell: quoted (`""` for a quote inside), or bare (not starting with a quote; empty too)
_CELL = '(?:"[^"]*+(?:""[^"]*+)*+"|[^,"][^,]*+|)'
# \z: Java's $ also matches before a last U+0085, U+2028 or U+2029, which Python's \Z does not
_LINE = f"^{_CELL}(?:,{_CELL})*+\\z"
_INT = "^[+-]?[0-9]+\\z"
_FLOAT = "^[+-]?([0-9]+[.][0-9]*|[.][0-9]+|[0-9]+)([eE][+-]?[0-9]+)?\\z"
# a line of nothing but spaces and control characters: Spark's CSV source skips it, Python
# reads it as a record
_WHITE_LINE = re.compile(rb"(?:^|[\r\n])[\x01-\x09\x0b\x0c\x0e-\x20]+(?=[\r\n])")
_GLOB = re.compile(r"[{}\[\]*?\\]")  # Spark takes these in a path as a pattern
_TYPE = {"i": "bigint", "f": "double", "s": "string", "b": "boolean"}


def lines(path: str, header: bool = False) -> int | None:
    """About the number of lines of a CSV file Spark may read as the Python reader does,
    found without holding it in memory; None for one it may not: a byte-order mark, a NUL
    byte, bytes that are not UTF-8, a line of only spaces or control characters, a header
    that is not one plain record on the first line, a path Spark would take as a pattern,
    a file that cannot be read. The Python reader takes those, and reports what is wrong."""
    if _GLOB.search(path):
        return None
    decoder = codecs.getincrementaldecoder("utf-8")()
    count, tail = 0, b"\n"  # the last line so far, from its line break
    try:
        with open(path, "rb") as file:
            first = file.read(_CHUNK)
            if first.startswith(codecs.BOM_UTF8) or (header and not _plain_header(first)):
                return None
            chunk = first
            while chunk:
                if b"\x00" in chunk:
                    return None
                decoder.decode(chunk)
                count += max(chunk.count(b"\n"), chunk.count(b"\r"))
                text = tail + chunk
                cut = max(text.rfind(b"\n"), text.rfind(b"\r"))
                if _WHITE_LINE.search(text, 0, cut + 1):
                    return None
                tail = text[cut:]
                chunk = file.read(_CHUNK)
        decoder.decode(b"", final=True)
    except (OSError, UnicodeDecodeError):
        return None
    if _WHITE_LINE.search(tail + b"\n"):
        return None
    return count + (tail not in (b"\n", b"\r"))  # the last line may have no line break


def _plain_header(start: bytes) -> bool:
    """Whether a file's first line is one record on its own, which Spark's CSV source
    drops as the header, as the Python reader drops its first record."""
    from overlog import csvio

    end = min((i for i in (start.find(b"\n"), start.find(b"\r")) if i >= 0), default=-1)
    if end <= 0:  # a blank first line, or none in the first chunk
        return False
    try:
        line = start[:end].decode("utf-8")
        records = list(csvio.parse_records(line))
    except (UnicodeDecodeError, ValueError):
        return False
    return len(records) == 1 and line.count('"') % 2 == 0


def read(spark: SparkSession, path: str, arity: int, header: bool,
         ) -> tuple[DataFrame, int] | None:
    """A CSV file's rows as a DataFrame (columns c0, c1, ... of Overlog's types) and their
    number, read by Spark; None if the Python reader must read it (see the module)."""
    from pyspark.sql import functions as F

    # one column a line: no separator, no quoting, nothing trimmed; blank lines skipped
    text = spark.read.csv(path, schema="line string", sep="\u0000", quote="", escape="",
                          header=header, mode="FAILFAST", ignoreLeadingWhiteSpace=False,
                          ignoreTrailingWhiteSpace=False, encoding="UTF-8")
    line = F.col("line")
    cells = (F.when(~line.contains('"'), F.split(line, ",", -1))
             .when(line.rlike(_LINE), F.regexp_extract_all(  # each match takes its comma
                 F.concat(F.lit(","), line), F.lit(f",({_CELL})"), F.lit(1))))
    split = text.select(cells.alias("cells")).select(
        (F.col("cells").isNull() | (F.size("cells") != arity)).alias("bad"),
        *(F.get("cells", i).alias(f"c{i}") for i in range(arity)))
    tags = [_tag(F.col(f"c{i}")) for i in range(arity)]
    found = split.agg(F.count(F.lit(1)), F.sum(F.col("bad").cast("int")),
                      *(F.collect_set(tag) for tag in tags)).first()
    count, bad, kinds = found[0], found[1], [set(k) - {"n"} for k in found[2:]]
    if bad or any(len(k) > 1 or not k <= set(_TYPE) for k in kinds):
        return None
    columns = [_value(F.col(f"c{i}"), _TYPE[k.pop()] if k else None).alias(f"c{i}")
               for i, k in enumerate(kinds)]
    return split.select(*columns), count


def _tag(cell: Column) -> Column:
    """The kind of a cell's value: i(nt), f(loat), s(tring), b(oolean), n(ull), or one
    Spark cannot hold as it is: L (an int past 64 bits), z (-0.0), l(ist)."""
    from pyspark.sql import functions as F

    return (F.when(cell.startswith('"'), "s")
            .when(cell.rlike(_INT), F.when(cell.try_cast("bigint").isNull()
                                           | (F.length(cell) > 20), "L").otherwise("i"))
            .when(cell.rlike(_FLOAT), F.when((cell.try_cast("double") == 0)
                                             & cell.startswith("-"), "z").otherwise("f"))
            .when(cell.isin("true", "false"), "b")
            .when(cell == "null", "n")
            .when(cell.isin("infinity", "-infinity"), "f")
            .when(cell.startswith("["), "l")
            .otherwise("s"))


def _value(cell: Column, kind: str | None) -> Column:
    """A cell as a value of the column's Spark type (None: a column of nulls only)."""
    from pyspark.sql import functions as F

    if kind is None:
        return F.lit(None)
    if kind == "string":
        unquoted = F.regexp_replace(F.regexp_extract(cell, '(?s)^"(.*)"\\z', 1), '""', '"')
        return (F.when(cell.startswith('"'), unquoted).when(cell == "null", F.lit(None))
                .otherwise(cell))
    value = (F.when(cell == "true", True).otherwise(False) if kind == "boolean" else
             F.when(cell == "infinity", float("inf")).when(cell == "-infinity", float("-inf"))
             .otherwise(cell.try_cast("double")) if kind == "double" else
             cell.try_cast("bigint"))
    return F.when(cell == "null", F.lit(None).cast(kind)).otherwise(value)
