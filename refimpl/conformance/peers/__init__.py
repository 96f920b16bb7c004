"""``refimpl peers``: every adapter under adapters/ with a peer.json, built and checked.

- :mod:`~refimpl.conformance.peers.run`: manifests, builds, seeded checks, pinned traces
  and docs/peers.md;
- :mod:`~refimpl.conformance.peers.walks`: the spec-driven walks a peer's components
  allow, and their section of docs/peers.md.
"""
