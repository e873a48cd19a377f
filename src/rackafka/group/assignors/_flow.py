"""A small min-cost flow solver (successive shortest paths with potentials).

The rack-aware and sticky assignors phrase "balanced, then rack-aligned, then
sticky" as one min-cost flow: each objective gets a weight that outweighs
everything below it, so the cheapest flow is optimal for the objectives in
order.  Partitions are grouped into classes of interchangeable partitions, so
the graphs stay small (classes x racks, not partitions x members).
"""

from __future__ import annotations

import heapq


class MinCostFlow:
    """A directed graph with capacities and (possibly negative) integer costs."""

    __slots__ = ("_adj", "_cap", "_cost", "_to")

    def __init__(self, nodes: int) -> None:
        self._adj: list[list[int]] = [[] for _ in range(nodes)]
        self._to: list[int] = []
        self._cap: list[int] = []
        self._cost: list[int] = []

    def add_node(self) -> int:
        self._adj.append([])
        return len(self._adj) - 1

    def add_edge(self, u: int, v: int, cap: int, cost: int) -> int:
        """Add an edge; returns its id (for :meth:`flow`)."""
        e = len(self._to)
        self._to += (v, u)
        self._cap += (cap, 0)
        self._cost += (cost, -cost)
        self._adj[u].append(e)
        self._adj[v].append(e + 1)
        return e

    def flow(self, edge: int) -> int:
        """The flow on an edge after :meth:`run`."""
        return self._cap[edge ^ 1]

    def _initial_potentials(self, source: int) -> list[int]:
        # Bellman-Ford (queue based) over the edges with capacity: the graph
        # starts without flow, so it has no negative cycle.
        inf = None
        dist: list[int | None] = [inf] * len(self._adj)
        dist[source] = 0
        queue = [source]
        queued = [False] * len(self._adj)
        queued[source] = True
        to, cap, cost, adj = self._to, self._cap, self._cost, self._adj
        head = 0
        while head < len(queue):
            u = queue[head]
            head += 1
            queued[u] = False
            du = dist[u]
            assert du is not None
            for e in adj[u]:
                if cap[e] > 0:
                    v = to[e]
                    nd = du + cost[e]
                    dv = dist[v]
                    if dv is None or nd < dv:
                        dist[v] = nd
                        if not queued[v]:
                            queued[v] = True
                            queue.append(v)
        finite = [d for d in dist if d is not None]
        top = max(finite) if finite else 0
        return [top if d is None else d for d in dist]

    def run(self, source: int, sink: int, amount: int) -> int:
        """Send up to ``amount`` units from ``source`` to ``sink`` at minimum cost.

        Primal-dual: Dijkstra (on costs reduced by node potentials) finds the
        length of the shortest path, then a blocking flow pushes as much as
        possible along all paths of that length at once.

        Returns the amount sent (less than ``amount`` only if the graph cannot
        carry more).
        """
        adj = self._adj
        n = len(adj)
        pot = self._initial_potentials(source)
        sent = 0
        while sent < amount:
            if not self._shortest(source, sink, pot):
                break
            while sent < amount:
                level = self._levels(source, sink, pot)
                if level[sink] < 0:
                    break
                pushed = self._blocking(source, sink, pot, level, amount - sent, n)
                if not pushed:
                    break
                sent += pushed
        return sent

    def _shortest(self, source: int, sink: int, pot: list[int]) -> bool:
        """Dijkstra on reduced costs; adds the distances to ``pot``.

        Nodes farther than the sink get the sink's distance, which keeps every
        reduced cost non-negative.  Returns whether the sink is reachable.
        """
        to, cap, cost, adj = self._to, self._cap, self._cost, self._adj
        n = len(adj)
        dist: list[int | None] = [None] * n
        done = [False] * n
        dist[source] = 0
        heap = [(0, source)]
        while heap:
            d, u = heapq.heappop(heap)
            if done[u]:
                continue
            done[u] = True
            if u == sink:
                break
            pu = pot[u]
            for e in adj[u]:
                if cap[e] > 0:
                    v = to[e]
                    if done[v]:
                        continue
                    nd = d + cost[e] + pu - pot[v]
                    dv = dist[v]
                    if dv is None or nd < dv:
                        dist[v] = nd
                        heapq.heappush(heap, (nd, v))
        reach = dist[sink]
        if reach is None or not done[sink]:
            return False
        for v in range(n):
            dv = dist[v]
            pot[v] += dv if (dv is not None and done[v]) else reach
        return True

    def _levels(self, source: int, sink: int, pot: list[int]) -> list[int]:
        """BFS levels over the admissible edges (capacity left, reduced cost zero)."""
        to, cap, cost, adj = self._to, self._cap, self._cost, self._adj
        level = [-1] * len(adj)
        level[source] = 0
        queue = [source]
        head = 0
        while head < len(queue):
            u = queue[head]
            head += 1
            if u == sink:
                continue
            pu = pot[u]
            for e in adj[u]:
                if cap[e] > 0:
                    v = to[e]
                    if level[v] < 0 and cost[e] + pu - pot[v] == 0:
                        level[v] = level[u] + 1
                        queue.append(v)
        return level

    def _blocking(
        self, source: int, sink: int, pot: list[int], level: list[int], limit: int, n: int
    ) -> int:
        """Push up to ``limit`` along admissible level-increasing paths (iterative DFS)."""
        to, cap, cost, adj = self._to, self._cap, self._cost, self._adj
        arc = [0] * n
        total = 0
        while total < limit:
            path: list[int] = []
            u = source
            while u != sink:
                edges = adj[u]
                i = arc[u]
                pu = pot[u]
                lu = level[u] + 1
                while i < len(edges):
                    e = edges[i]
                    v = to[e]
                    if cap[e] > 0 and level[v] == lu and cost[e] + pu - pot[v] == 0:
                        break
                    i += 1
                arc[u] = i
                if i < len(edges):
                    e = edges[i]
                    path.append(e)
                    u = to[e]
                    continue
                if u == source:
                    return total
                level[u] = -1  # dead end
                e = path.pop()
                u = to[e ^ 1]
                arc[u] += 1
            push = limit - total
            for e in path:
                if cap[e] < push:
                    push = cap[e]
            for e in path:
                cap[e] -= push
                cap[e ^ 1] += push
            total += push
        return total


def share_out(
    need: int, edges: list[tuple[str, int]], caps: list[int], counts: dict[str, int]
) -> None:
    """Split ``need`` units that reached a shared node among the members behind it.

    ``edges`` are the node's (member, edge) pairs and ``caps`` what each edge still carries
    (lowered here); each member's share is added to ``counts``. The members are taken in
    the order of ``edges``.
    """
    for i, (member, _e) in enumerate(edges):
        if not need:
            break
        take = min(need, caps[i])
        if take:
            counts[member] = counts.get(member, 0) + take
            caps[i] -= take
            need -= take
