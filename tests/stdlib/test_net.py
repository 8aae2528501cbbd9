"""Real nodes (stdlib/net.py, ``overlog run --listen``): UDP and TCP between processes on
127.0.0.1 reach what the simulated network reaches; a listening node takes any bytes thrown
at it without stopping, and counts what it refused."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from overlog import Engine
from overlog.stdlib import periodic, wire
from overlog.stdlib.net import TcpTransport, UdpTransport
from tests.goldens import run_cli

ROOT = Path(__file__).parents[2]
PROGRAM = """
link(@"a", "b"). link(@"b", "c"). link(@"c", "a"). link(@"a", "c").
hello[@Y, X] :- periodic[@X, _, 0.1, infinity], link(@X, Y).
nbr(@X, Y) :- hello[@X, Y].
reach(@X, Y) :- nbr(@X, Y).
reach(@X, Z) :- nbr(@X, Y), reach(@Y, Z).
"""


def free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def node_command(name: str, ports: dict[str, int], transport: str, *extra: str) -> list[str]:
    peers = [f"--peer={n}=127.0.0.1:{p}" for n, p in ports.items() if n != name]
    return [sys.executable, "-m", "overlog", "run", "p.olg", "--address", name,
            "--listen", f"127.0.0.1:{ports[name]}", "--transport", transport, *peers,
            "--format", "jsonl", "--print", "nbr", "--print", "reach", *extra]


def final_rows(text: str, node: str | None = None) -> list[tuple]:
    records = [json.loads(line) for line in text.splitlines()]
    return sorted((r["table"], *r["row"]) for r in records if r.get("node") == node)


@pytest.mark.parametrize("transport", ["udp", "tcp"])
def test_three_processes_reach_what_the_simulated_network_reaches(
        tmp_path: Path, transport: str) -> None:
    (tmp_path / "p.olg").write_text(PROGRAM)
    code, out, err = run_cli(["run", "p.olg", "--nodes", "a,b,c", "--latency", "1",
                              "--until", "5", "--format", "jsonl", "--print", "nbr",
                              "--print", "reach"], tmp_path)
    assert (code, err) == (0, "")
    expected = {name: final_rows(out, name) for name in "abc"}
    assert expected["b"] == [("nbr", "b", "a"), ("reach", "b", "a"), ("reach", "b", "b"),
                             ("reach", "b", "c")]
    ports = dict(zip("abc", free_ports(3), strict=True))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    processes = {name: subprocess.Popen(node_command(name, ports, transport, "--until", "5"),
                                        cwd=tmp_path, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, env=env)
                 for name in "abc"}
    results = {name: p.communicate(timeout=60) for name, p in processes.items()}
    for name, (out, err) in results.items():
        assert processes[name].returncode == 0, err
        assert final_rows(out) == expected[name], (name, err)


class Node:
    """An engine with a real transport in this process, stepped by ``until``."""

    def __init__(self, program: str, address: str, transport, **options) -> None:
        self.reported: list[str] = []
        self.net = transport(("127.0.0.1", 0), report=self.reported.append, **options)
        self.engine = Engine(program, address=address, clock="real",
                             handlers=[periodic.install, self.net], send_facts=False)

    def until(self, done, seconds: float = 10.0) -> None:
        deadline = time.monotonic() + seconds
        while not done():
            assert time.monotonic() < deadline, "timed out"
            if self.engine.idle:
                time.sleep(0.005)
            else:
                self.engine.step()

    def close(self) -> None:
        self.net.close()


TAKER = 'materialize(seen, infinity, infinity, keys(1, 2)).\nseen(@X, Y) :- hi[@X, Y].\n'


def junk(rng: random.Random, valid: bytes) -> bytes:
    """Random bytes, or a valid packet with a few bytes changed, cut or extended."""
    kind = rng.randrange(4)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80)))
    data = bytearray(valid)
    if kind == 1:
        for _ in range(rng.randrange(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif kind == 2:
        del data[rng.randrange(len(data)):]
    else:
        data += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
    return bytes(data)


def expected_outcome(packets: list[bytes]) -> tuple[int, Counter]:
    """What a node running TAKER at address "n" takes of ``packets`` and refuses, by the
    rules docs/distribution.md gives ("What a node accepts")."""
    taken, refused = 0, Counter()
    for data in packets:
        try:
            messages = wire.decode(data).messages
        except wire.WireError as error:
            refused[error.reason] += 1
            continue
        for op, relation, row in messages:
            if relation not in ("hi", "seen"):
                refused["unknown relation"] += 1
            elif (op == "event") != (relation == "hi"):
                refused["operation"] += 1
            elif len(row) != 2:
                refused["arity"] += 1
            elif row[0] != "n":
                refused["misaddressed"] += 1
            else:
                taken += 1
    return taken, refused


@pytest.mark.parametrize("transport", [UdpTransport, TcpTransport])
def test_a_listening_node_takes_junk_and_keeps_going(transport) -> None:
    node = Node(TAKER, "n", transport)
    try:
        rng = random.Random(5)
        sent = []
        for i in range(300):
            valid = wire.encode("x", [("event", "hi", ("n", i))])
            sent.append(junk(rng, valid))
        good = [wire.encode("x", [("event", "hi", ("n", 1000 + i))]) for i in range(3)]
        host, port = node.net.listen
        if transport is UdpTransport:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
                for data in [*sent, *good]:
                    client.sendto(data, (host, port))
                    time.sleep(0.0005)
        else:  # frames; a frame over the limit closes the connection: then a new one
            for data in [*sent, *good]:
                with socket.create_connection((host, port)) as client:
                    client.sendall(len(data).to_bytes(4, "big") + data)
            with socket.create_connection((host, port)) as client:
                client.sendall((1 << 30).to_bytes(4, "big"))
        taken = {("n", 1000), ("n", 1001), ("n", 1002)}
        node.until(lambda: taken <= set(node.engine.rows("seen")))
        time.sleep(0.2)
        node.until(lambda: node.engine.idle)
        if transport is TcpTransport:
            node.until(lambda: "oversized" in node.net.receiver.dropped)
            assert node.reported[-1].endswith("(at most 16,777,216); connection closed")
        taken, refused = expected_outcome([*sent, *good])
        if transport is TcpTransport:
            refused["oversized"] += 1
        assert node.net.stats["packets received"] == 303
        assert (node.net.receiver.received, node.net.receiver.dropped) == (taken, refused)
    finally:
        node.close()


@pytest.mark.parametrize("transport", [UdpTransport, TcpTransport])
def test_two_nodes_in_one_process_with_a_shared_secret(transport) -> None:
    program = ('link(@"a", "b").\nping[@Y, X] :- periodic[@X, _, 0.05, 1], link(@X, Y).\n'
               "got(@X, Y) :- ping[@X, Y].\n")
    b = Node(program, "b", transport, secret=b"key")
    a = Node(program, "a", transport, secret=b"key",
             peers={"b": b.net.listen})
    stranger = Node(program, "a", transport, peers={"b": b.net.listen})
    try:
        deadline = time.monotonic() + 10
        while not (b.engine.rows("got") and b.net.receiver.dropped):
            assert time.monotonic() < deadline
            for node in (a, b, stranger):
                if not node.engine.idle:
                    node.engine.step()
            time.sleep(0.002)
        assert b.engine.rows("got") == [("b", "a")]
        assert b.net.receiver.dropped == {"unauthenticated": 1}
        (said,) = b.reported
        assert said.startswith("overlog: b: dropped a packet from 127.0.0.1:")
        assert said.endswith(": packet has no HMAC, and this node needs one")
    finally:
        for node in (a, b, stranger):
            node.close()


def test_sigterm_stops_a_listening_node_cleanly(tmp_path: Path) -> None:
    (tmp_path / "p.olg").write_text(PROGRAM)
    (port,) = free_ports(1)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "overlog", "run", "p.olg", "--address", "b", "--listen",
         f"127.0.0.1:{port}", "--transport", "udp", "--print", "link"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # until it listens: then it counts the junk
            client.sendto(b"junk", ("127.0.0.1", port))
            time.sleep(0.2)
            if process.poll() is not None:
                break
            try:
                probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                probe.bind(("127.0.0.1", port))
                probe.close()
            except OSError:  # taken: it listens
                break
        client.sendto(b"junk", ("127.0.0.1", port))
    time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert out == 'link (1 row)\n  "b"  "c"\n'
    assert "overlog: b: dropped a packet from 127.0.0.1:" in err
    assert err.splitlines()[-1].startswith("overlog: b dropped: ")


@pytest.mark.parametrize(("extra", "message"), [
    (["--listen", "127.0.0.1:1"], "--listen HOST:PORT and --transport udp|tcp go together"),
    (["--transport", "udp"], "--listen HOST:PORT and --transport udp|tcp go together"),
    (["--listen", "nowhere", "--transport", "udp"], "--listen takes HOST:PORT, not 'nowhere'"),
    (["--listen", "127.0.0.1:1", "--transport", "udp", "--clock", "sim"],
     "a node that listens runs on the real clock: --clock real (the default with --listen)"),
    (["--listen", "127.0.0.1:1", "--transport", "udp", "--peer", "b"],
     "--peer: takes NAME=HOST:PORT, not 'b'"),
    (["--listen", "127.0.0.1:1", "--transport", "udp", "--peers", "peers.txt"],
     "peers.txt:2: takes NAME=HOST:PORT, not 'c=somewhere'"),
    (["--listen", "127.0.0.1:1", "--transport", "udp", "--secret-file", "empty"],
     "--secret-file: empty is empty"),
    (["--listen", "127.0.0.1:1", "--transport", "udp", "--secret-file", "none"],
     "--secret-file: cannot read none: No such file or directory"),
    (["--peer", "b=1.2.3.4:5"], "--peer, --peers and --secret-file go with --listen (and "
     "--secret-file with --nodes)"),
    (["--listen", "127.0.0.1:1", "--transport", "tcp", "--nodes", "a,b"],
     "--listen runs one real node; --nodes runs simulated ones"),
])
def test_bad_network_options_are_usage_errors(tmp_path: Path, extra: list[str],
                                              message: str) -> None:
    (tmp_path / "p.olg").write_text(PROGRAM)
    (tmp_path / "peers.txt").write_text("# peers\nc=somewhere\n")
    (tmp_path / "empty").write_text("\n")
    code, out, err = run_cli(["run", "p.olg", *extra], tmp_path)
    assert (code, out, err) == (2, "", f"overlog: error: {message}\n")


def test_a_port_in_use_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "p.olg").write_text(PROGRAM)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        code, out, err = run_cli(["run", "p.olg", "--listen", f"127.0.0.1:{port}",
                                  "--transport", "udp"], tmp_path)
    assert (code, out) == (2, "")
    assert err == f"overlog: error: --listen 127.0.0.1:{port}: Address already in use\n"
