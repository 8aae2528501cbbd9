"""The Spark backend on a real cluster: a standalone master and one worker (1 core), started
from the installed pyspark on 127.0.0.1, run a recursive program with `notin` and `count`
through the CLI (``--spark-master spark://...``). Its tables are exactly what
``--backend local`` prints, and exactly the closure written down here; the trace credits
both strata to Spark (a failure inside Spark would have run them locally), and the master
lists the finished application, which the worker ran an executor for.

The CLI runs in a subprocess: this process may already hold a local[2] SparkSession (one a
process). Logs of the master and the worker are in the module's temporary directory."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.runtime.spark_processes import free_port, spark_home, start, stop

pytestmark = pytest.mark.spark

START_TIMEOUT = 120  # seconds for the master and worker to come up (the machine may be busy)
RUN_TIMEOUT = 300

PROGRAM = """\
link(1, 2). link(2, 3). link(3, 1). link(3, 4). link(4, 5). link(5, 4).
link(10, 11). link(10, 12). link(10, 13). link(11, 14). link(12, 14). link(12, 15).
link(13, 15). link(13, 16). link(14, 17). link(15, 17). link(16, 17). link(16, 18).
link(20, 21). link(21, 22). link(22, 23). link(23, 20). link(20, 24). link(22, 24).
link(24, 24). link(23, 25).
link(30, 31). link(31, 30). link(30, 32). link(31, 32).

reach(X, Y) :- link(X, Y).
reach(X, Z) :- link(X, Y), reach(Y, Z).
cyclic(X) :- reach(X, X).
acyclic(X) :- link(X, _), notin cyclic(X).
fanout(X, count<Y>) :- reach(X, Y).
"""
TABLES = ["reach", "cyclic", "acyclic", "fanout"]

# the 30 links' closure: node -> the nodes it reaches
REACH = {
    1: {1, 2, 3, 4, 5}, 2: {1, 2, 3, 4, 5}, 3: {1, 2, 3, 4, 5}, 4: {4, 5}, 5: {4, 5},
    10: {11, 12, 13, 14, 15, 16, 17, 18}, 11: {14, 17}, 12: {14, 15, 17},
    13: {15, 16, 17, 18}, 14: {17}, 15: {17}, 16: {17, 18},
    20: {20, 21, 22, 23, 24, 25}, 21: {20, 21, 22, 23, 24, 25},
    22: {20, 21, 22, 23, 24, 25}, 23: {20, 21, 22, 23, 24, 25}, 24: {24},
    30: {30, 31, 32}, 31: {30, 31, 32},
}
CYCLIC = {1, 2, 3, 4, 5, 20, 21, 22, 23, 24, 30, 31}
ACYCLIC = {10, 11, 12, 13, 14, 15, 16}
FANOUT = {1: 5, 2: 5, 3: 5, 4: 2, 5: 2, 10: 8, 11: 2, 12: 3, 13: 4, 14: 1, 15: 1, 16: 2,
          20: 6, 21: 6, 22: 6, 23: 6, 24: 1, 30: 3, 31: 3}
# cyclic and acyclic live in Spark (docs/spark.md, "Relations held in Spark"); reach does
# not: an aggregate rule reads it
TRACE = ["trace: step 1 @0: stratum 0 on Spark derived 83, stratum 1 on Spark derived 26; "
         "+30 link, +71 reach, +19 fanout, +12 cyclic (in Spark), +7 acyclic (in Spark)"]


@dataclass
class Cluster:
    master: str  # spark://127.0.0.1:PORT
    web: str  # the master's web UI
    work: Path  # the worker's directory: an application's executors log there
    logs: list[Path]

    def state(self) -> dict:
        with urllib.request.urlopen(f"{self.web}/json/", timeout=5) as answer:
            return json.load(answer)

    def tail(self) -> str:
        return "\n".join(f"--- {log}:\n{log.read_text(errors='replace')[-4000:]}"
                         for log in self.logs)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    home = spark_home("a Spark cluster")
    where = tmp_path_factory.mktemp("cluster")
    port, web, worker_web = free_port(), free_port(), free_port()
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"}  # no port 6066
    found = Cluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{web}", where / "work",
                    [where / "master.log", where / "worker.log"])
    commands = [
        ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
         "--webui-port", str(web)],
        ["org.apache.spark.deploy.worker.Worker", found.master, "--host", "127.0.0.1",
         "--cores", "1", "--memory", "1g", "--webui-port", str(worker_web),
         "--work-dir", str(found.work)],
    ]
    processes: list[subprocess.Popen] = []
    try:
        for command, log in zip(commands, found.logs, strict=True):
            processes.append(start([str(home / "bin" / "spark-class"), *command], log, env,
                                   where))
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            dead = [p.args[1] for p in processes if p.poll() is not None]
            if dead:
                pytest.fail(f"{dead[0]} exited while starting:\n{found.tail()}")
            try:
                state = found.state()
                if state["status"] == "ALIVE" and state["aliveworkers"] == 1:
                    break
            except (OSError, http.client.HTTPException, ValueError, KeyError):
                pass  # the web UI is not up yet
            if time.monotonic() > deadline:
                pytest.fail(f"no master with a worker after {START_TIMEOUT} s:\n"
                            f"{found.tail()}")
            time.sleep(0.5)
        yield found
    finally:
        for process in reversed(processes):
            stop(process)


def _run(where: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    prints = [arg for table in TABLES for arg in ("--print", table)]
    return subprocess.run([sys.executable, "-m", "overlog", "run", "p.olg", "--format", "csv",
                           *prints, *args], capture_output=True, text=True, env=env,
                          cwd=where, timeout=RUN_TIMEOUT)


@pytest.fixture(scope="module")
def runs(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory,
         ) -> dict[str, subprocess.CompletedProcess]:
    where = tmp_path_factory.mktemp("program")
    (where / "p.olg").write_text(PROGRAM)
    done = {"local": _run(where, "--backend", "local"),
            "spark": _run(where, "--backend", "spark", "--spark-master", cluster.master,
                          "--spark-conf", "spark.executor.memory=512m", "--trace")}
    for backend, run in done.items():
        assert run.returncode == 0, f"--backend {backend}:\n{run.stderr}\n{cluster.tail()}"
    return done


def test_the_cluster_gives_what_the_local_backend_gives(runs: dict) -> None:
    assert runs["spark"].stdout == runs["local"].stdout


def test_the_tables_are_the_closure(runs: dict) -> None:
    header, *lines = runs["spark"].stdout.splitlines()  # STEP,TIME,TABLE,final,FIELD,...
    assert header.startswith("step,time,table,op,field1")
    rows: dict[str, set[tuple[int, ...]]] = {table: set() for table in TABLES}
    for line in lines:
        _, _, table, op, *values = line.split(",")
        assert op == "final"
        rows[table].add(tuple(int(v) for v in values))
    assert rows == {
        "reach": {(x, y) for x, reached in REACH.items() for y in reached},
        "cyclic": {(x,) for x in CYCLIC},
        "acyclic": {(x,) for x in ACYCLIC},
        "fanout": set(FANOUT.items()),
    }
    assert len(lines) == 71 + 12 + 7 + 19  # each row once


def test_the_strata_ran_on_spark(runs: dict) -> None:
    traced = [line for line in runs["spark"].stderr.splitlines() if line.startswith("trace:")]
    assert traced == TRACE


def test_the_master_ran_the_application_on_its_worker(cluster: Cluster, runs: dict) -> None:
    deadline = time.monotonic() + 30  # the master marks it finished once the driver is gone
    while not (apps := cluster.state()["completedapps"]) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert [(app["name"], app["state"]) for app in apps] == [("overlog", "FINISHED")]
    assert cluster.state()["activeapps"] == []
    assert (cluster.work / apps[0]["id"] / "0" / "stderr").is_file()  # executor 0's log
