"""Benchmark inputs: seeded graphs and the programs run on them."""

from __future__ import annotations

import random

TC = "reach(X, Y) :- link(X, Y).\nreach(X, Z) :- link(X, Y), reach(Y, Z).\n"
SG = ("sg(X, Y) :- parent(X, P), parent(Y, P), X != Y.\n"
      "sg(X, Y) :- parent(X, A), sg(A, B), parent(Y, B).\n")
SSSP = ('sp(Y, C) :- edge(0, Y, C).\n'
        'sp(Z, C) :- sp(Y, C1), edge(Y, Z, C2), C := C1 + C2.\n'
        'best(Y, min<C>) :- sp(Y, C).\n')
# single-source shortest paths written the natural way: a recursive min, or a min over a view
SSSP_RECURSIVE = ('dist(0, 0).\n'
                  'dist(Y, min<C>) :- dist(X, C1), edge(X, Y, W), C := C1 + W.\n')
SSSP_VIEW = ('hop(Y, C) :- edge(0, Y, C).\n'
             'hop(Y, C) :- best(X, C1), edge(X, Y, W), C := C1 + W.\n'
             'best(Y, min<C>) :- hop(Y, C).\n')
# the same two, the source given after the graph is loaded (``dist(0, 0)`` or
# ``source(0)`` inserted in a later step)
SSSP_RECURSIVE_QUERY = SSSP_RECURSIVE.replace("dist(0, 0).\n", "")
SSSP_VIEW_QUERY = SSSP_VIEW.replace("hop(Y, C) :- edge(0, Y, C).",
                                    "hop(Y, C) :- source(X), edge(X, Y, C).")
EVENTS = "out[X, Y] :- in[X], Y := X + 1.\n"
COUNTER = ("materialize(counter, infinity, infinity, keys(1)).\n"
           "counter(K, N) :- tick[K], counter(K, M), N := M + 1.\n")
FACTS_RULE = "reach(X, Y) :- link(X, Y, _).\n"


def chain(n: int) -> list[tuple[int, int]]:
    return [(i, i + 1) for i in range(n - 1)]


def ring(n: int) -> list[tuple[int, int]]:
    return [(i, (i + 1) % n) for i in range(n)]


def random_graph(nodes: int, edges: int, seed: int = 1) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    found: set[tuple[int, int]] = set()
    while len(found) < edges:
        a, b = rng.randrange(nodes), rng.randrange(nodes)
        if a != b:
            found.add((a, b))
    return sorted(found)


def tree(depth: int, fanout: int = 2) -> list[tuple[int, int]]:
    """Edges child -> parent of a complete tree (for same generation: parent(child, p))."""
    edges, frontier, next_id = [], [0], 1
    for _ in range(depth):
        new = []
        for node in frontier:
            for _ in range(fanout):
                edges.append((next_id, node))
                new.append(next_id)
                next_id += 1
        frontier = new
    return edges


def weighted_layers(layers: int, width: int, seed: int = 2) -> list[tuple[int, int, int]]:
    """A layered DAG from node 0: every node links to 2 nodes of the next layer."""
    rng = random.Random(seed)
    edges = [(0, 1 + j, rng.randint(1, 9)) for j in range(width)]
    for layer in range(layers - 1):
        base, nxt = 1 + layer * width, 1 + (layer + 1) * width
        for j in range(width):
            for k in rng.sample(range(width), 2):
                edges.append((base + j, nxt + k, rng.randint(1, 9)))
    return edges


def weighted_random(nodes: int, arcs: int, seed: int = 3) -> list[tuple[int, int, int]]:
    """A random digraph (cycles and all) with weights 1..100."""
    rng = random.Random(seed)
    found: dict[tuple[int, int], int] = {}
    while len(found) < arcs:
        a, b = rng.randrange(nodes), rng.randrange(nodes)
        if a != b and (a, b) not in found:
            found[(a, b)] = rng.randint(1, 100)
    return [(a, b, w) for (a, b), w in sorted(found.items())]
