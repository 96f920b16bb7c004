"""Comparing the adapter's answers with the reference's.

Stateless. Results must match exactly as JSON (structure and types); errors match by
``kind`` only; ``when`` durations compare at nanosecond resolution; an optional result
field the adapter omits is not compared (a pop's ``initial``, an informer add call's
``initial``: an implementation with no isInInitialList). Informer observations compare
what client-go fixes and nothing it leaves open (docs/protocol.md, "What is checked"):
handler calls per handler and key, not across keys, and without the cache each call
saw.
"""

from __future__ import annotations

import json
from typing import Any

from refimpl.conformance.protocol import without_omitted

__all__ = ["agree", "informer_view", "same_json"]

#: The call fields compared with the reference (``cache`` at call time is left open).
CALL_FIELDS = ("kind", "rv", "old_rv", "tombstone", "initial")


def informer_view(result: Any, with_initial: bool) -> Any:
    """The part of an informer observation that client-go fixes: calls grouped per
    (handler, key) in order, each without the cache it saw."""
    if not isinstance(result, dict) or not isinstance(result.get("calls"), list):
        return result
    fields = CALL_FIELDS if with_initial else CALL_FIELDS[:-1]
    per_key: dict[str, list[dict[str, Any]]] = {}
    for call in result["calls"]:
        if not isinstance(call, dict):
            return result
        slot = per_key.setdefault(f"{call.get('handler')}|{call.get('key')}", [])
        slot.append({k: call[k] for k in fields if k in call})
    return {**result, "calls": per_key}


def _informer_answer(expected: dict[str, Any]) -> bool:
    result = expected.get("result")
    return isinstance(result, dict) and "waiting" in result and "calls" in result


def _has_initial(actual: dict[str, Any]) -> bool:
    result = actual.get("result")
    calls = result.get("calls") if isinstance(result, dict) else None
    if not isinstance(calls, list):
        return True
    return all("initial" in c for c in calls if isinstance(c, dict) and c.get("kind") == "add")


def _canonical_value(value: Any, response: dict[str, Any]) -> str:
    if "error" in response:
        return "error:" + str(response["error"].get("kind"))
    return json.dumps(value, sort_keys=True)


def _canonical(method: str | None, response: dict[str, Any]) -> str:
    result = response.get("result")
    if method == "when" and isinstance(result, (int, float)) and not isinstance(result, bool):
        result = round(result * 1_000_000_000)  # durations compare at nanosecond resolution
    return _canonical_value(result, response)


def same_json(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are the same JSON value: equal with equal types throughout (``==``
    alone takes ``1`` for ``1.0`` and ``True`` for ``1``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return repr(a) == repr(b)  # as JSON writes them: -0.0 is not 0.0
    return bool(a == b)


def agree(request: dict[str, Any], expected: dict[str, Any], actual: dict[str, Any]) -> bool:
    """Same result, or errors of the same kind (messages may differ). An optional
    result field the adapter omits (a pop's ``initial``: protocol.without_omitted) is
    not compared."""
    # Most answers are identical: no view, no rounding and no dump needed for those.
    if (
        "result" in expected
        and "result" in actual
        and same_json(expected["result"], actual["result"])
    ):
        return True
    method = request.get("method")
    if _informer_answer(expected):
        with_initial = _has_initial(actual)
        return _canonical_value(informer_view(expected.get("result"), with_initial), expected) == (
            _canonical_value(informer_view(actual.get("result"), with_initial), actual)
        )
    wanted = without_omitted(method, expected.get("result"), actual.get("result"))
    if wanted is not expected.get("result"):
        expected = {**expected, "result": wanted}
    return _canonical(method, expected) == _canonical(method, actual)
