"""Spark Connect (``--spark-master sc://HOST:PORT``): the Spark executor's session, opened on a
Spark Connect server instead of a JVM of this process.

``start`` opens it, applies the given settings and then overlog's own (those the meaning of
programs depends on: runtime/spark.py's ``_FIXED``), and reads those back: a server that
refuses or overrides them is not used. It fails fast, with what to do, when the Connect
client's packages are missing or no server answers at the address.

A Connect session has no SparkContext in this process: only runtime SQL settings
(``spark.sql.*`` and the like) can be given from here; the rest (memory, cores, the master)
are the server's, set where it starts (``start-connect-server.sh --conf KEY=VALUE``)."""

from __future__ import annotations

import atexit
import contextlib
import importlib
import logging
import os
import socket
import warnings
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# seconds to wait for the server to answer the connection (it may be busy, not gone)
CONNECT_TIMEOUT = 20.0
# settings overlog gives a session unless ``conf`` says otherwise (as runtime/spark.py does for
# a session of its own: its tables are small, and Spark's 200 shuffle partitions slow rounds)
DEFAULTS = {"spark.sql.shuffle.partitions": "4"}
_PROXIES = ("grpc_proxy", "https_proxy", "http_proxy", "GRPC_PROXY", "HTTPS_PROXY", "HTTP_PROXY")
_INSTALL = "pip install 'overlog[spark]' (or: pip install 'pyspark[connect]')"
# while starting: a few quick retries of an unavailable server, not the client's 10 minutes
_START_RETRIES = {"max_retries": 3, "initial_backoff": 200, "backoff_multiplier": 4.0,
                  "max_backoff": 2000}
# running: a server that went away fails the operation after about 45 s (the client's own
# policy waits 10 minutes), and the stratum runs locally ("Spark failed ...")
_RUN_RETRIES = {"max_retries": 8, "initial_backoff": 50, "backoff_multiplier": 4.0,
                "max_backoff": 10_000}


def start(url: str, conf: Mapping[str, str], fixed: Mapping[str, str]) -> SparkSession:
    """A Spark Connect session on the server at ``url`` (``sc://HOST:PORT``, with the
    options Spark Connect's URLs take), with ``conf`` and then ``fixed`` set, and ``fixed``
    read back; raises SparkUnavailable with what to do."""
    from overlog.runtime.spark import SparkUnavailable

    _check_client(SparkUnavailable)
    import grpc
    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.client import DefaultChannelBuilder
    from pyspark.sql.connect.client.retries import DefaultPolicy

    for name in conf:
        if name in fixed:
            raise SparkUnavailable(f"{name} is set by overlog ({fixed[name]}): the meaning of "
                                   "programs depends on it")
    try:
        channel = DefaultChannelBuilder(url)
    except PySparkException as error:
        raise SparkUnavailable(f"not a Spark Connect URL ({url}): {error}") from None
    _reach(channel, url, SparkUnavailable, grpc)

    was_remote = os.environ.get("SPARK_CONNECT_MODE_ENABLED")
    try:
        # no settings in the builder: it would apply them silently, ignoring a refusal
        spark = SparkSession.builder.remote(url).create()
    except PySparkException as error:
        _restore_mode(was_remote)
        raise SparkUnavailable(f"Spark Connect did not start ({url}): {error}") from None
    client = spark.client
    client.set_retry_policies([DefaultPolicy(**_START_RETRIES)])
    try:
        settings = {**DEFAULTS, **conf, **fixed}
        for name, value in settings.items():
            try:
                with _quiet():
                    spark.conf.set(name, value)
            except (PySparkException, grpc.RpcError) as error:
                if name in conf:
                    raise SparkUnavailable(
                        f"the Spark Connect server at {url} does not take {name}={value} "
                        f"from a client ({_first_line(error)}): a Connect session takes "
                        "runtime SQL settings only; set the others where the server starts "
                        "(start-connect-server.sh --conf KEY=VALUE)") from None
                if name not in fixed:  # a default of ours: the server's own stands
                    continue
                raise
        for name, value in fixed.items():
            with _quiet():
                found = spark.conf.get(name)
            if str(found).lower() != value:
                raise SparkUnavailable(
                    f"the Spark Connect server at {url} keeps {name}={found}, and overlog "
                    f"needs {value}: the meaning of programs depends on it")
    except SparkUnavailable:
        _close(spark, was_remote)
        raise
    except (PySparkException, grpc.RpcError) as error:
        _close(spark, was_remote)
        raise SparkUnavailable(f"the Spark Connect server at {url} refused overlog's "
                               f"settings ({_first_line(error)})") from None
    client.set_retry_policies([DefaultPolicy(**_RUN_RETRIES)])
    # a server gone mid-run: the stratum's reason says so ("Spark failed ..."), once
    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]",
                            module=r"pyspark\.sql\.connect\.client\.retries")
    # a failure inside Spark is handled (the stratum runs locally): no report of it
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    atexit.register(_release, spark)
    return spark


# the Connect client's packages (pyspark's `connect` extra): module -> what pip installs
_CLIENT = {"pyarrow": "pyarrow", "pandas": "pandas", "grpc": "grpcio",
           "grpc_status": "grpcio-status", "google.rpc": "googleapis-common-protos",
           "zstandard": "zstandard"}


def _check_client(unavailable: type[Exception]) -> None:
    """SparkUnavailable, with what to install, when the Connect client cannot load. (Checked
    here, before pyspark.sql.connect is imported: its own check ends a process whose
    ``__main__`` has no file, as ``python -c`` has, taking it for a doctest run.)"""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise unavailable(f"the Spark backend needs pyspark and pyarrow: {_INSTALL}") from None
    missing = []
    for module, package in _CLIENT.items():
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(package)
    if missing:
        raise unavailable(f"Spark Connect (sc://) needs the Connect client's packages, and "
                          f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} "
                          f"missing: {_INSTALL}")
    try:
        from pyspark.sql.connect.utils import check_dependencies
        check_dependencies()  # their versions
    except ImportError as error:  # pyspark's PySparkImportError names the package
        raise unavailable(f"Spark Connect (sc://) needs newer client packages "
                          f"({_first_line(error)}): {_INSTALL}") from None


def _reach(channel: Any, url: str, unavailable: type[Exception], grpc: Any) -> None:
    """SparkUnavailable unless a gRPC server answers at the channel's address soon."""
    if not any(os.environ.get(name) for name in _PROXIES):  # refused: say so at once
        host, _, port = channel.endpoint.rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)), CONNECT_TIMEOUT).close()
        except ConnectionRefusedError:
            raise unavailable(f"no Spark Connect server at {channel.endpoint} ({url}): the "
                              "connection was refused; start one (pyspark's "
                              "sbin/start-connect-server.sh), or check the address") from None
        except (OSError, ValueError):
            pass  # gRPC says below
    probe = channel.toChannel()
    try:
        grpc.channel_ready_future(probe).result(timeout=CONNECT_TIMEOUT)
    except grpc.FutureTimeoutError:
        raise unavailable(f"no Spark Connect server answered at {channel.endpoint} ({url}) "
                          f"within {CONNECT_TIMEOUT:g} s: start one (pyspark's "
                          "sbin/start-connect-server.sh), or check the address") from None
    finally:
        probe.close()


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Spark 4 deprecates spark.sql.parser.escapedStringLiterals: a warning at each use."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _first_line(error: BaseException) -> str:
    from overlog.runtime.spark import first_line

    return first_line(error, 300)


def _restore_mode(was: str | None) -> None:
    """Leave this process's pyspark as it was before a session that did not start."""
    if was is None:
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)


def _close(spark: SparkSession, was_remote: str | None) -> None:
    _release(spark)
    _restore_mode(was_remote)


def _release(spark: SparkSession) -> None:
    """Release the session on the server (its checkpoints with it), without waiting long
    for a server that is gone."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    try:
        spark.client.set_retry_policies([DefaultPolicy(max_retries=0)])
        spark.stop()
    except Exception:  # best effort: the server drops an idle session in time
        pass
