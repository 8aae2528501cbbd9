"""Spark processes the cluster and Spark Connect tests start from the installed pyspark: where
it is (skipping without java or pyspark), free ports, starting one in its own process group
with its log in a file, and stopping it (SIGTERM to the group, then SIGKILL)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
from pathlib import Path

import pytest


def spark_home(what: str) -> Path:
    """pyspark's package directory (SPARK_HOME); skips without java or pyspark."""
    if shutil.which("java") is None:
        pytest.skip(f"no `java` on the PATH: {what} needs Java 17+")
    found = importlib.util.find_spec("pyspark")
    if found is None or found.origin is None:
        pytest.skip("pyspark is not installed")
    return Path(found.origin).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(command: list[str], log: Path, env: dict[str, str], cwd: Path) -> subprocess.Popen:
    """``command`` in a process group of its own, its output in ``log``."""
    with open(log, "wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, cwd=cwd,
                                start_new_session=True)


def stop(process: subprocess.Popen, grace: float = 15) -> None:
    """SIGTERM to the process's group (it, and what it started), then SIGKILL."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5)):
        if process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
            process.wait(timeout=wait)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
