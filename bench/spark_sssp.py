"""Shortest paths (a recursive min) on the Spark backend, from scratch and then step by
step: `python bench/spark_sssp.py NODES ARCS`. Needs the spark extra. After the distances
from the weighted random graph of bench/workloads.py, one step inserts an arc from the source
to the farthest node (improving the distances under it), and one inserts an arc back to the
source (improving nothing). Prints each step's seconds (Spark's session started before)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import workloads


def main() -> None:
    from overlog import Engine
    from overlog.runtime import spark

    nodes, arcs = int(sys.argv[1]), int(sys.argv[2])
    spark.session()
    engine = Engine(workloads.SSSP_RECURSIVE, backend="spark")
    for row in workloads.weighted_random(nodes, arcs):
        engine.insert("edge", row)

    def step(what: str) -> None:
        start = time.perf_counter()
        engine.run()
        print(f"{what}: {time.perf_counter() - start:.1f} s "
              f"({len(engine.rows('dist')):,} distances)", flush=True)

    step("from scratch")
    farthest, _ = max(engine.rows("dist"), key=lambda row: row[1])
    engine.insert("edge", (0, farthest, 1))
    step("an arc that improves a subtree")
    engine.insert("edge", (farthest, 0, 1))
    step("an arc that improves nothing")


if __name__ == "__main__":
    main()
