"""What a step did (``StepReport``), and rows sorted in the total order of values
(``overlog.values``) as users see them."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable, Set
from dataclasses import dataclass, field
from operator import itemgetter

from overlog.errors import OverlogError
from overlog.limits import recursion_room
from overlog.printer import format_tuple
from overlog.runtime.events import Outbound
from overlog.values import python_row, sort_key

Row = tuple


@dataclass(slots=True)
class StepReport:
    """What a step did: its events and net table changes (relation -> sorted rows), the
    tuples it sent, and the errors reported. Rows are sorted when first read, so an unread
    report costs nothing."""

    step: int
    time: float
    errors: list[OverlogError] = field(default_factory=list)
    firings: dict[str, int] = field(default_factory=dict)  # rule label -> new tuples derived
    sent: list[Outbound] = field(default_factory=list)  # in the order the rules sent them
    # relations held in Spark or DuckDB (docs/spark.md, docs/vector.md): rows added and
    # removed, not the rows
    held: dict[str, tuple[int, int]] = field(default_factory=dict)
    # kind -> relation -> the rows, as disjoint sets (merged and sorted only when read)
    _raw: dict[str, dict[str, list[Set[Row]]]] = field(default_factory=lambda: {
        "events": {}, "inserted": {}, "deleted": {}}, repr=False)
    _sorted: dict[tuple[str, str], list[Row]] = field(default_factory=dict, repr=False)

    def rows(self, kind: str, relation: str) -> list[Row]:
        """Sorted rows of ``relation`` for ``kind`` ("events", "inserted" or "deleted")."""
        found = self._sorted.get((kind, relation))
        if found is None:
            parts = self._raw[kind].get(relation)
            if not parts:
                return []
            found = sorted_rows(itertools.chain.from_iterable(parts))
            self._sorted[(kind, relation)] = found
        return found

    def counts(self, kind: str) -> dict[str, int]:
        """How many rows of each relation the step has for ``kind``, without sorting."""
        return {name: sum(map(len, parts)) for name, parts in self._raw[kind].items()}

    def _all(self, kind: str) -> dict[str, list[Row]]:
        return {name: self.rows(kind, name) for name in self._raw[kind]}

    @property
    def events(self) -> dict[str, list[Row]]:
        return self._all("events")

    @property
    def inserted(self) -> dict[str, list[Row]]:
        return self._all("inserted")

    @property
    def deleted(self) -> dict[str, list[Row]]:
        return self._all("deleted")

    def _repr_html_(self) -> str:
        """Jupyter's view: the step's errors, events and changes as tables."""
        sections = [(name, kind, count, self.rows(kind, name)[:HTML_ROWS])
                    for kind in ("events", "inserted", "deleted")
                    for name, count in sorted(self.counts(kind).items())]
        return html_tables(f"step {self.step}, time {self.time:g}", sections,
                           [str(error) for error in self.errors])


HTML_ROWS = 20  # rows of a relation an HTML view shows


def first_rows(rows: Collection[Row], count: int) -> list[Row]:
    """``count`` rows to show, sorted: the first in the total order of values, or of a
    relation past 10,000 rows, any (finding the first would cost a pass over them all)."""
    import heapq

    if len(rows) > 10_000:
        return sorted_rows(itertools.islice(rows, count))
    return sorted_rows(heapq.nsmallest(count, rows, key=lambda row: tuple(map(sort_key,
                                                                                row))))


def html_tables(title: str, sections: list[tuple[str, str, int, list[Row]]],
                errors: Iterable[str] = ()) -> str:
    """An HTML view (Jupyter's ``_repr_html_``): a title, errors, and a table per
    (relation, what, how many rows, the rows shown) section."""
    from html import escape

    from overlog.printer import format_value

    parts = [f"<div class='overlog'><p><b>{escape(title)}</b></p>"]
    parts += [f"<pre style='color: #b00'>{escape(error)}</pre>" for error in errors]
    for name, what, count, rows in sections:
        caption = f"{name} ({what}, {count:,} row{'s' if count != 1 else ''})"
        parts.append(f"<table><caption style='text-align: left'>{escape(caption)}</caption>")
        parts += ["<tr>" + "".join(f"<td>{escape(format_value(v))}</td>" for v in row)
                  + "</tr>" for row in rows]
        if count > len(rows):
            parts.append(f"<tr><td>... {count - len(rows):,} more</td></tr>")
        parts.append("</table>")
    parts.append("</div>")
    return "\n".join(parts)


def sorted_rows(rows: Iterable[Row]) -> list[Row]:
    """Rows in the total order of values, as the plain Python values users see."""
    rows = list(rows)  # an iterator would be spent by a first, failed attempt
    if not rows:
        return rows
    if len(rows) == 1 and _PLAIN.issuperset(map(type, rows[0])):  # (an event's)
        return rows
    width = len(rows[0])
    kinds = set(map(type, itertools.chain.from_iterable(rows)))  # (one pass over the rows)
    if kinds <= _PLAIN and (len(kinds) == 1 or all(
            len(set(map(type, map(itemgetter(i), rows)))) == 1 for i in range(width))):
        # each column of one plain type (the common case): sorted column by column, last
        # first (stable), comparing bare values, not tuples (several times faster)
        for i in reversed(range(width)):
            rows.sort(key=itemgetter(i))
        return rows
    with recursion_room():  # comparing and converting values that nest MAX_NESTING deep
        try:
            rows.sort()  # same-typed columns: the common, fast case
        except TypeError:
            rows.sort(key=lambda row: tuple(sort_key(v) for v in row))
        return [python_row(row) for row in rows]


_PLAIN = frozenset({int, str, float})  # compare among themselves, as Python sees them


def sorted_tuples(relation: str, rows: Iterable[Row]) -> list[str]:
    return [format_tuple(relation, row) for row in sorted_rows(rows)]
