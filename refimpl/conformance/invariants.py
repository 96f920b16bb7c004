"""Invariants checked on the adapter's answers alone, step by step, independently of
the reference (semantics.md section 11).

Owns what the answers so far imply: the items handed out and not yet done, whether
shutdown was seen. A violation names the property, which says more than "differs from
the reference" (the comparison with the reference still runs after these checks).
The checks that rest on correct usage (exclusivity) switch off once a contract
violation was sent (``--misuse``), because client-go itself then breaks them.
"""

from __future__ import annotations

import itertools
from typing import Any

__all__ = ["AnswerChecker"]


class AnswerChecker:
    """Feeds on (request, adapter response) pairs; returns violated invariants."""

    def __init__(self) -> None:
        #: Items get_nowait handed out and no done() since, in hand-out order.
        self.held: list[str] = []
        self.saw_shutdown = False
        self.misused = False

    def check(self, request: dict[str, Any], response: dict[str, Any]) -> list[str]:
        if request.get("op") != "call" or "result" not in response:
            return []
        method = request.get("method")
        args = request.get("args") or {}
        result = response["result"]
        out: list[str] = []
        if method == "get_nowait" and isinstance(result, dict) and result.get("kind") == "item":
            item = result.get("item")
            if item in self.held and not self.misused:
                out.append(
                    f"exclusivity (semantics 11.2): {item!r} handed out again before done({item!r})"
                )
            self.held.append(str(item))
        elif method == "done":
            item = args.get("item")
            if item in self.held:
                self.held.remove(item)
            else:
                self.misused = True
        elif method == "shutting_down":
            if self.saw_shutdown and result is False:
                out.append("shutting_down() went back from true to false")
            self.saw_shutdown = self.saw_shutdown or result is True
        elif method in ("len", "num_requeues"):
            if not isinstance(result, int) or isinstance(result, bool) or result < 0:
                out.append(f"{method}() answered {result!r}, not a count")
        elif method == "when":
            if not isinstance(result, (int, float)) or isinstance(result, bool) or result < 0:
                out.append(f"when() answered {result!r}, not a delay >= 0")
        elif method == "pop_nowait" and isinstance(result, dict) and result.get("kind") == "item":
            deltas = result.get("deltas")
            if not isinstance(deltas, list) or not deltas:
                out.append(f"pop handed out an empty Deltas (semantics 11.19): {result!r}")
            else:
                types = [d.get("type") if isinstance(d, dict) else None for d in deltas]
                if any(a == b == "Deleted" for a, b in itertools.pairwise(types)):
                    out.append(f"two adjacent Deleted deltas not merged (11.21): {types}")
        return out
