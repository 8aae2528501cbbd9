"""The wire format (stdlib/wire.py): every value round-trips exactly, packets split to a size,
and whatever is not a well-formed packet is refused with its reason."""

from __future__ import annotations

import contextlib
import math
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from overlog.limits import MAX_NESTING, recursion_room
from overlog.stdlib import wire
from overlog.values import FALSE, TRUE

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(1 << 200), max_value=1 << 200),
    st.floats(allow_nan=False), st.text())
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4).map(tuple),
                      max_leaves=12)
messages = st.lists(st.tuples(st.sampled_from(wire.OPS), st.text(min_size=1, max_size=10),
                              st.lists(values, max_size=5).map(tuple)), max_size=6)


def same(a, b) -> bool:
    """Equal with types: 1, 1.0 and True differ; -0.0 is not 0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return struct.pack(">d", a) == struct.pack(">d", b)
    return a == b


@given(st.text(max_size=12), messages, st.sampled_from([None, b"k", b"secret" * 10]))
def test_every_value_round_trips(sender, sent, secret) -> None:
    packet = wire.decode(wire.encode(sender, sent, secret), secret)
    assert packet.sender == sender
    assert len(packet.messages) == len(sent)
    for (op, relation, row), (op2, relation2, row2) in zip(sent, packet.messages, strict=True):
        assert (op, relation) == (op2, relation2)
        assert same(tuple(row), row2)


def test_the_bytes_are_as_documented() -> None:
    data = wire.encode("a", [("insert", "p", (None, True, -1, 1 << 70, 0.5, "é", (1,)))])
    assert data == (b"OL\x01\x00" b"\x01a" b"\x01"  # magic, version, flags, sender, count
                    b"\x01\x01p\x07"  # insert, relation, arity
                    b"\x00" b"\x02" b"\x03\x01"  # null, true, -1 (zigzag 1)
                    b"\x04\x09\x40" + bytes(8) +  # 2**70 in 9 bytes
                    b"\x05" + struct.pack(">d", 0.5) + b"\x06\x02\xc3\xa9" b"\x07\x01\x03\x02")


def test_the_engines_own_values_encode_as_their_python_values() -> None:
    assert wire.encode("a", [("event", "e", (TRUE, FALSE))]) == wire.encode(
        "a", [("event", "e", (True, False))])
    with pytest.raises(ValueError, match=r"not an Overlog value: \{1\}"):
        wire.encode("a", [("event", "e", ({1},))])


def test_packets_split_at_a_size() -> None:
    encoded = [wire.encode_message("insert", "r", (i, "x" * 20)) for i in range(50)]
    out = list(wire.packets("node", encoded, 200))
    assert all(len(p) <= 200 for p in out) and len(out) > 1
    rows = [row for p in out for _, _, row in wire.decode(p).messages]
    assert rows == [(i, "x" * 20) for i in range(50)]
    big = wire.encode_message("insert", "r", ("y" * 1000,))
    assert wire.room("node", 200) < len(big)
    assert len(wire.frame("node", [b"m" * wire.room("node", 200)] * 1)) <= 200
    assert len(wire.frame("node", [b"m" * wire.room("node", 200, b"k")], b"k")) <= 200


GOOD = wire.encode("a", [("insert", "p", (1, "x"))])


@pytest.mark.parametrize(("data", "reason", "message"), [
    (b"", "malformed", "not an overlog packet (no magic bytes)"),
    (b"XX\x01\x00", "malformed", "not an overlog packet (no magic bytes)"),
    (b"OL", "malformed", "packet ends early at byte 2"),
    (b"OL\x02\x00", "version", "wire version 2, this node speaks 1"),
    (b"OL\x01\x04\x00\x00", "malformed", "unknown flags 0x04 at byte 3"),
    (GOOD[:-1], "malformed", "1 bytes announced, 0 left at byte 15"),
    (GOOD + b"\x00", "malformed", "1 bytes after the last message at byte 16"),
    (b"OL\x01\x00\x01a\x01\x04\x01p\x00", "malformed", "unknown operation 4 at byte 7"),
    (b"OL\x01\x00\x01a\x01\x01\x01p\x01\x09", "malformed", "unknown value tag 9 at byte 11"),
    (b"OL\x01\x00\x01a\x01\x01\x01p\x09\x00", "malformed",
     "9 values announced in 1 bytes at byte 11"),
    (b"OL\x01\x00\x05a", "malformed", "5 bytes announced, 1 left at byte 5"),
    (b"OL\x01\x00\x02\xff\xfe\x00", "malformed", "string is not UTF-8 at byte 7"),
    (b"OL\x01\x00" + b"\xff" * 11, "malformed", "varint longer than 10 bytes at byte 14"),
    (b"OL\x01\x00\x01a\x01\x01\x01p\x01\x05" + struct.pack(">d", math.nan), "malformed",
     "NaN is not an Overlog value at byte 20"),
    (b"OL\x01\x00\x01a\x01\x01\x01p\x01\x07\xff\xff\x03", "malformed",
     "a list of 65,535 values in 0 bytes at byte 15"),
    (b"OL\x01\x00\x01a\x01\x01\x01p\x01\x04\xff\xff\x03", "malformed",
     "an int of 65,535 bytes (at most 41,666) at byte 15"),
    (b"OL\x01\x00\x01a\x01\x01\x01p\x01\x03" + b"\xff" * 9 + b"\x7f", "malformed",
     "int of more than 64 bits under tag 3 at byte 22"),
])
def test_what_is_not_a_packet_is_refused(data: bytes, reason: str, message: str) -> None:
    with pytest.raises(wire.WireError) as caught:
        wire.decode(data)
    assert (caught.value.reason, str(caught.value)) == (reason, message)


def test_lists_nest_at_most_the_limit() -> None:
    deep: tuple = ()
    for _ in range(MAX_NESTING):
        deep = (deep,)
    data = wire.encode("a", [("event", "e", deep)])
    with recursion_room():  # comparing values this deep takes Python's recursion too
        assert wire.decode(data).messages[0][2] == deep
    with pytest.raises(ValueError, match=f"lists nest deeper than {MAX_NESTING}"):
        wire.encode("a", [("event", "e", ((deep,),))])
    data = b"OL\x01\x00\x01a\x01\x00\x01e\x01" + b"\x07\x01" * (MAX_NESTING + 1) + b"\x00"
    with pytest.raises(wire.WireError, match=f"lists nest deeper than {MAX_NESTING} at byte"):
        wire.decode(data)


def test_authentication() -> None:
    signed = wire.encode("a", [("insert", "p", (1,))], b"key")
    assert wire.decode(signed, b"key").messages == [("insert", "p", (1,))]
    cases = [(signed, b"other", "packet's HMAC does not match the secret"),
             (signed[:-33] + b"\x04" + signed[-32:], b"key",
              "packet's HMAC does not match the secret"),
             (signed, None, "packet has an HMAC, and this node no secret"),
             (GOOD, b"key", "packet has no HMAC, and this node needs one"),
             (signed[:20], b"key", "packet's HMAC does not match the secret")]
    for data, secret, message in cases:
        with pytest.raises(wire.WireError) as caught:
            wire.decode(data, secret)
        assert (caught.value.reason, str(caught.value)) == ("unauthenticated", message)


@given(st.binary(max_size=64))
def test_random_bytes_never_raise_anything_but_a_wire_error(data: bytes) -> None:
    with contextlib.suppress(wire.WireError):
        wire.decode(b"OL\x01\x00" + data)


@given(messages, st.data())
def test_mutated_packets_never_raise_anything_but_a_wire_error(sent, data) -> None:
    packet = bytearray(wire.encode("node", sent))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(packet) - 1))
        packet[at] = data.draw(st.integers(0, 255))
    with contextlib.suppress(wire.WireError):
        wire.decode(bytes(packet))
