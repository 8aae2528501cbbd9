"""The same workloads on the peers: a hand-written semi-naive loop (the pure-Python floor),
pyDatalog, DuckDB (WITH RECURSIVE) and networkx.

Each peer runs in two timed phases, as the engine does (``bench/run.py``): ``load`` puts the
input where the system evaluates from (the floor's dict index, pyDatalog's facts and
rules, DuckDB's table, networkx's graph), ``evaluate`` computes the result and counts it.
Each function returns {"load": seconds, "seconds": seconds of evaluation, "count": n}.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any


def phases(load: Callable[[], Any], evaluate: Callable[[Any], int]) -> dict:
    """Time ``load()`` and then ``evaluate(what load returned)``."""
    start = time.perf_counter()
    state = load()
    loaded = time.perf_counter()
    count = evaluate(state)
    return {"load": loaded - start, "seconds": time.perf_counter() - loaded, "count": count}


def _by_first(pairs: list[tuple]) -> dict:
    index: dict = defaultdict(list)
    for a, b in pairs:
        index[a].append(b)
    return index


def floor_tc(edges: list[tuple]) -> dict:
    """Semi-naive transitive closure over sets and a dict index: the pure-Python floor."""

    def evaluate(by_source: dict) -> int:
        reach = set(edges)
        delta = set(edges)
        while delta:
            new = set()
            for x, y in delta:  # reach(X, Z) :- reach(X, Y), link(Y, Z)
                for z in by_source.get(y, ()):
                    if (x, z) not in reach:
                        new.add((x, z))
            reach |= new
            delta = new
        return len(reach)

    return phases(lambda: _by_first(edges), evaluate)


def floor_sg(parent: list[tuple]) -> dict:
    def evaluate(children: dict) -> int:
        sg = {(x, y) for kids in children.values() for x in kids for y in kids if x != y}
        delta = set(sg)
        while delta:
            new = set()
            for a, b in delta:  # sg(X, Y) :- parent(X, A), sg(A, B), parent(Y, B)
                for x in children.get(a, ()):
                    for y in children.get(b, ()):
                        if (x, y) not in sg:
                            new.add((x, y))
            sg |= new
            delta = new
        return len(sg)

    return phases(lambda: _by_first([(p, c) for c, p in parent]), evaluate)


def floor_sssp(edges: list[tuple]) -> dict:
    """Dijkstra from node 0 with a heap: the pure-Python floor (nodes reached, 0 included)."""
    import heapq

    def load() -> dict:
        out: dict = defaultdict(list)
        for a, b, w in edges:
            out[a].append((b, w))
        return out

    def evaluate(out: dict) -> int:
        dist = {0: 0}
        heap = [(0, 0)]
        while heap:
            d, x = heapq.heappop(heap)
            if d > dist[x]:
                continue
            for y, w in out.get(x, ()):
                if y not in dist or d + w < dist[y]:
                    dist[y] = d + w
                    heapq.heappush(heap, (d + w, y))
        return len(dist)

    return phases(load, evaluate)


def _duckdb(table: str, columns: str, rows: list[tuple], query: str) -> dict:
    """Rows loaded into a DuckDB table through a DataFrame (a bulk load, not one INSERT per
    row), then the query."""
    import duckdb
    import pandas

    def load() -> Any:
        con = duckdb.connect()
        frame = pandas.DataFrame(rows, columns=columns.split(", "))  # noqa: F841 (read by SQL)
        con.execute(f"CREATE TABLE {table} AS SELECT * FROM frame")
        return con

    return phases(load, lambda con: con.execute(query).fetchone()[0])


def duckdb_tc(edges: list[tuple]) -> dict:
    return _duckdb("link", "a, b", edges, """
        WITH RECURSIVE reach(a, b) AS (
            SELECT a, b FROM link
            UNION
            SELECT r.a, l.b FROM reach r JOIN link l ON r.b = l.a)
        SELECT count(*) FROM reach""")


def duckdb_sg(parent: list[tuple]) -> dict:
    return _duckdb("parent", "c, p", parent, """
        WITH RECURSIVE sg(x, y) AS (
            SELECT a.c, b.c FROM parent a JOIN parent b ON a.p = b.p WHERE a.c <> b.c
            UNION
            SELECT a.c, b.c FROM sg JOIN parent a ON a.p = sg.x JOIN parent b ON b.p = sg.y)
        SELECT count(*) FROM sg""")


def networkx_tc(edges: list[tuple]) -> dict:
    import networkx as nx

    return phases(lambda: nx.DiGraph(edges),
                  lambda graph: sum(len(nx.descendants(graph, n)) for n in graph))


def networkx_sssp(edges: list[tuple]) -> dict:
    import networkx as nx

    def load() -> Any:
        graph = nx.DiGraph()
        graph.add_weighted_edges_from(edges)
        return graph

    return phases(load, lambda graph: len(nx.single_source_dijkstra_path_length(graph, 0)) - 1)


def _pydatalog(facts: dict[str, list[tuple]], program: str, query: str) -> dict:
    from pyDatalog import pyDatalog

    def load() -> None:
        pyDatalog.clear()
        for name, rows in facts.items():
            for row in rows:
                pyDatalog.assert_fact(name, *row)
        pyDatalog.load(program)

    return phases(load, lambda _: len(pyDatalog.ask(query).answers))


def pydatalog_tc(edges: list[tuple]) -> dict:
    return _pydatalog({"link": edges}, "reach(X, Y) <= link(X, Y)\n"
                      "reach(X, Z) <= link(X, Y) & reach(Y, Z)", "reach(X, Y)")


def pydatalog_sg(parent: list[tuple]) -> dict:
    return _pydatalog({"par": parent}, "sg(X, Y) <= par(X, P) & par(Y, P) & (X != Y)\n"
                      "sg(X, Y) <= par(X, A) & sg(A, B) & par(Y, B)", "sg(X, Y)")
