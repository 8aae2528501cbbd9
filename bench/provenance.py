"""What recording provenance costs (Engine(provenance=True), for --why), and what a why()
and a why_not() question cost, on transitive closure of a random graph.

    python bench/provenance.py [--nodes N] [--edges E] [--repeat R]

For each setting (off, on), in a fresh process: the time of the first step (loading the
edges and evaluating the closure), then of a step deleting one edge, and the peak memory
(ru_maxrss) of the process after those steps and at the end. With provenance on, also the time of
the first why() (which builds the indexes later questions reuse until the next step), of
the others on average over a sample of 50 tuples (and the deepest derivation among them),
and of why_not() for a tuple that is not there. Best of R runs each.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.workloads import random_graph

PROGRAM = "reach(X, Y) :- link(X, Y).\nreach(X, Z) :- link(X, Y), reach(Y, Z).\n"


def one(nodes: int, edges: int, provenance: bool) -> dict:
    import overlog

    links = random_graph(nodes, edges)
    engine = overlog.Engine(PROGRAM, provenance=provenance)
    engine.insert_many("link", links)
    result = {}
    start = time.perf_counter()
    engine.step()
    result["evaluate"] = time.perf_counter() - start
    result["tuples"] = engine.count("reach")
    start = time.perf_counter()
    engine.delete("link", links[0])
    engine.step()
    result["delete"] = time.perf_counter() - start
    result["steps_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if provenance:
        sample = engine.rows("reach")[::max(1, result["tuples"] // 50)]
        start = time.perf_counter()
        engine.why("reach", sample[0])
        result["why_first"] = time.perf_counter() - start
        start = time.perf_counter()
        depths = [(_depth(engine.why("reach", row)), row) for row in sample[1:]]
        result["why_each"] = (time.perf_counter() - start) / len(depths)
        result["deepest"] = max(depths)[0]
        missing = next((a, b) for a in range(nodes) for b in range(nodes)
                       if (a, b) not in set(sample) and engine.query("reach", (a, b)) == [])
        start = time.perf_counter()
        engine.why_not("reach", missing)
        result["why_not"] = time.perf_counter() - start
    result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def _depth(node) -> int:
    return 1 + max((_depth(child) for child in node.children), default=0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--edges", type=int, default=1500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", choices=["off", "on"])
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one(args.nodes, args.edges, args.child == "on")))
        return
    for setting in ("off", "on"):
        runs = [json.loads(subprocess.run(
            [sys.executable, __file__, "--nodes", str(args.nodes), "--edges", str(args.edges),
             "--child", setting], capture_output=True, text=True, check=True).stdout)
            for _ in range(args.repeat)]
        best = {key: min(run[key] for run in runs) for key in runs[0]}
        print(f"provenance {setting}: " + ", ".join(
            f"{key} {value:,.3f}" if isinstance(value, float) else f"{key} {value:,}"
            for key, value in best.items()))


if __name__ == "__main__":
    main()
