"""Comparing the adapter's answers with the reference's.

Stateless. Results must match exactly as JSON (structure and types); errors match by
``kind`` only; ``when`` durations compare at nanosecond resolution; a ``pop_nowait``
answer without ``initial`` (an implementation with no isInInitialList) is compared
without it.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["agree"]


def _canonical(method: str | None, response: dict[str, Any]) -> str:
    if "error" in response:
        return "error:" + str(response["error"].get("kind"))
    result = response.get("result")
    if method == "when" and isinstance(result, (int, float)) and not isinstance(result, bool):
        result = round(result * 1_000_000_000)  # durations compare at nanosecond resolution
    return json.dumps(result, sort_keys=True)


def agree(request: dict[str, Any], expected: dict[str, Any], actual: dict[str, Any]) -> bool:
    """Same result, or errors of the same kind (messages may differ).

    A ``pop_nowait`` answer without ``initial`` (an implementation with no
    isInInitialList) is compared without it.
    """
    method = request.get("method")
    if method == "pop_nowait":
        result = actual.get("result")
        wanted = expected.get("result")
        if isinstance(result, dict) and isinstance(wanted, dict) and "initial" not in result:
            expected = {**expected, "result": {k: v for k, v in wanted.items() if k != "initial"}}
    return _canonical(method, expected) == _canonical(method, actual)
