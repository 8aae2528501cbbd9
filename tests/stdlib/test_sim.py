"""The simulated network (stdlib/sim.py): nodes exchange real packets through links with
latency, jitter, loss, duplication and partitions, reproducibly under a seed; receivers
refuse what their program cannot take, and count it."""

from __future__ import annotations

import pytest

from overlog import Engine
from overlog.stdlib import wire
from overlog.stdlib.sim import Link, SimNetwork

PING = """
link(@"a", "b"). link(@"b", "a"). link(@"b", "c").
tick(@"a", 1). tick(@"a", 2). tick(@"a", 3).
ping[@Y, X, I] :- tick(@X, I), link(@X, Y).
got(@X, Y, I) :- ping[@X, Y, I].
"""


def network(program: str = PING, nodes: str = "abc", **settings) -> SimNetwork:
    net = SimNetwork(**settings)
    for name in nodes:
        Engine(program, address=name, clock=net.clock, handlers=net.handlers(),
               send_facts=False)
    return net


def test_tuples_travel_with_the_links_latency() -> None:
    net = network(latency=0.25)
    steps = [(address, report.step, report.time) for address, report in net.run()]
    assert steps == [("a", 1, 0.0), ("b", 1, 0.0), ("b", 2, 0.25), ("b", 3, 0.25)]
    assert net.engine("c").step_count == 0  # nothing to do
    assert net.engine("b").rows("got") == [("b", "a", 1), ("b", "a", 2), ("b", "a", 3)]
    assert net.engine("a").rows("got") == net.engine("c").rows("got") == []
    assert net.stats == {"sent": 1, "delivered": 1}  # one step's tuples: one packet
    assert net.nodes["b"].receiver.received == 3


def test_facts_go_to_the_node_their_location_names() -> None:
    net = network()
    net.run()
    assert [net.engine(n).rows("link") for n in "abc"] == [
        [("a", "b")], [("b", "a"), ("b", "c")], []]
    # one program on one node sends the facts located elsewhere
    alone = SimNetwork()
    Engine(PING, address="a", clock=alone.clock, handlers=alone.handlers())
    Engine("link(@X, Y) :- link(@X, Y).", address="b", clock=alone.clock,
           handlers=alone.handlers())
    alone.run()
    assert alone.engine("b").rows("link") == [("b", "a"), ("b", "c")]


def test_a_lossy_network_loses_packets_and_the_seed_fixes_which() -> None:
    program = """
    link(@"a", "b").
    tick(@"a", I) :- periodic[@"a", _, 1, 20], I := f_now().
    ping[@Y, X, I] :- tick(@X, I), link(@X, Y).
    got(@X, Y, I) :- ping[@X, Y, I].
    """
    runs = []
    for _ in range(2):
        net = network(program, "ab", seed=7, loss=0.5)
        net.run()
        runs.append((net.engine("b").rows("got"), dict(net.stats)))
    assert runs[0] == runs[1]
    got, stats = runs[0]
    assert stats["sent"] == 20 and stats["lost"] + stats["delivered"] == 20
    assert 0 < stats["lost"] < 20 and len(got) == stats["delivered"]
    other = network(program, "ab", seed=8, loss=0.5)
    other.run()
    assert other.engine("b").rows("got") != got  # (these two seeds lose different pings)


def test_duplicates_arrive_twice_and_count_once() -> None:
    net = network(duplicate=1.0, jitter=0.5, seed=3)
    net.run()
    assert net.stats == {"sent": 1, "duplicated": 1, "delivered": 2}
    assert net.nodes["b"].receiver.received == 6
    assert net.engine("b").rows("got") == [("b", "a", 1), ("b", "a", 2), ("b", "a", 3)]


def test_jitter_reorders() -> None:
    program = """
    link(@"a", "b").
    tick(@"a", I) :- periodic[@"a", _, 1, 6], I := f_now().
    ping[@Y, X, I] :- tick(@X, I), link(@X, Y).
    """
    net = network(program, "ab", seed=1, latency=0.1, jitter=3.0)
    arrived: list[int] = []
    net.engine("b").register_listener("ping", None, lambda row: arrived.append(row[2]))
    net.run()
    assert sorted(arrived) == [1, 2, 3, 4, 5, 6]
    assert arrived != sorted(arrived)
    again = network(program, "ab", seed=1, latency=0.1, jitter=3.0)
    repeat: list[int] = []
    again.engine("b").register_listener("ping", None, lambda row: repeat.append(row[2]))
    again.run()
    assert repeat == arrived


def test_a_partition_drops_packets_between_its_sides_until_healed() -> None:
    program = """
    link(@"a", "b").
    tick(@"a", I) :- periodic[@"a", _, 1, 4], I := f_now().
    ping[@Y, X, I] :- tick(@X, I), link(@X, Y).
    got(@X, Y, I) :- ping[@X, Y, I].
    """
    net = network(program, "ab", latency=0.5)
    net.partition(["a"], ["b"])
    net.run(until=2.2)  # ticks 1 and 2 leave; 1 is cut off, 2 is in flight at the heal
    net.heal()
    net.run()
    assert net.engine("b").rows("got") == [("b", "a", 2), ("b", "a", 3), ("b", "a", 4)]
    assert net.stats == {"sent": 4, "delivered": 3, "partitioned": 1}
    net = network(program, "ab", latency=0.5)
    net.link("a", "b", loss=1.0, both=False)
    net.run()
    assert net.stats == {"sent": 4, "lost": 4}


def test_what_a_receiver_cannot_take_is_dropped_counted_and_reported() -> None:
    reported: list[str] = []
    net = network(nodes="ab", report=reported.append)
    net.run()
    packet = wire.encode("x", [
        ("event", "ping", ("b", "x", 9)),  # taken
        ("event", "nosuch", ("b",)),
        ("insert", "ping", ("b", "x", 9)),
        ("event", "ping", ("b", "x")),
        ("event", "ping", ("a", "x", 9)),
        ("insert", "got", ("b", "x", 10)),  # taken
    ])
    receiver = net.nodes["b"].receiver
    receiver.take(packet, "10.0.0.9:7")
    receiver.take(b"junk", "10.0.0.9:7")
    receiver.take(wire.encode("x", [], b"secret"))
    net.run()
    assert net.engine("b").rows("got") == [
        ("b", "a", 1), ("b", "a", 2), ("b", "a", 3), ("b", "x", 9), ("b", "x", 10)]
    assert dict(receiver.dropped) == {"unknown relation": 1, "operation": 1, "arity": 1,
                                      "misaddressed": 1, "malformed": 1,
                                      "unauthenticated": 1}
    assert reported == [
        "overlog: b: dropped a tuple from 'x': no relation `nosuch` it receives",
        "overlog: b: dropped a tuple from 'x': insert of event relation `ping`",
        "overlog: b: dropped a tuple from 'x': `ping` with 2 fields, not 3",
        "overlog: b: dropped a tuple from 'x': `ping` addressed to 'a'",
        "overlog: b: dropped a packet from 10.0.0.9:7: not an overlog packet (no magic bytes)",
        "overlog: b: dropped a packet: packet has an HMAC, and this node no secret"]


def test_reports_of_one_reason_stop_after_ten() -> None:
    reported: list[str] = []
    net = network(nodes="ab", report=reported.append)
    for _ in range(12):
        net.nodes["a"].receiver.take(b"junk")
    assert net.dropped("a") == {"malformed": 12}
    assert len(reported) == 10
    assert reported[-1] == ("overlog: a: dropped a packet: not an overlog packet (no magic "
                            "bytes) (further ones are counted, not reported)")


def test_a_shared_secret_authenticates_packets() -> None:
    net = network(secret=b"k")
    net.run()
    assert net.engine("b").rows("got") == [("b", "a", 1), ("b", "a", 2), ("b", "a", 3)]
    net.nodes["b"].receiver.take(wire.encode("x", [("event", "ping", ("b", "x", 4))]))
    assert net.dropped("b") == {"unauthenticated": 1}


def test_a_tuple_too_big_for_a_packet_is_not_sent() -> None:
    reported: list[str] = []
    net = network("far(@Y, S) :- big(@X, Y, S).", "ab", report=reported.append)
    net.engine("a").insert("big", ("a", "b", "x" * 70_000))
    net.engine("a").insert("big", ("a", "b", "y"))
    net.run()
    assert net.engine("b").rows("far") == [("b", "y")]
    assert net.stats == {"sent": 1, "delivered": 1, "oversized": 1}
    assert reported == ["overlog: a: not sent to b: 1 tuple(s) too large for a packet "
                        "(more than 65,491 bytes encoded)"]


def test_nodes_join_with_their_own_address_on_the_networks_clock() -> None:
    net = network(nodes="a")
    with pytest.raises(ValueError, match="two nodes with address 'a'"):
        Engine(PING, address="a", clock=net.clock, handlers=net.handlers())
    with pytest.raises(ValueError, match=r"a node of a SimNetwork runs on its clock: "
                                         r"Engine\(\.\.\., clock=network.clock\)"):
        Engine(PING, address="z", handlers=net.handlers())


@pytest.mark.parametrize(("settings", "message"), [
    ({"latency": -1}, "latency must be >= 0 seconds, not -1"),
    ({"jitter": float("nan")}, "jitter must be >= 0 seconds, not nan"),
    ({"loss": 1.5}, r"loss must be a probability in \[0, 1\], not 1.5"),
    ({"duplicate": -0.1}, r"duplicate must be a probability in \[0, 1\], not -0.1"),
])
def test_bad_link_settings_are_refused(settings: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Link(**settings)
