"""The example protocols in programs/ on a simulated network that loses, duplicates and
reorders packets, and is cut in two for a while: for several seeds, each ends in the state
the protocol promises (converged routes, detected failures, one commit decision)."""

from __future__ import annotations

from pathlib import Path

import pytest

from overlog import Engine
from overlog.stdlib.sim import SimNetwork

PROGRAMS = Path(__file__).parents[1] / "programs"
SEEDS = [1, 2, 3]
FAULTS = {"latency": 0.01, "jitter": 0.05, "loss": 0.1, "duplicate": 0.1}


def network(program: str, names: list[str], seed: int, **faults) -> SimNetwork:
    net = SimNetwork(seed=seed, **faults)
    text = (PROGRAMS / program).read_text()
    for name in names:
        Engine(text, address=name, clock=net.clock, handlers=net.handlers(),
               send_facts=False, seed=seed)
    return net


def rows(net: SimNetwork, relation: str) -> list[tuple]:
    return sorted(row for node in net.nodes for row in net.engine(node).rows(relation))


@pytest.mark.parametrize("seed", SEEDS)
def test_path_vector_reconverges_after_the_link_fails(seed: int) -> None:
    net = network("path_vector.olg", ["a", "b", "c", "d"], seed, **FAULTS)
    net.run(until=2)
    net.partition(["a", "b"], ["c", "d"])  # cut for two seconds, then healed
    net.run(until=4)
    net.heal()
    net.run(until=16)
    assert rows(net, "best") == [  # b-c is down from time 5
        ("a", "b", 1), ("a", "c", 6), ("a", "d", 5),
        ("b", "a", 1), ("b", "c", 7), ("b", "d", 6),
        ("c", "a", 6), ("c", "b", 7), ("c", "d", 1),
        ("d", "a", 5), ("d", "b", 6), ("d", "c", 1)]
    assert net.stats["lost"] and net.stats["duplicated"] and net.stats["partitioned"]


@pytest.mark.parametrize("seed", SEEDS)
def test_heartbeats_find_the_crashed_node(seed: int) -> None:
    net = network("heartbeat.olg", ["a", "b", "c"], seed, **FAULTS)
    net.run(until=1.5)
    net.partition(["a"], ["b", "c"])  # a short cut: shorter than a heartbeat's life
    net.run(until=2.5)
    net.heal()
    net.run(until=10)
    assert rows(net, "suspect") == [("a", "c"), ("b", "c")]


@pytest.mark.parametrize("seed", SEEDS)
def test_the_ring_closes(seed: int) -> None:
    names = ["n1", "n2", "n3", "n4", "n5"]
    net = network("ring.olg", names, seed, **{**FAULTS, "loss": 0.2})
    net.run(until=3)
    net.partition(["n1", "n2", "n3"], ["n4", "n5"])
    net.run(until=6)
    net.heal()
    net.run(until=25)
    assert rows(net, "succ") == [("n1", "n2"), ("n2", "n3"), ("n3", "n4"), ("n4", "n5"),
                                 ("n5", "n1")]


@pytest.mark.parametrize("seed", SEEDS)
def test_two_phase_commit_reaches_one_decision_everywhere(seed: int) -> None:
    names = ["c", "p1", "p2", "p3"]
    net = network("two_phase_commit.olg", names, seed, **{**FAULTS, "loss": 0.3,
                                                           "duplicate": 0.3})
    net.partition(["c", "p1", "p3"], ["p2"])  # p2 cannot vote until the partition heals
    net.run(until=5)
    assert rows(net, "decision") == []  # nothing is decided without p2's votes
    net.heal()
    net.run(until=30)
    assert rows(net, "decision") == [("c", "t1", "commit"), ("c", "t2", "abort")]
    assert rows(net, "outcome") == [(p, t, d) for p in ("p1", "p2", "p3")
                                    for t, d in (("t1", "commit"), ("t2", "abort"))]
    assert rows(net, "acked") == [("c", t, p) for t in ("t1", "t2")
                                  for p in ("p1", "p2", "p3")]
