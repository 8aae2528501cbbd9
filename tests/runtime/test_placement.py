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
