"""The wire: refimpl's in-memory API server (``refimpl/apiserver.py``) over real HTTP.

Serves ConfigMaps in core/v1 the way kube-apiserver does, as far as a real client's
reflector and informer observe it (client-go ``tools/cache/reflector.go``,
``tools/pager/pager.go`` and ``rest/watch``'s stream decoder are the readers it is
written for). It refines no TLA+ module; it is the HTTP form of ``spec/Informer.tla``'s
environment. docs/wire.md says what is served and what is not yet.

Modules:

* ``convert``: refimpl's :class:`~refimpl.meta.Object` to ConfigMap JSON and back;
  lists, watch events, Status objects and the discovery documents.
* ``handlers``: one HTTP request of the Kubernetes API answered from an
  :class:`~refimpl.apiserver.ApiServer` (routes, query parameters, the watch stream).
* ``faults``: the wire faults (docs/protocol.md, "Wire faults"): one JSON request each,
  checked, and the book of faults waiting for a request or armed on an open stream.
* ``stream``: a watch stream on the wire, with the stream faults carried out on it.
* ``server``: :class:`WireServer`, the loopback HTTP server (bearer token, request log,
  :meth:`WireServer.inject`, threads it owns and joins on stop).
* ``scenario``: ``refimpl serve --scenario``: a JSON-lines file of writes and faults,
  checked line by line, and the runner that waits for the client before each step.
* ``tls``: a CA and a server certificate made per run (the ``openssl`` command), for
  ``refimpl serve --tls``.
* ``cli``: ``refimpl serve`` (the URL on the first line, a kubeconfig, signals).
"""

from __future__ import annotations

from refimpl.wire.server import WireServer

__all__ = ["WireServer"]
