"""Our Spark backend beside its peers, on the same seeded inputs, in one process:

    python bench/spark_peers.py CASE [CASE ...] [--only spark,hand,local,auto,duckdb]
        [--timeout SECONDS] [--warmup CASES|none] [--spark-conf KEY=VALUE ...]

CASE is `tc-chain:N` (closure of a chain of N nodes), `tc-random:NODES:ARCS` (closure of a
random graph drawn as bench/spark_tc.py draws it, `random.Random(1)`) or `sg-tree:DEPTH`
(same generation on a complete binary tree, parent(child, parent) as workloads.tree gives).
The systems:

- spark:  Engine(program, backend="spark"): the rows go in by Engine.insert (load), then
          Engine.run() (eval: to Arrow, the semi-naive loop on Spark; the result is held
          in Spark, counted);
- hand:   a semi-naive loop written by hand in PySpark, on the same SparkSession: delta joined
          with the edges, distinct rows not in the total, unioned into it, coalesced and
          locally checkpointed each round; the input read from Parquet (load), the result
          counted (eval);
- local:  Engine(program, backend="local"), rows inserted as for spark;
- auto:   Engine(program) (backend "auto", the default threshold), rows inserted as for
          spark: local until the stratum's tables reach the threshold, Spark from there
          (its moves are printed; --timeout does not stop it);
- duckdb: WITH RECURSIVE (the queries of bench/peers.py) over a table read from Parquet.

The inputs are written to Parquet in a temporary folder first; the Spark session is started
once before any timing, and spark and hand then run small cases untimed (--warmup), so that
neither pays alone for the JVM's warming up. A Spark system past --timeout (default 900 s)
has its jobs cancelled and is reported as timed out, with how far it got. Prints, per case,
load and eval seconds, the result's tuples (all systems that finished must agree), Spark
jobs started, peak memory (of this Python process and of the JVM, each reset before a
system runs where Linux allows it), JVM garbage collection, checkpointed RDDs left
registered, and where the spark backend's evaluation time goes (measured by wrapping
runtime/spark.py's frame_of, rows_of and SparkStrata._evaluate in this process).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import random
import resource
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import workloads

SYSTEMS = ("spark", "hand", "local", "auto", "duckdb")
PARTITIONS = 4  # as SparkStrata.PARTITIONS; the session has spark.sql.shuffle.partitions=4


@dataclass
class Case:
    name: str
    kind: str  # "tc" or "sg"
    rows: list[tuple[int, int]]  # link(a, b) for tc, parent(c, p) for sg
    program: str
    relation: str  # the input relation
    result: str  # the relation counted


@dataclass
class Result:
    system: str
    load: float
    eval: float
    tuples: int
    rounds: int | None = None
    jobs: int | None = None
    py_rss: int | None = None  # peak KiB of this process while the system ran
    jvm_rss: int | None = None  # peak KiB of Spark's JVM
    jvm_gc: float | None = None  # seconds of JVM garbage collection while the system ran
    timed_out: bool = False  # eval is then the time given, tuples what was found by then
    progress: str = ""  # how far a run that timed out got
    notes: dict[str, Any] = field(default_factory=dict)  # seconds, counts, auto's moves


def parse_case(text: str) -> Case:
    kind, *args = text.split(":")
    numbers = [int(a) for a in args]
    if kind == "tc-chain" and len(numbers) == 1:
        return Case(text, "tc", workloads.chain(numbers[0]), workloads.TC, "link", "reach")
    if kind == "tc-random" and len(numbers) == 2:
        nodes, arcs = numbers
        generator = random.Random(1)  # as bench/spark_tc.py draws it
        edges = sorted({(generator.randrange(nodes), generator.randrange(nodes))
                        for _ in range(arcs)})
        return Case(text, "tc", edges, workloads.TC, "link", "reach")
    if kind == "sg-tree" and len(numbers) == 1:
        return Case(text, "sg", workloads.tree(numbers[0]), workloads.SG, "parent", "sg")
    raise SystemExit(f"unknown case {text!r}: tc-chain:N, tc-random:NODES:ARCS or "
                     "sg-tree:DEPTH")


# -- memory ------------------------------------------------------------------------------------

def _reset_peak(pid: int | str) -> None:
    """Reset a process's peak RSS (Linux 4.0+: writing 5 to clear_refs); silent elsewhere."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/clear_refs").write_text("5")


def _peak(pid: int | str) -> int | None:
    """A process's peak RSS in KiB (VmHWM), or None."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return None


def _jvm_pid() -> int | None:
    with contextlib.suppress(Exception):
        from pyspark import SparkContext

        return SparkContext._gateway.proc.pid  # type: ignore[union-attr]
    return None


def _gc_seconds(spark) -> float | None:
    """Seconds the JVM (driver and, in local mode, executors) has spent collecting garbage."""
    if spark is None:
        return None
    with contextlib.suppress(Exception):
        beans = spark._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
        return sum(max(bean.getCollectionTime(), 0) for bean in beans) / 1000
    return None


def _last_job(spark) -> int:
    """The id of the last Spark job started (ids grow by one a job)."""
    return max(spark.sparkContext.statusTracker().getJobIdsForGroup(None), default=-1)


class Watchdog:
    """Cancels the session's Spark jobs once ``seconds`` have passed (and keeps cancelling
    every half second until stopped): a Spark system that runs past its time fails, and is
    reported as timed out. The spark backend then finishes the stratum on the local backend
    (as after any failure inside Spark), so its result is not counted."""

    def __init__(self, spark, seconds: float | None) -> None:
        self.spark, self.seconds = spark, seconds
        self.fired = False
        self.progress = ""  # how far the system got (it says)
        self.load = 0.0  # its load seconds (it says)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        if self._stop.wait(self.seconds):
            return
        self.fired = True
        while not self._stop.is_set():
            with contextlib.suppress(Exception):
                self.spark.sparkContext.cancelAllJobs()
            self._stop.wait(0.5)

    def __enter__(self) -> Watchdog:
        if self.seconds is not None:
            self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


# -- the systems -------------------------------------------------------------------------------

class Breakdown:
    """Where Engine.run's time goes on Spark: runtime/spark.py's frame_of (rows to Arrow to
    Spark), rows_of (Spark's result back to engine rows) and SparkStrata._evaluate (all of
    the stratum on Spark) wrapped in timers, in this process only."""

    def __init__(self) -> None:
        from overlog.runtime import spark

        self.module = spark
        self.seconds = {"frame_of": 0.0, "rows_of": 0.0, "_evaluate": 0.0}
        self.calls = 0  # of rows_of
        self.originals = {"frame_of": spark.frame_of, "rows_of": spark.rows_of,
                          "_evaluate": spark.SparkStrata._evaluate}

    def _timed(self, name: str, function: Callable) -> Callable:
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - start
        return timed

    def _progress(self, function: Callable) -> Callable:
        """rows_of, telling every 100 calls how far the evaluation is (this revision of
        SparkStrata calls it once a round for each head: a long run shows its rounds)."""
        start = time.perf_counter()

        def counted(*args, **kwargs):
            self.calls += 1
            if self.calls % 100 == 0:
                print(f"    spark: {self.calls} rows_of calls, "
                      f"{time.perf_counter() - start:.0f} s", flush=True)
            return function(*args, **kwargs)
        return counted

    def __enter__(self) -> Breakdown:
        self.module.frame_of = self._timed("frame_of", self.originals["frame_of"])
        self.module.rows_of = self._timed("rows_of", self._progress(self.originals["rows_of"]))
        self.module.SparkStrata._evaluate = self._timed("_evaluate", self.originals["_evaluate"])
        return self

    def __exit__(self, *_) -> None:
        self.module.frame_of = self.originals["frame_of"]
        self.module.rows_of = self.originals["rows_of"]
        self.module.SparkStrata._evaluate = self.originals["_evaluate"]


MAX_TUPLES = 10**10


def _succeed(case: Case, backend: str, reports: list) -> None:
    """Stop the benchmark on a step that failed: its result would be no result."""
    errors = [str(error) for report in reports for error in report.errors]
    if errors:
        raise SystemExit(f"{case.name} on {backend}: the run failed: {errors}")


def run_engine(case: Case, backend: str, spark, conf: dict[str, str],
               timeout: float | None = None) -> Result:
    from overlog import Engine

    start = time.perf_counter()
    # (no step limit: the largest closures pass the default one, 25M new tuples a step)
    engine = (Engine(case.program, backend=backend, spark_conf=conf, max_tuples=MAX_TUPLES)
              if backend in ("spark", "auto") else
              Engine(case.program, backend=backend, max_tuples=MAX_TUPLES))
    for row in case.rows:
        engine.insert(case.relation, row)
    load = time.perf_counter() - start
    if backend != "spark":
        start = time.perf_counter()
        _succeed(case, backend, engine.run())
        seconds = time.perf_counter() - start
        held = engine.spark.held.get(case.result) if backend == "auto" else None
        notes = {"moves (what, rows, to Spark)": engine.spark.transitions} \
            if backend == "auto" else {}
        return Result(backend, load, seconds,
                      len(engine.store.rows(case.result)) if held is None else held,
                      notes=notes)
    first = _last_job(spark)
    with Breakdown() as breakdown, Watchdog(spark, timeout) as watchdog:
        start = time.perf_counter()
        reports = engine.run()
        seconds = time.perf_counter() - start
    if watchdog.fired:  # its jobs cancelled: the stratum was finished locally
        return Result("spark", load, timeout or seconds, 0, jobs=_last_job(spark) - first,
                      timed_out=True, progress=f"{breakdown.calls} rows_of calls")
    _succeed(case, backend, reports)
    local = dict(engine.spark.local)
    if local:  # the stratum did not run on Spark: the comparison would mean nothing
        raise SystemExit(f"{case.name}: the spark backend ran strata locally: {local}")
    parts = breakdown.seconds
    notes = {"rows to Spark (frame_of)": parts["frame_of"],
             "Spark loop": parts["_evaluate"] - parts["frame_of"] - parts["rows_of"],
             "Spark rows to engine rows (rows_of)": parts["rows_of"],
             "store and the rest of run()": seconds - parts["_evaluate"]}
    held = engine.spark.held.get(case.result)  # its rows stay in Spark (docs/spark.md)
    return Result("spark", load, seconds,
                  len(engine.store.rows(case.result)) if held is None else held,
                  jobs=_last_job(spark) - first, notes=notes)


def run_hand(case: Case, path: Path, spark, timeout: float | None = None) -> Result:
    """The semi-naive loop as a competent PySpark user writes it."""
    with Watchdog(spark, timeout) as watchdog:
        try:
            return _hand(case, path, spark, watchdog)
        except Exception:
            if not watchdog.fired:
                raise
            return Result("hand", watchdog.load, timeout or 0.0, 0, timed_out=True,
                          progress=watchdog.progress)


def _hand(case: Case, path: Path, spark, watchdog: Watchdog) -> Result:
    watchdog.progress = "reading the input"
    first = _last_job(spark)
    start = time.perf_counter()
    edges = spark.read.parquet(str(path)).cache()
    edges.count()  # read once, kept in memory
    load = watchdog.load = time.perf_counter() - start
    try:
        start = time.perf_counter()
        tuples, rounds = _hand_loop(case, edges, watchdog)
        seconds = time.perf_counter() - start
    finally:
        edges.unpersist()
    return Result("hand", load, seconds, tuples, rounds=rounds, jobs=_last_job(spark) - first)


def _hand_loop(case: Case, edges, watchdog: Watchdog) -> tuple[int, int]:
    """The result's tuples and the rounds it took."""
    from pyspark.sql import functions as F

    start = time.perf_counter()
    # columns named apart (a self-join of one DataFrame is ambiguous to Spark otherwise)
    if case.kind == "tc":  # reach(X, Z) :- link(X, Y), reach(Y, Z)
        def step(delta):
            return (delta.join(edges, F.col("x") == F.col("b"))
                    .select(F.col("a").alias("x"), F.col("y")))

        total = edges.select(F.col("a").alias("x"), F.col("b").alias("y")).distinct()
    else:  # sg(X, Y) :- parent(X, P), parent(Y, P), X != Y; parent(X, A), sg(A, B), parent(Y, B)
        left = edges.select(F.col("c").alias("lc"), F.col("p").alias("lp"))
        right = edges.select(F.col("c").alias("rc"), F.col("p").alias("rp"))

        def step(delta):
            return (delta.join(left, F.col("x") == F.col("lp"))
                    .join(right, F.col("y") == F.col("rp"))
                    .select(F.col("lc").alias("x"), F.col("rc").alias("y")))

        total = (left.join(right, F.col("lp") == F.col("rp")).where(F.col("lc") != F.col("rc"))
                 .select(F.col("lc").alias("x"), F.col("rc").alias("y")).distinct())
    total = total.coalesce(PARTITIONS).localCheckpoint(eager=True)
    delta, rounds = total, 0
    while True:
        if watchdog.fired:
            raise TimeoutError
        rounds += 1
        watchdog.progress = f"{rounds - 1} rounds done"
        if rounds % 100 == 0:
            print(f"    hand: round {rounds}, {time.perf_counter() - start:.0f} s", flush=True)
        delta = step(delta).distinct().subtract(total).localCheckpoint(eager=True)
        if delta.isEmpty():
            break
        total = total.union(delta).coalesce(PARTITIONS).localCheckpoint(eager=True)
    return total.count(), rounds


def run_duckdb(case: Case, path: Path) -> Result:
    """bench/peers.py's duckdb_tc / duckdb_sg queries, over a table read from Parquet (those
    functions insert row by row, which would time the insert, not the engine)."""
    import duckdb

    con = duckdb.connect()
    start = time.perf_counter()
    columns = "a, b" if case.kind == "tc" else "c, p"
    con.execute(f"CREATE TABLE {case.relation} AS SELECT {columns} FROM read_parquet(?)",
                [str(path)])
    load = time.perf_counter() - start
    query = """
        WITH RECURSIVE reach(a, b) AS (
            SELECT a, b FROM link
            UNION
            SELECT r.a, l.b FROM reach r JOIN link l ON r.b = l.a)
        SELECT count(*) FROM reach""" if case.kind == "tc" else """
        WITH RECURSIVE sg(x, y) AS (
            SELECT a.c, b.c FROM parent a JOIN parent b ON a.p = b.p WHERE a.c <> b.c
            UNION
            SELECT a.c, b.c FROM sg JOIN parent a ON a.p = sg.x JOIN parent b ON b.p = sg.y)
        SELECT count(*) FROM sg"""
    start = time.perf_counter()
    tuples = con.execute(query).fetchone()[0]
    seconds = time.perf_counter() - start
    con.close()
    return Result("duckdb", load, seconds, tuples)


def write_parquet(case: Case, folder: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = ("a", "b") if case.kind == "tc" else ("c", "p")
    columns = list(zip(*case.rows, strict=True))
    table = pa.table({name: pa.array(column, type=pa.int64())
                      for name, column in zip(names, columns, strict=True)})
    path = folder / f"{case.relation}.parquet"
    pq.write_table(table, path)
    return path


# -- the run -------------------------------------------------------------------------------------

def measure(case: Case, systems: list[str], folder: Path, spark, conf: dict[str, str],
            timeout: float | None) -> list[Result]:
    path = write_parquet(case, folder)
    print(f"\n== {case.name}: {len(case.rows):,} {case.relation} rows (Parquet: {path.name}, "
          f"{path.stat().st_size:,} bytes; spark and local get them by Engine.insert)",
          flush=True)
    results = []
    jvm = _jvm_pid()
    for system in systems:
        gc.collect()
        _reset_peak("self")
        if jvm is not None:
            _reset_peak(jvm)
        collected = _gc_seconds(spark)
        if system in ("spark", "local", "auto"):
            result = run_engine(case, system, spark, conf, timeout)
        elif system == "hand":
            result = run_hand(case, path, spark, timeout)
        else:
            result = run_duckdb(case, path)
        result.py_rss = _peak("self") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result.jvm_rss = _peak(jvm) if jvm is not None else None
        if collected is not None and system in ("spark", "hand"):
            result.jvm_gc = (_gc_seconds(spark) or 0.0) - collected
        if spark is not None and system in ("spark", "hand"):
            result.notes["checkpointed or cached RDDs still registered"] = len(
                spark.sparkContext._jsc.getPersistentRDDs())
        results.append(result)
        if result.timed_out:
            print(f"  {system}: load {result.load:.2f} s, eval timed out after "
                  f"{result.eval:.0f} s ({result.progress})", flush=True)
        else:
            print(f"  {system}: load {result.load:.2f} s, eval {result.eval:.2f} s, "
                  f"{result.tuples:,} tuples", flush=True)
    return results


def _mib(kib: int | None) -> str:
    return "" if kib is None else f"{kib / 1024:,.0f}"


def report(case: Case, results: list[Result]) -> None:
    print(f"\n{case.name}")
    header = ("system", "load s", "eval s", "tuples", "rounds", "Spark jobs",
              "py peak MiB", "JVM peak MiB", "JVM GC s")
    rows = [(r.system, f"{r.load:.2f}", f"> {r.eval:.0f}" if r.timed_out else f"{r.eval:.2f}",
             f"({r.progress})" if r.timed_out else f"{r.tuples:,}",
             "" if r.rounds is None else str(r.rounds), "" if r.jobs is None else str(r.jobs),
             _mib(r.py_rss), _mib(r.jvm_rss), "" if r.jvm_gc is None else f"{r.jvm_gc:.1f}")
            for r in results]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  " + "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                               for i, (cell, w) in enumerate(zip(row, widths, strict=True))))
    for result in results:
        if result.notes:
            parts = ", ".join(f"{name} {value:.2f} s" if isinstance(value, float)
                              else f"{name}: {value}" for name, value in result.notes.items())
            print(f"  {result.system}: {parts}")
    by_system = {r.system: r for r in results if not r.timed_out}
    if "spark" in by_system and "hand" in by_system:
        spark, hand = by_system["spark"], by_system["hand"]
        print(f"  spark eval / hand eval: {spark.eval / hand.eval:.2f}x; "
              f"Spark jobs {spark.jobs} against {hand.jobs} "
              f"({hand.rounds} rounds by hand)")
    counts = {r.system: r.tuples for r in results if not r.timed_out}
    assert len(set(counts.values())) <= 1, f"{case.name}: the systems disagree: {counts}"


def revision() -> str:
    """The checkout measured: its commit, and whether the runtime has uncommitted changes."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                              capture_output=True, text=True, timeout=30).stdout.strip()
        changed = subprocess.run(["git", "status", "--short", "--", "runtime", "overlog"],
                                 cwd=root, capture_output=True, text=True,
                                 timeout=30).stdout.split("\n")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    dirty = sorted(line[3:] for line in changed if line.strip())
    return head + (f" with uncommitted changes to {', '.join(dirty)}" if dirty else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="+", metavar="CASE")
    parser.add_argument("--only", default=",".join(SYSTEMS),
                        help="systems to run, in order (default: %(default)s)")
    parser.add_argument("--warmup", default="tc-chain:30,sg-tree:3",
                        help="cases run untimed first by spark and hand, so that neither "
                             "pays for the JVM's warming up alone ('none': no warm-up; "
                             "default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=900, metavar="SECONDS",
                        help="seconds each Spark system may evaluate a case: its jobs are "
                             "then cancelled and it is reported as timed out "
                             "(default: %(default)s)")
    parser.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting for the session both spark and hand use "
                             "(repeatable; e.g. spark.driver.memory=8g)")
    args = parser.parse_args()
    systems = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(systems) - set(SYSTEMS)
    if unknown:
        parser.error(f"unknown systems {sorted(unknown)}: pick from {', '.join(SYSTEMS)}")
    cases = [parse_case(text) for text in args.cases]
    if any("=" not in item for item in args.spark_conf):
        parser.error("--spark-conf takes KEY=VALUE")
    conf = dict(item.split("=", 1) for item in args.spark_conf)
    print(f"overlog at {revision()}; Python {sys.version.split()[0]}", flush=True)
    spark = None
    if {"spark", "hand"} & set(systems):
        from overlog.runtime import spark as overlog_spark

        start = time.perf_counter()
        spark = overlog_spark.session(conf=conf)  # the session both spark and hand use
        print(f"Spark {spark.version} session started in {time.perf_counter() - start:.1f} s "
              f"({spark.sparkContext.master}, "
              f"shuffle partitions {spark.conf.get('spark.sql.shuffle.partitions')}, "
              f"driver memory {spark.conf.get('spark.driver.memory', '1g (default)')}"
              + "".join(f", {key}={value}" for key, value in conf.items()) + ")",
              flush=True)
    with tempfile.TemporaryDirectory(prefix="spark_peers_") as folder:
        warm = [s for s in systems if s in ("spark", "hand")]
        if warm and args.warmup != "none":
            start = time.perf_counter()
            for text in args.warmup.split(","):
                case = parse_case(text)
                path = write_parquet(case, Path(folder))
                for system in warm:
                    if system == "spark":
                        run_engine(case, system, spark, conf)
                    else:
                        run_hand(case, path, spark)
            print(f"warm-up ({args.warmup}; {', '.join(warm)}, untimed): "
                  f"{time.perf_counter() - start:.1f} s", flush=True)
        for case in cases:
            report(case, measure(case, systems, Path(folder), spark, conf, args.timeout))


if __name__ == "__main__":
    main()
