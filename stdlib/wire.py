"""The wire format of tuples between nodes (docs/distribution.md, "The wire format").

A packet carries the tuples one node sends another in one step::

    packet  = magic "OL" | version (1 byte, now 1) | flags (1 byte) | sender (string)
              | count (varint) | message * count | [HMAC-SHA256 of all before it: 32 bytes]
    message = op (1 byte: 0 event, 1 insert, 2 delete, 3 retract) | relation (string)
              | arity (varint) | value * arity
    value   = tag (1 byte) and its body:
              0 null | 1 false | 2 true
              | 3 int of at most 64 bits, zigzag varint
              | 4 any other int: varint byte count, then two's complement, big-endian
              | 5 float: IEEE 754 double, big-endian
              | 6 string: varint byte count, then UTF-8
              | 7 list: varint count, then values
    string  = varint byte count, then UTF-8;  varint = unsigned LEB128, at most 10 bytes

Flag bit 0 says the packet ends with an HMAC; other bits must be clear. ``decode`` takes
nothing on trust: every length is checked against what is left, lists nest at most
``MAX_NESTING`` deep, NaN (not an Overlog value) and malformed UTF-8 are refused, and each
refusal is a ``WireError`` whose ``reason`` names it for the drop counters.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from overlog.limits import MAX_INT_DIGITS, MAX_NESTING, recursion_room
from overlog.values import Bool

MAGIC = b"OL"
VERSION = 1
AUTHENTICATED = 0x01
MAC_BYTES = 32
OPS = ("event", "insert", "delete", "retract")
_CODES = {op: code for code, op in enumerate(OPS)}
_DOUBLE = struct.Struct(">d")
_LONG = 1 << 63
# an int's bytes under tag 4: about as many as an int of MAX_INT_DIGITS decimal digits takes
MAX_INT_BYTES = MAX_INT_DIGITS * 10 // 24


class WireError(ValueError):
    """A packet that cannot be taken: ``reason`` is a short name for the counters
    (malformed, version, unauthenticated), the message says what was wrong."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Packet:
    sender: str
    messages: list[tuple[str, str, tuple]]  # (op, relation, row)


# -- encoding ---------------------------------------------------------------------------

def _varint(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _string(out: bytearray, text: str) -> None:
    data = text.encode("utf-8")
    _varint(out, len(data))
    out += data


def _value(out: bytearray, value: Any, depth: int) -> None:
    kind = value.__class__
    if value is None:
        out.append(0)
    elif kind is Bool or kind is bool:
        out.append(2 if value else 1)
    elif kind is int:
        if -_LONG <= value < _LONG:
            out.append(3)
            _varint(out, (value << 1) ^ (value >> 63))
        else:
            data = value.to_bytes((value.bit_length() + 8) // 8, "big", signed=True)
            if len(data) > MAX_INT_BYTES:
                raise ValueError(f"an int of {len(data):,} bytes (at most {MAX_INT_BYTES:,})")
            out.append(4)
            _varint(out, len(data))
            out += data
    elif isinstance(value, float):
        out.append(5)
        out += _DOUBLE.pack(value)
    elif kind is str:
        out.append(6)
        _string(out, value)
    elif kind is tuple or kind is list:
        if depth >= MAX_NESTING:
            raise ValueError(f"lists nest deeper than {MAX_NESTING}")
        out.append(7)
        _varint(out, len(value))
        for item in value:
            _value(out, item, depth + 1)
    else:
        raise ValueError(f"not an Overlog value: {value!r}")


_HEADS: dict[tuple[str, str, int], bytes] = {}  # (op, relation, arity) -> message head


def encode_message(op: str, relation: str, row: tuple) -> bytes:
    """One message's bytes (ValueError for a value that is not an Overlog value)."""
    key = (op, relation, len(row))
    head = _HEADS.get(key)
    if head is None:
        start = bytearray([_CODES[op]])
        _string(start, relation)
        _varint(start, len(row))
        head = _HEADS[key] = bytes(start)
    out = bytearray(head)
    for value in row:  # ints and strings inline: most values are
        kind = value.__class__
        if kind is int and -_LONG <= value < _LONG:
            out.append(3)
            _varint(out, (value << 1) ^ (value >> 63))
        elif kind is str:
            data = value.encode("utf-8")
            out.append(6)
            _varint(out, len(data))
            out += data
        else:
            with recursion_room():
                _value(out, value, 0)
    return bytes(out)


def frame(sender: str, messages: list[bytes], secret: bytes | None = None) -> bytes:
    """A packet of encoded messages, with an HMAC when there is a secret."""
    out = bytearray(MAGIC)
    out += bytes([VERSION, AUTHENTICATED if secret is not None else 0])
    _string(out, sender)
    _varint(out, len(messages))
    for message in messages:
        out += message
    if secret is not None:
        out += hmac.digest(secret, bytes(out), hashlib.sha256)
    return bytes(out)


def encode(sender: str, messages: Iterable[tuple[str, str, tuple]],
           secret: bytes | None = None) -> bytes:
    """One packet of (op, relation, row) messages."""
    return frame(sender, [encode_message(*m) for m in messages], secret)


def room(sender: str, max_size: int, secret: bytes | None = None) -> int:
    """The largest message a packet of at most ``max_size`` bytes from ``sender`` holds."""
    name = len(sender.encode("utf-8"))
    head = len(MAGIC) + 2 + (max(name, 1).bit_length() + 6) // 7 + name  # sender's varint
    return max_size - head - 10 - (MAC_BYTES if secret is not None else 0)  # and count's


def packets(sender: str, messages: Iterable[bytes], max_size: int,
            secret: bytes | None = None) -> Iterator[bytes]:
    """Encoded messages as packets of at most ``max_size`` bytes each, in order; each
    message fits in a packet of its own (at most ``room`` bytes)."""
    overhead = max_size - room(sender, max_size, secret)
    batch: list[bytes] = []
    size = overhead
    for message in messages:
        if size + len(message) > max_size and batch:
            yield frame(sender, batch, secret)
            batch, size = [], overhead
        batch.append(message)
        size += len(message)
    if batch:
        yield frame(sender, batch, secret)


# -- decoding ---------------------------------------------------------------------------

_NAMES: dict[bytes, str] = {}  # relation names decoded


class _Reader:
    __slots__ = ("at", "data", "end")

    def __init__(self, data: bytes, end: int) -> None:
        self.data, self.at, self.end = data, 0, end

    def fail(self, message: str) -> WireError:
        return WireError("malformed", f"{message} at byte {self.at}")

    def take(self, n: int) -> bytes:
        if n > self.end - self.at:
            raise self.fail(f"{n:,} bytes announced, {self.end - self.at:,} left")
        chunk = self.data[self.at:self.at + n]
        self.at += n
        return chunk

    def byte(self) -> int:
        if self.at >= self.end:
            raise self.fail("packet ends early")
        b = self.data[self.at]
        self.at += 1
        return b

    def varint(self) -> int:
        at = self.at
        if at < self.end and self.data[at] < 0x80:  # one byte: most are
            self.at = at + 1
            return self.data[at]
        n = shift = 0
        for _ in range(10):
            b = self.byte()
            n |= (b & 0x7F) << shift
            if b < 0x80:
                return n
            shift += 7
        raise self.fail("varint longer than 10 bytes")

    def string(self) -> str:
        raw = self.take(self.varint())
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail("string is not UTF-8") from None

    def name(self) -> str:
        """A relation's name (the same few names over and over: decoded once each)."""
        size = self.varint()
        raw = self.take(size)
        found = _NAMES.get(raw)
        if found is None:
            try:
                found = raw.decode("utf-8")
            except UnicodeDecodeError:
                self.at -= size
                raise self.fail("string is not UTF-8") from None
            if len(_NAMES) < 10_000:
                _NAMES[raw] = found
        return found

    def value(self, depth: int) -> Any:
        at = self.at
        if at + 1 < self.end:  # a short string or a small int: most values are
            tag, size = self.data[at], self.data[at + 1]
            if size < 0x80:
                if tag == 6 and at + 2 + size <= self.end:
                    self.at = at + 2 + size
                    try:
                        return self.data[at + 2:at + 2 + size].decode("utf-8")
                    except UnicodeDecodeError:
                        self.at = at + 2
                        raise self.fail("string is not UTF-8") from None
                if tag == 3:
                    self.at = at + 2
                    return (size >> 1) ^ -(size & 1)
        tag = self.byte()
        if tag == 0:
            return None
        if tag in (1, 2):
            return tag == 2
        if tag == 3:
            n = self.varint()
            if n >= 1 << 64:
                raise self.fail("int of more than 64 bits under tag 3")
            return (n >> 1) ^ -(n & 1)
        if tag == 4:
            size = self.varint()
            if size > MAX_INT_BYTES:
                raise self.fail(f"an int of {size:,} bytes (at most {MAX_INT_BYTES:,})")
            return int.from_bytes(self.take(size), "big", signed=True)
        if tag == 5:
            number = _DOUBLE.unpack(self.take(8))[0]
            if number != number:
                raise self.fail("NaN is not an Overlog value")
            return number
        if tag == 6:
            return self.string()
        if tag == 7:
            if depth >= MAX_NESTING:
                raise self.fail(f"lists nest deeper than {MAX_NESTING}")
            count = self.varint()
            if count > self.end - self.at:  # each value takes a byte at least
                raise self.fail(f"a list of {count:,} values in {self.end - self.at:,} bytes")
            return tuple(self.value(depth + 1) for _ in range(count))
        self.at -= 1
        raise self.fail(f"unknown value tag {tag}")


def decode(data: bytes, secret: bytes | None = None) -> Packet:
    """A packet's sender and messages; WireError for anything not a well-formed packet of
    this version, authenticated with ``secret`` when there is one (and not authenticated
    when there is none)."""
    if data[:2] != MAGIC:
        raise WireError("malformed", "not an overlog packet (no magic bytes)")
    if len(data) < 4:
        raise WireError("malformed", "packet ends early at byte 2")
    if data[2] != VERSION:
        raise WireError("version", f"wire version {data[2]}, this node speaks {VERSION}")
    flags = data[3]
    if flags & ~AUTHENTICATED:
        raise WireError("malformed", f"unknown flags 0x{flags:02x} at byte 3")
    end = len(data)
    if flags & AUTHENTICATED:
        if secret is None:
            raise WireError("unauthenticated", "packet has an HMAC, and this node no secret")
        end -= MAC_BYTES
        if end < 4 or not hmac.compare_digest(
                hmac.digest(secret, data[:end], hashlib.sha256), data[end:]):
            raise WireError("unauthenticated", "packet's HMAC does not match the secret")
    elif secret is not None:
        raise WireError("unauthenticated", "packet has no HMAC, and this node needs one")
    reader = _Reader(data, end)
    reader.at = 4
    sender = reader.string()
    count = reader.varint()
    messages = []
    value = reader.value
    with recursion_room():
        for _ in range(count):
            code = reader.byte()
            if code >= len(OPS):
                reader.at -= 1
                raise reader.fail(f"unknown operation {code}")
            relation = reader.name()
            arity = reader.varint()
            if arity > end - reader.at:
                raise reader.fail(f"{arity:,} values announced in {end - reader.at:,} bytes")
            messages.append((OPS[code], relation, tuple([value(0) for _ in range(arity)])))
    if reader.at != end:
        raise reader.fail(f"{end - reader.at:,} bytes after the last message")
    return Packet(sender, messages)
