"""The default threshold of ``--backend auto`` (runtime/memory.py): a quarter of the memory
this process may use, as rows of the local store. No Spark needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from overlog.runtime import memory

GIB = 1 << 30


@pytest.mark.parametrize(("available", "rows"), [
    (24 * GIB, 29_000_000),  # 6 GiB / 220 B = 29.28M rows
    (4 * GIB, 4_000_000),
    (512 << 20, 1_000_000),  # never under a million
    (None, 10_000_000),  # not known
])
def test_the_threshold_is_a_quarter_of_memory_in_rows(available: int | None, rows: int) -> None:
    assert memory.threshold_for(available) == rows


def test_a_container_limit_lowers_the_memory(tmp_path: Path) -> None:
    machine = memory.machine_memory(str(tmp_path))  # no cgroup files: the machine's
    assert machine is not None and machine > 0
    (tmp_path / "memory.max").write_text(f"{machine // 2}\n")
    assert memory.machine_memory(str(tmp_path)) == machine // 2
    (tmp_path / "memory.max").write_text("max\n")  # no limit
    assert memory.machine_memory(str(tmp_path)) == machine
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text(f"{3 * GIB}\n")
    assert memory.machine_memory(str(tmp_path)) == min(machine, 3 * GIB)
    (tmp_path / "memory.max").write_text(f"{machine * 2}\n")  # above the machine: no effect
    assert memory.machine_memory(str(tmp_path)) == min(machine, 3 * GIB)


def test_the_default_is_this_machines() -> None:
    assert memory.threshold_for(memory.machine_memory()) == memory.THRESHOLD


class _Offload:
    """An offload recording what Placement asks of it: it holds ``held``, and evaluates a
    stratum as ``answer`` says (None: declines)."""

    def __init__(self, name: str, held: dict[str, int], answer: object, log: list) -> None:
        self.name, self.held, self.answer, self.log = name, held, answer, log

    def evaluate(self, rules, store, max_rounds, plus, minus, cap):
        self.log.append((self.name, "evaluate"))
        return self.answer

    def forget(self, stratum, store) -> None:
        self.log.append((self.name, "forget"))
        self.held.clear()


@pytest.mark.parametrize(("spark_held", "vector_answer", "log"), [
    # DuckDB holds the head: Spark is not asked
    ({}, {"reach": "DuckDB's"}, [("DuckDB", "evaluate")]),
    # Spark holds a relation the stratum reads: the head comes back, Spark decides
    ({"link": 3}, None, [("DuckDB", "forget"), ("Spark", "evaluate"),
                         ("DuckDB", "forget")]),
    # DuckDB fails on it (the head is back in the store): Spark is asked then
    ({}, None, [("DuckDB", "evaluate"), ("Spark", "evaluate"), ("DuckDB", "forget")]),
])
def test_a_stratum_duckdb_holds_stays_there_unless_spark_holds_what_it_reads(
        spark_held: dict, vector_answer: object, log: list) -> None:
    from overlog.api import compile_program
    from overlog.runtime.placement import Placement

    plan = compile_program("reach(X, Y) :- link(X, Y).\n"
                           "reach(X, Z) :- link(X, Y), reach(Y, Z).\n")
    asked: list = []
    spark = _Offload("Spark", spark_held, {"reach": "Spark's"}, asked)
    vector = _Offload("DuckDB", {"reach": 10}, vector_answer, asked)
    placement = Placement(spark, vector)  # type: ignore[arg-type]
    found = placement.evaluate(list(plan.rules), None, 10, {}, {}, 100)
    assert (asked, found) == (log, vector_answer or {"reach": "Spark's"})
