"""Real network transports (docs/distribution.md, "Real nodes"): UDP datagrams and TCP
streams between processes, each on threads beside the step loop.

A step's tuples for one destination leave together after the step (``on_sent``), as
packets of the wire format (stdlib/wire.py): one datagram each over UDP (at most 65,507
bytes), or frames of a 4-byte big-endian length and the packet over TCP, on one connection
per destination that is opened when first needed and opened again, with backoff, when it
breaks. What arrives goes through the node's ``Receiver``: checked, counted, delivered.
Addresses are strings: ``"host:port"`` is an endpoint as it is; another name is looked up
in ``peers``.
"""

from __future__ import annotations

import collections
import socket
import struct
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from overlog.runtime.events import EventAPI
from overlog.stdlib import wire
from overlog.stdlib.transport import Receiver, Transport

DATAGRAM = 65_507  # the largest UDP payload over IPv4
FRAME = 1 << 24  # the largest TCP frame a node takes (16 MiB)
QUEUE = 10_000  # packets waiting for one TCP destination; past it, the oldest are dropped
CONNECTIONS = 256  # connections a TCP node reads at once; more are closed at once
_LENGTH = struct.Struct(">I")

Endpoint = tuple[str, int]


def parse_endpoint(text: str) -> Endpoint:
    """``HOST:PORT`` (``[v6]:PORT`` too); ValueError otherwise."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"not HOST:PORT: {text!r}")
    return host.strip("[]"), int(port)


class _Net(Transport):
    """What both transports share: endpoints, the batch of a step, the receiver, stats."""

    max_size = DATAGRAM

    def __init__(self, listen: Endpoint, peers: Mapping[str, Endpoint] | None = None,
                 secret: bytes | None = None,
                 report: Callable[[str], None] | None = None) -> None:
        self.listen = listen
        self.peers = dict(peers or {})
        self.secret = secret
        # what cannot be sent or taken (stderr by default, as the receiver's refusals)
        self.report = report or (lambda text: print(text, file=sys.stderr))
        self.stats: Counter[str] = Counter()
        self._stats_lock = threading.Lock()
        self.closed = threading.Event()
        self.threads: list[threading.Thread] = []

    def __call__(self, engine: EventAPI) -> None:
        super().__call__(engine)
        self.receiver = Receiver(engine, self.support, self.secret, self.max_size,
                                 self.report)
        engine.on_sent(self.flush)
        self._open()

    def _open(self) -> None:
        raise NotImplementedError

    def _thread(self, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True,
                                  name=f"overlog-{type(self).__name__}")
        self.threads.append(thread)
        thread.start()

    def endpoint(self, address: Any) -> Endpoint | None:
        if address in self.peers:
            return self.peers[address]
        try:
            return parse_endpoint(str(address))
        except ValueError:
            return None

    def flush(self) -> None:
        """Send the step's batches (called after each step's sends)."""
        source = str(self.engine.address)
        for address, fit, too_large in self.batches(self.max_size, self.secret, self._say):
            if too_large:
                self._count("oversized", too_large)
            target = self.endpoint(address)
            if target is None:
                self._count("unknown address", len(fit))
                self._say(f"no endpoint for address {address!r} (give it with --peer "
                          f"NAME=HOST:PORT): {len(fit)} tuple(s) not sent")
                continue
            for packet in wire.packets(source, fit, self.max_size, self.secret):
                self._send(target, packet)
            self._count("tuples sent", len(fit))

    def _send(self, target: Endpoint, packet: bytes) -> None:
        raise NotImplementedError

    def _until_closed(self, wait: Callable[[], Any]) -> Iterator[Any]:
        """What ``wait()`` returns, over and over, until the transport closes (a socket
        with a timeout: a timeout or an error before closing just waits again)."""
        while not self.closed.is_set():
            try:
                yield wait()
            except OSError:  # (TimeoutError included)
                continue

    def _take(self, data: bytes, source: str) -> None:
        """A packet to the receiver; a failure of ours is reported, and the thread goes on
        receiving."""
        try:
            self.receiver.take(data, source)
        except Exception as error:
            self._count("receive errors")
            self._say(f"a packet from {source} failed: {type(error).__name__}: {error}")

    def _count(self, what: str, n: int = 1) -> None:
        with self._stats_lock:
            self.stats[what] += n

    def _say(self, text: str) -> None:
        self.report(f"overlog: {self.engine.address}: {text}")

    def close(self) -> None:
        self.closed.set()


class UdpTransport(_Net):
    """Datagrams: what is lost is lost (protocols over UDP refresh their state)."""

    def _open(self) -> None:
        family = socket.AF_INET6 if ":" in self.listen[0] else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_DGRAM)
        # room for a burst of packets while the receiving thread decodes (the kernel
        # caps it at net.core.rmem_max)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 23)
        self.socket.bind(self.listen)
        self.listen = self.socket.getsockname()[:2]
        self.socket.settimeout(0.2)
        self._thread(self._serve)

    def _serve(self) -> None:
        for data, source in self._until_closed(lambda: self.socket.recvfrom(1 << 16)):
            self._count("packets received")
            self._take(data, f"{source[0]}:{source[1]}")

    def _send(self, target: Endpoint, packet: bytes) -> None:
        try:
            self.socket.sendto(packet, target)
            self._count("packets sent")
        except OSError as error:
            self._count("send errors")
            self._say(f"cannot send to {target[0]}:{target[1]}: {error.strerror or error}")

    def close(self) -> None:
        super().close()
        self.socket.close()


class TcpTransport(_Net):
    """Streams: one connection per destination, in order; a broken one is opened again
    (after 0.1 s, doubling to 2 s) and the packet it was sending is sent again."""

    max_size = FRAME

    def _open(self) -> None:
        family = socket.AF_INET6 if ":" in self.listen[0] else socket.AF_INET
        self.server = socket.socket(family, socket.SOCK_STREAM)
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(self.listen)
        self.listen = self.server.getsockname()[:2]
        self.server.listen(64)
        self.server.settimeout(0.2)
        self.queues: dict[Endpoint, collections.deque[bytes]] = {}
        self.ready = threading.Condition()
        self._thread(self._accept)

    def _accept(self) -> None:
        for connection, source in self._until_closed(self.server.accept):
            self.threads = [t for t in self.threads if t.is_alive()]
            if len(self.threads) > CONNECTIONS:  # one thread each: refuse beyond the cap
                connection.close()
                self._count("connections refused")
                continue
            self._thread(self._read, connection, f"{source[0]}:{source[1]}")

    def _read(self, connection: socket.socket, source: str) -> None:
        connection.settimeout(0.5)
        with connection:
            while not self.closed.is_set():
                head = self._exactly(connection, 4)
                if head is None:
                    return
                (size,) = _LENGTH.unpack(head)
                if size > self.max_size:  # a stream cannot be resynchronized: hang up
                    self.receiver._drop("oversized", f"a frame from {source} of {size:,} "
                                        f"bytes (at most {self.max_size:,}); connection closed")
                    return
                body = self._exactly(connection, size)
                if body is None:
                    return
                self._count("packets received")
                self._take(body, source)

    def _exactly(self, connection: socket.socket, size: int) -> bytes | None:
        chunks = bytearray()
        while len(chunks) < size:
            try:
                chunk = connection.recv(min(size - len(chunks), 1 << 20))
            except TimeoutError:
                if self.closed.is_set():
                    return None
                continue
            except OSError:
                return None
            if not chunk:
                return None
            chunks += chunk
        return bytes(chunks)

    def _send(self, target: Endpoint, packet: bytes) -> None:
        with self.ready:
            queue = self.queues.get(target)
            if queue is None:
                queue = self.queues[target] = collections.deque()
                self._thread(self._sender, target, queue)
            if len(queue) >= QUEUE:
                queue.popleft()
                self._count("queue overflow")
            queue.append(_LENGTH.pack(len(packet)) + packet)
            self.ready.notify_all()

    def _sender(self, target: Endpoint, queue: collections.deque[bytes]) -> None:
        connection: socket.socket | None = None
        delay = 0.1
        while not self.closed.is_set():
            with self.ready:
                while not queue and not self.closed.is_set():
                    self.ready.wait(0.5)
                if self.closed.is_set():
                    break
                frame = queue[0]
            try:
                if connection is None:
                    connection = socket.create_connection(target, timeout=2.0)
                    delay = 0.1
                connection.sendall(frame)
            except OSError as error:
                if connection is not None:
                    connection.close()
                    connection = None
                self._count("reconnects")
                if self.stats["reconnects"] <= 3 or delay >= 2.0:
                    self._say(f"cannot send to {target[0]}:{target[1]} "
                              f"({error.strerror or error}); trying again")
                self.closed.wait(delay)
                delay = min(2.0, delay * 2)
                continue
            with self.ready:
                if queue and queue[0] is frame:
                    queue.popleft()
            self._count("packets sent")
        if connection is not None:
            connection.close()

    def pending(self) -> int:
        """Packets waiting to be sent."""
        with self.ready:
            return sum(len(queue) for queue in self.queues.values())

    def close(self) -> None:
        super().close()
        with self.ready:
            self.ready.notify_all()
        self.server.close()


def transport(kind: str, listen: Endpoint, peers: Mapping[str, Endpoint] | None = None,
              secret: bytes | None = None,
              report: Callable[[str], None] | None = None) -> _Net:
    """A ``udp`` or ``tcp`` transport listening on ``listen``."""
    cls = {"udp": UdpTransport, "tcp": TcpTransport}[kind]
    return cls(listen, peers, secret, report)


def drain(transports: list[Any], seconds: float) -> None:
    """Wait up to ``seconds`` for TCP transports to send what they hold."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(
            isinstance(t, TcpTransport) and t.pending() for t in transports):
        time.sleep(0.01)
