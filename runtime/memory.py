"""The memory this process may use, and the default threshold of ``--backend auto`` drawn
from it (docs/spark.md, "Placement"). Light on purpose: the command line reads it to print
its help, without importing the Spark backend."""

from __future__ import annotations

import os

# bytes a row of two ints takes in the local store with its indexes (measured: 22,361,430
# rows of same generation peak at 4,639 MiB; docs/benchmarks.md)
ROW_BYTES = 220


def machine_memory(cgroup: str = "/sys/fs/cgroup") -> int | None:
    """The memory this process may use, in bytes: the machine's, or its container's limit
    (cgroup v2 ``memory.max``, v1 ``memory/memory.limit_in_bytes``) where that is lower;
    None where neither can be read."""
    try:
        found = [os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")]
    except (AttributeError, ValueError, OSError):  # not a POSIX system
        found = []
    for name in ("memory.max", "memory/memory.limit_in_bytes"):
        try:
            with open(f"{cgroup}/{name}") as file:
                text = file.read().strip()
        except OSError:
            continue
        if text.isdigit():  # "max" (no limit) is not
            found.append(int(text))
    return min(found, default=None)


def threshold_for(memory: int | None) -> int:
    """The default ``--spark-threshold``: the rows that would fill a quarter of ``memory``
    in the local store, in whole millions and at least 1,000,000; 10,000,000 when the
    memory is not known (docs/spark.md, "Placement")."""
    if memory is None:
        return 10_000_000
    return max(1, memory // 4 // ROW_BYTES // 1_000_000) * 1_000_000


# with --backend auto, a stratum moves to Spark once the tables it reads and writes hold this
# many rows: on one machine the local backend is faster while it has the memory
THRESHOLD = threshold_for(machine_memory())

# with --backend auto, a stratum runs in DuckDB (the vectorized backend) once its tables hold
# this many rows and its rounds a sixteenth of it: below, the local backend was faster here
# (docs/vector.md, "Placement")
VECTOR_THRESHOLD = 100_000
