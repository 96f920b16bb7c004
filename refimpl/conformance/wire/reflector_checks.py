"""REF-1 and REF-3 over the wire: the resourceVersions an informer's reflector asked
the server for, judged from the server's own record of the run.

The scripted seam sees each list and watch request as a protocol request; over HTTP the
harness sees them in :attr:`refimpl.wire.server.WireServer.history`: every answered
request (method, path, query, status) and every ERROR event a watch stream sent, in the
order they happened (an ERROR is recorded before it is written, so before anything the
client does about it). Two rules of docs/invariants.md are checked there, as client-go's
reflector keeps them (``relistResourceVersion`` and ``watch`` in
``tools/cache/reflector.go``):

- REF-1: once a list has completed (the reflector went on to watch), no relist asks
  for resourceVersion "0", which any API server may answer from a stale cache;
- REF-3: after a watch was answered 410 Gone (as its status or as an ERROR event on its
  stream), the next request is a relist (a list, or a watch-list stream with
  ``sendInitialEvents=true``), never a plain watch again.

Only ConfigMap list and watch requests count (the harness's informers watch nothing
else); follow-up pages (``continue``) are parts of their list. Refines no TLA+ module.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["reflector_findings"]

_COLLECTION = re.compile(r"^/api/v1/(namespaces/[^/]+/)?configmaps/?$")
GONE = 410


def _is_true(value: Any) -> bool:
    return str(value).lower() in ("1", "true")


def _what(query: dict[str, Any]) -> str:
    kind = "watch" if _is_true(query.get("watch")) else "list"
    if kind == "watch" and _is_true(query.get("sendInitialEvents")):
        kind = "watch-list stream"
    return f"a {kind} at resourceVersion {query.get('resourceVersion', '')!r}"


def reflector_findings(history: Iterable[dict[str, Any]]) -> list[str]:
    """The REF-1 and REF-3 findings of a run's server history (messages start with
    the ID, as the other wire findings do)."""
    out: list[str] = []
    listed = False  # a list completed: the reflector has watched since one
    expired = False  # the last watch was answered 410; no relist asked since
    for entry in history:
        query: dict[str, Any] = entry.get("query", {})
        if "error_event" in entry:
            expired = expired or entry["error_event"] == GONE
            continue
        if entry.get("method") != "GET" or not _COLLECTION.match(str(entry.get("path", ""))):
            continue
        if query.get("continue"):
            continue
        watch = _is_true(query.get("watch"))
        relist = not watch or _is_true(query.get("sendInitialEvents"))
        if relist:
            if listed and query.get("resourceVersion") == "0":
                out.append(
                    f"REF-1 the right resourceVersion: {_what(query)} after a list had "
                    'completed: "0" may be served from a stale cache (client-go relists '
                    "at its last synced resourceVersion)"
                )
            expired = False
        else:
            if expired:
                out.append(
                    f"REF-3 a watch resumes where it stopped: {_what(query)} after the "
                    "last watch was answered 410 Gone: that history is gone, only a "
                    "relist can resume"
                )
            listed = True
            expired = entry.get("status") == GONE
    return out
