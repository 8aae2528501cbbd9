"""The little graph work stratification needs: a directed graph of relations whose edges
carry the reasons (rules) behind them, strongly connected components, a topological order
of the components, and a shortest path within one. Written here rather than imported: a
program's check runs these on a few dozen nodes, and importing networkx costs more than
checking the program (docs/decisions.md, 41)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any


class Digraph:
    """Nodes in insertion order; ``edges[u][v]`` is the list of reasons for edge u -> v."""

    def __init__(self, nodes: Iterable[str] = ()) -> None:
        self.edges: dict[str, dict[str, list[Any]]] = {node: {} for node in nodes}

    def add_edge(self, u: str, v: str) -> list[Any]:
        """The reasons of edge u -> v (made, with its nodes, if new)."""
        self.edges.setdefault(v, {})
        return self.edges.setdefault(u, {}).setdefault(v, [])

    def components(self) -> list[set[str]]:
        """The strongly connected components (Tarjan's algorithm, without recursion)."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        found: list[set[str]] = []
        for root in self.edges:
            if root in index:
                continue
            work = [(root, iter(self.edges[root]))]
            index[root] = low[root] = len(index)
            stack.append(root)
            on_stack.add(root)
            while work:
                node, successors = work[-1]
                for succ in successors:
                    if succ not in index:
                        index[succ] = low[succ] = len(index)
                        stack.append(succ)
                        on_stack.add(succ)
                        work.append((succ, iter(self.edges[succ])))
                        break
                    if succ in on_stack:
                        low[node] = min(low[node], index[succ])
                else:
                    work.pop()
                    if work:
                        parent = work[-1][0]
                        low[parent] = min(low[parent], low[node])
                    if low[node] == index[node]:
                        component = set()
                        while True:
                            member = stack.pop()
                            on_stack.discard(member)
                            component.add(member)
                            if member == node:
                                break
                        found.append(component)
        return found

    def shortest_path(self, source: str, target: str, within: set[str]) -> list[str]:
        """A shortest path from ``source`` to ``target`` through nodes of ``within`` (both
        in it, and connected)."""
        before: dict[str, str | None] = {source: None}
        queue = deque([source])
        while queue:
            node = queue.popleft()
            if node == target:
                break
            for succ in self.edges[node]:
                if succ in within and succ not in before:
                    before[succ] = node
                    queue.append(succ)
        path = [target]
        while before[path[-1]] is not None:
            path.append(before[path[-1]])  # type: ignore[arg-type]
        return path[::-1]


def topological(components: list[set[str]], graph: Digraph) -> list[int]:
    """The components' indexes in an order where every edge goes forward (Kahn's
    algorithm, ties broken by index)."""
    member = {node: i for i, component in enumerate(components) for node in component}
    after: dict[int, set[int]] = {i: set() for i in range(len(components))}
    incoming = [0] * len(components)
    for u, targets in graph.edges.items():
        for v in targets:
            a, b = member[u], member[v]
            if a != b and b not in after[a]:
                after[a].add(b)
                incoming[b] += 1
    ready = sorted(i for i, n in enumerate(incoming) if n == 0)
    order = []
    while ready:
        i = ready.pop(0)
        order.append(i)
        for j in sorted(after[i]):
            incoming[j] -= 1
            if incoming[j] == 0:
                ready.append(j)
        ready.sort()
    return order
