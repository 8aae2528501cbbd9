"""Transitive closure of a seeded random graph on the Spark backend and on the local one, in
one process (Spark's session started before timing): `python bench/spark_tc.py NODES ARCS`.
Needs the spark extra. Prints seconds and tuples for each backend."""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import workloads


def main() -> None:
    from overlog import Engine
    from overlog.runtime import spark

    nodes, arcs = int(sys.argv[1]), int(sys.argv[2])
    start = time.perf_counter()
    spark.session()
    print(f"Spark session started in {time.perf_counter() - start:.1f} s", flush=True)
    generator = random.Random(1)
    edges = sorted({(generator.randrange(nodes), generator.randrange(nodes))
                    for _ in range(arcs)})
    for backend in ("spark", "local"):
        engine = Engine(workloads.TC, backend=backend)
        for row in edges:
            engine.insert("link", row)
        start = time.perf_counter()
        engine.run()
        seconds = time.perf_counter() - start
        print(f"{backend}: {seconds:.2f} s ({len(engine.store.rows('reach')):,} tuples)",
              flush=True)


if __name__ == "__main__":
    main()
