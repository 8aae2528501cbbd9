"""A relation of 10M+ rows under a memory budget: through Spark it completes, locally it
does not fit.

    python bench/spark_memory.py [--groups G] [--size S] [--budget-mb MB]
        [--only spark,local] [--timeout SECONDS]

The program pairs the members of each group, then drops the pairs a small table blocks:

    pair(X, Y) :- member(X, G), member(Y, G).
    open(X, Y) :- pair(X, Y), notin blocked(X, Y).

G groups of S members give G * S * S pairs (default 1,000 x 100 x 100: 10,000,000). Each
system runs as `overlog run` in its own process, the members read with -F from CSV, the
tables written with -D as Parquet (`--backend spark` keeps `pair` and `open` in Spark: they
stream from there to the files). A watchdog samples the resident memory of the overlog
process (Python: the budget, as a `--memory` limit would) and of its child processes (the
JVM: reported, not limited) every 0.2 s, and kills the run once Python passes the budget.
Prints, per system, wall time, peak memory of each, and the rows of `open.parquet`.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ("pair(X, Y) :- member(X, G), member(Y, G).\n"
           "open(X, Y) :- pair(X, Y), notin blocked(X, Y).\n")


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(c) for c in f.read().split()]
    except OSError:
        return []
    return found + [g for c in found for g in _children(c)]


def run(backend: str, folder: Path, budget_kib: int, timeout: float) -> dict:
    out = folder / f"out-{backend}"
    command = [sys.executable, "-m", "overlog", "run", str(folder / "p.olg"), "-F",
               str(folder / "facts"), "-D", str(out), "--output-format", "parquet",
               "--backend", backend, "--max-tuples", "100000000"]
    if backend == "spark":
        command += ["--spark-conf", "spark.driver.memory=6g"]
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    python = jvm = 0
    verdict = None
    while process.poll() is None:
        rss = _rss_kib(process.pid)
        python = max(python, rss)
        jvm = max(jvm, sum(_rss_kib(child) for child in _children(process.pid)))
        elapsed = time.monotonic() - started
        if rss > budget_kib or elapsed > timeout:
            verdict = (f"killed: Python over the budget at {elapsed:.0f} s" if rss > budget_kib
                       else f"killed: past {timeout:.0f} s")
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            break
        time.sleep(0.2)
    seconds = time.monotonic() - started
    result = {"backend": backend, "seconds": seconds, "python_mib": python // 1024,
              "jvm_mib": jvm // 1024}
    if verdict is None:
        err = process.stderr.read() if process.stderr else ""
        if process.returncode != 0:
            verdict = f"failed ({process.returncode}): {err.strip()[:300]}"
        else:
            import pyarrow.parquet as pq

            verdict = "completed"
            result["open_rows"] = pq.ParquetFile(out / "open.parquet").metadata.num_rows
    result["verdict"] = verdict
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--budget-mb", type=int, default=1500)
    parser.add_argument("--only", default="spark,local")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "p.olg").write_text(PROGRAM)
        (folder / "facts").mkdir()
        with open(folder / "facts" / "member.csv", "w") as f:
            for g in range(args.groups):
                for m in range(args.size):
                    f.write(f"{g * args.size + m},{g}\n")
        with open(folder / "facts" / "blocked.csv", "w") as f:
            f.writelines(f"{x},{x}\n" for x in range(0, args.groups * args.size, 7))
        pairs = args.groups * args.size * args.size
        blocked = len(range(0, args.groups * args.size, 7))
        print(f"pairs: {pairs:,}; open: {pairs - blocked:,}; budget for Python: "
              f"{args.budget_mb:,} MiB")
        for backend in args.only.split(","):
            result = run(backend, folder, args.budget_mb * 1024, args.timeout)
            print(result, flush=True)


if __name__ == "__main__":
    main()
