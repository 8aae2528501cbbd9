"""The same workloads on the peers: a hand-written semi-naive loop (the pure-Python floor),
pyDatalog, DuckDB (WITH RECURSIVE) and networkx."""

from __future__ import annotations

from collections import defaultdict


def floor_tc(edges: list[tuple]) -> int:
    """Semi-naive transitive closure over sets and a dict index: the pure-Python floor."""
    by_source: dict = defaultdict(list)
    for a, b in edges:
        by_source[a].append(b)
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


def floor_sg(parent: list[tuple]) -> int:
    children: dict = defaultdict(list)
    for c, p in parent:
        children[p].append(c)
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


def floor_sssp(edges: list[tuple]) -> int:
    """Dijkstra from node 0 with a heap: the pure-Python floor (nodes reached, 0 included)."""
    import heapq

    out: dict = defaultdict(list)
    for a, b, w in edges:
        out[a].append((b, w))
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


def duckdb_tc(edges: list[tuple]) -> int:
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE link(a INTEGER, b INTEGER)")
    con.executemany("INSERT INTO link VALUES (?, ?)", edges)
    return con.execute("""
        WITH RECURSIVE reach(a, b) AS (
            SELECT a, b FROM link
            UNION
            SELECT r.a, l.b FROM reach r JOIN link l ON r.b = l.a)
        SELECT count(*) FROM reach""").fetchone()[0]


def duckdb_sg(parent: list[tuple]) -> int:
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE parent(c INTEGER, p INTEGER)")
    con.executemany("INSERT INTO parent VALUES (?, ?)", parent)
    return con.execute("""
        WITH RECURSIVE sg(x, y) AS (
            SELECT a.c, b.c FROM parent a JOIN parent b ON a.p = b.p WHERE a.c <> b.c
            UNION
            SELECT a.c, b.c FROM sg JOIN parent a ON a.p = sg.x JOIN parent b ON b.p = sg.y)
        SELECT count(*) FROM sg""").fetchone()[0]


def networkx_tc(edges: list[tuple]) -> int:
    import networkx as nx

    graph = nx.DiGraph(edges)
    return sum(len(nx.descendants(graph, n)) for n in graph)


def networkx_sssp(edges: list[tuple]) -> int:
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_weighted_edges_from(edges)
    return len(nx.single_source_dijkstra_path_length(graph, 0)) - 1


def _pydatalog(facts: dict[str, list[tuple]], program: str, query: str) -> int:
    from pyDatalog import pyDatalog

    pyDatalog.clear()
    for name, rows in facts.items():
        for row in rows:
            pyDatalog.assert_fact(name, *row)
    pyDatalog.load(program)
    return len(pyDatalog.ask(query).answers)


def pydatalog_tc(edges: list[tuple]) -> int:
    return _pydatalog({"link": edges}, "reach(X, Y) <= link(X, Y)\n"
                      "reach(X, Z) <= link(X, Y) & reach(Y, Z)", "reach(X, Y)")


def pydatalog_sg(parent: list[tuple]) -> int:
    return _pydatalog({"par": parent}, "sg(X, Y) <= par(X, P) & par(Y, P) & (X != Y)\n"
                      "sg(X, Y) <= par(X, A) & sg(A, B) & par(Y, B)", "sg(X, Y)")
