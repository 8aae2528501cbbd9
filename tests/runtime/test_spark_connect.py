"""The Spark backend on Spark Connect (``--spark-master sc://HOST:PORT``): a Connect server
started from the installed pyspark on 127.0.0.1 (local[1] inside it) runs a recursive program
with `notin`, arithmetic, a division by zero and aggregates through the CLI. Its output and
errors are exactly what ``--backend local`` prints, and exactly the tables written down
here; the trace credits both strata to Spark (the division by zero failed inside Spark first,
so that step's first attempt ran locally, as it does on any master). Without a server at the
address, or with a setting a Connect session cannot take, ``--backend spark`` stops at once
with what to do.

The CLI runs in a subprocess: this process may already hold a local[2] SparkSession (one a
process). The server's log is in the module's temporary directory."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from overlog.runtime import sparkconnect
from tests.runtime.spark_processes import free_port, spark_home, start, stop

pytestmark = pytest.mark.spark

START_TIMEOUT = 180  # seconds for the server to listen (the machine may be busy)
RUN_TIMEOUT = 300

PROGRAM = """\
link(1, 2). link(2, 3). link(3, 1). link(3, 4). link(4, 5). link(10, 11). link(11, 12).
cost(1, 6). cost(2, 0). cost(3, 4).

reach(X, Y) :- link(X, Y).
reach(X, Z) :- link(X, Y), reach(Y, Z).
cyclic(X) :- reach(X, X).
acyclic(X) :- link(X, _), notin cyclic(X).
fanout(X, count<Y>) :- reach(X, Y).
far(X, max<Y>) :- reach(X, Y).
share(X, Z) :- cost(X, C), Z := 12 / C + X * 2.
total(sum<C>) :- cost(_, C).
"""
REACH = {1: [1, 2, 3, 4, 5], 2: [1, 2, 3, 4, 5], 3: [1, 2, 3, 4, 5], 4: [5], 10: [11, 12],
         11: [12]}
TABLES = [
    *(f"link,{x},{y}" for x, y in [(1, 2), (2, 3), (3, 1), (3, 4), (4, 5), (10, 11), (11, 12)]),
    "cost,1,6", "cost,3,4",  # cost(2, 0) is quarantined: 12 / 0
    *(f"reach,{x},{y}" for x, ys in REACH.items() for y in ys),
    "cyclic,1", "cyclic,2", "cyclic,3", "acyclic,4", "acyclic,10", "acyclic,11",
    *(f"fanout,{x},{len(ys)}" for x, ys in REACH.items()),
    *(f"far,{x},{max(ys)}" for x, ys in REACH.items()),
    "share,1,4", "share,3,9", "total,10",
]
# --format csv: a header, then each final row after the last step (2) and its time
OUTPUT = ["step,time,table,op,field1,field2",
          *(f"2,0.0,{table},final,{values}" for table, values in
            (line.split(",", 1) for line in TABLES))]
ERRORS = ["p.olg:10:33: error[E302]: step 1 (time 0): division by zero",
          "  in rule 7, at `12 / C`",
          "  binding: C=0, X=2", "  quarantined input: cost(2, 0)"]
# share, cyclic and acyclic live in Spark (docs/spark.md, "Relations held in Spark")
TRACE = ["trace: step 1 @0: stratum 0 on Spark derived 24, stratum 1 on Spark derived 16; "
         "+7 link, +2 cost, +19 reach, +6 fanout, +6 far, +1 total, +2 share (in Spark), "
         "+3 cyclic (in Spark), +3 acyclic (in Spark)",
         "trace: step 2 @0: no rule fired; 1 error events"]


def _require_connect() -> Path:
    """pyspark's package directory (SPARK_HOME); skips without java, pyspark, or the Connect
    client's packages."""
    home = spark_home("a Spark Connect server")
    for module, package in sparkconnect._CLIENT.items():
        try:
            missing = importlib.util.find_spec(module) is None
        except ImportError:  # google itself is missing
            missing = True
        if missing:
            pytest.skip(f"the Spark Connect client needs {package}: pip install "
                        "'pyspark[connect]'")
    return home


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return False
    return True


@dataclass
class Server:
    url: str  # sc://127.0.0.1:PORT
    log: Path

    def tail(self) -> str:
        return f"--- {self.log}:\n{self.log.read_text(errors='replace')[-4000:]}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = _require_connect()
    where = tmp_path_factory.mktemp("connect")
    port = free_port()
    found = Server(f"sc://127.0.0.1:{port}", where / "server.log")
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1"}
    command = [str(home / "bin" / "spark-submit"),
               "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
               "--name", "overlog test", "--master", "local[1]", "--driver-memory", "1g",
               "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
               "--conf", f"spark.connect.grpc.binding.port={port}",
               "--conf", "spark.ui.enabled=false",
               "--conf", f"spark.local.dir={where}"]
    process = start(command, found.log, env, where)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _listening(port):
            if process.poll() is not None:
                pytest.fail(f"the Spark Connect server exited while starting "
                            f"({process.returncode}):\n{found.tail()}")
            if time.monotonic() > deadline:
                pytest.fail(f"the Spark Connect server did not listen on {port} after "
                            f"{START_TIMEOUT} s:\n{found.tail()}")
            time.sleep(0.5)
        yield found
    finally:
        stop(process, grace=30)


def _run(where: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "overlog", "run", "p.olg", "--format", "csv",
                           *args], capture_output=True, text=True, cwd=where,
                          timeout=RUN_TIMEOUT)


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("program")
    (where / "p.olg").write_text(PROGRAM)
    return where


@pytest.fixture(scope="module")
def runs(server: Server, program: Path) -> dict[str, subprocess.CompletedProcess]:
    done = {"local": _run(program, "--backend", "local"),
            "connect": _run(program, "--backend", "spark", "--spark-master", server.url,
                            "--trace")}
    for backend, run in done.items():  # 3: the division by zero
        assert run.returncode == 3, f"{backend}:\n{run.stderr}\n{server.tail()}"
    return done


def test_connect_gives_what_the_local_backend_gives(runs: dict) -> None:
    assert runs["connect"].stdout == runs["local"].stdout
    errors = [line for line in runs["connect"].stderr.splitlines()
              if not line.startswith("trace:")]
    assert errors == runs["local"].stderr.splitlines() == ERRORS


def test_the_tables_are_the_closure(runs: dict) -> None:
    assert runs["connect"].stdout.splitlines() == OUTPUT


def test_the_strata_ran_on_spark(runs: dict) -> None:
    traced = [line for line in runs["connect"].stderr.splitlines()
              if line.startswith("trace:")]
    assert traced == TRACE


def test_no_server_at_the_address_stops_at_once(program: Path) -> None:
    port = free_port()  # nothing listens there
    done = _run(program, "--backend", "spark", "--spark-master", f"sc://127.0.0.1:{port}")
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", f"overlog: error: no Spark Connect server at 127.0.0.1:{port} "
        f"(sc://127.0.0.1:{port}): the connection was refused; start one (pyspark's "
        "sbin/start-connect-server.sh), or check the address\n")


def test_a_setting_of_the_server_is_refused(server: Server, program: Path) -> None:
    done = _run(program, "--backend", "spark", "--spark-master", server.url,
                "--spark-conf", "spark.executor.memory=2g")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"overlog: error: the Spark Connect server at {server.url} "
                                  "does not take spark.executor.memory=2g from a client"), \
        done.stderr
