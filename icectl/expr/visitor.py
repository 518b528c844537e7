"""One iterative walk over expression trees (no recursion, so no depth limit).

Every pass over a filter -- binding, NOT elimination, projections, each evaluator, rendering --
goes through :func:`visit` with a :class:`Visitor`: leaves (constants and predicates) are turned
into results, ``and`` / ``or`` / ``not`` nodes combine their children's results. The walk keeps
its own stack, so a filter nested ten thousand levels deep costs memory, not Python frames.

``and`` and ``or`` may short-circuit: after the left child, :meth:`Visitor.and_done` /
:meth:`Visitor.or_done` can say the right child need not be visited (the left result is then
the node's result).
"""

from __future__ import annotations

from typing import Any, Generic, Iterator, TypeVar

__all__ = ["Visitor", "visit", "walk", "leaves", "balanced", "LEAF", "AND", "OR", "NOT", "ALWAYS_TRUE",
           "ALWAYS_FALSE"]

R = TypeVar("R")

# What a node is, as its class says in ``node_kind`` (expressions.py sets it on each node class),
# so the walk needs no import of the tree's classes: expressions imports this module, never the
# other way round.
LEAF, AND, OR, NOT, ALWAYS_TRUE, ALWAYS_FALSE = range(6)


class Visitor(Generic[R]):
    """Results for the leaves and how and/or/not combine them. Subclasses override what they
    need; a visitor of rewritten trees (no ``Not``) need not define :meth:`not_`."""

    def always_true(self) -> R:
        raise NotImplementedError

    def always_false(self) -> R:
        raise NotImplementedError

    def predicate(self, p: Any) -> R:
        raise NotImplementedError

    def and_(self, left: R, right: R) -> R:
        raise NotImplementedError

    def or_(self, left: R, right: R) -> R:
        raise NotImplementedError

    def not_(self, child: R) -> R:
        raise TypeError("this pass needs an expression without NOT (see rewrite_not)")

    def and_done(self, left: R) -> bool:
        """True when the left result alone decides the ``and`` (the right is skipped)."""
        return False

    def or_done(self, left: R) -> bool:
        """True when the left result alone decides the ``or`` (the right is skipped)."""
        return False


# frame states
_START, _AFTER_LEFT, _AFTER_RIGHT = 0, 1, 2


def visit(expr: Any, v: Visitor[R]) -> R:
    """Walk ``expr`` bottom-up with ``v`` and return the root's result."""
    results: list = []
    stack: list[tuple[Any, int]] = [(expr, _START)]
    push, pop, out, rpop = stack.append, stack.pop, results.append, results.pop
    while stack:
        node, state = pop()
        kind = node.node_kind
        if kind == AND or kind == OR:
            if state == _START:
                push((node, _AFTER_LEFT))
                push((node.left, _START))
            elif state == _AFTER_LEFT:
                done = v.and_done(results[-1]) if kind == AND else v.or_done(results[-1])
                if not done:
                    push((node, _AFTER_RIGHT))
                    push((node.right, _START))
            else:
                right = rpop()
                left = rpop()
                out(v.and_(left, right) if kind == AND else v.or_(left, right))
        elif kind == NOT:
            if state == _START:
                push((node, _AFTER_LEFT))
                push((node.child, _START))
            else:
                out(v.not_(rpop()))
        elif kind == ALWAYS_TRUE:
            out(v.always_true())
        elif kind == ALWAYS_FALSE:
            out(v.always_false())
        else:
            out(v.predicate(node))
    return results[0]


def walk(expr: Any) -> Iterator[Any]:
    """Every node of ``expr`` in pre-order (node, then left to right), without recursion."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        kind = node.node_kind
        if kind == AND or kind == OR:
            stack.append(node.right)
            stack.append(node.left)
        elif kind == NOT:
            stack.append(node.child)


def leaves(expr: Any) -> Iterator[Any]:
    """The predicates and constants of ``expr``, left to right."""
    for node in walk(expr):
        if node.node_kind not in _INNER:
            yield node


_INNER = (AND, OR, NOT)


def balanced(items: list, make: Any) -> Any:
    """``items`` joined pairwise by ``make(left, right)`` into a balanced tree (depth log2 n),
    keeping their left-to-right order. ``items`` must not be empty."""
    level = list(items)
    while len(level) > 1:
        nxt = [make(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]
