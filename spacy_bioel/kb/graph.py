"""Graph checks on a KB's typed relations."""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

Edge = Tuple[str, str]


def cycle_edges(children: Sequence[str], parents: Dict[str, Sequence[str]]) -> List[Edge]:
    """The edges to drop so that the `parents` graph has no cycle.

    A depth-first search from each node in the order of `children` (iterative,
    so deep hierarchies do not hit the recursion limit) marks every edge that
    closes a cycle (a back edge to a node still on the path); dropping them
    leaves a DAG, and the same input always drops the same edges.
    children (Sequence[str]): Nodes in a fixed order (the file's).
    parents (Dict[str, Sequence[str]]): Node -> its parents (targets outside
        the graph are leaves).
    RETURNS (List[Edge]): (child, parent) back edges.
    """
    on_path, done = set(), set()  # type: Set[str], Set[str]
    back: List[Edge] = []
    for root in children:
        if root in done:
            continue
        stack = [(root, iter(parents.get(root, ())))]
        on_path.add(root)
        while stack:
            node, todo = stack[-1]
            parent = next(todo, None)
            if parent is None:
                stack.pop()
                on_path.discard(node)
                done.add(node)
            elif parent in on_path:
                back.append((node, parent))
            elif parent not in done:
                on_path.add(parent)
                stack.append((parent, iter(parents.get(parent, ()))))
    return back


__all__ = ["cycle_edges"]
