"""``refimpl peers``: every adapter under adapters/ with a peer.json, built and checked.

- :mod:`~refimpl.conformance.peers.run`: the command line (``refimpl peers``), and the
  steps a peer goes through (its docstring);
- :mod:`~refimpl.conformance.peers.manifest`: ``peer.json``'s format (``Manifest``,
  ``Check``, ``load_manifest``), the pinned traces' headers and the commands docs/peers.md
  shows for them;
- :mod:`~refimpl.conformance.peers.checking`: running a peer (toolchains, build,
  ``hello``, seeded checks, trace replays, walks) and all of them (``run_peers``);
- :mod:`~refimpl.conformance.peers.render`: docs/peers.json read back and docs/peers.md
  rendered from it and the manifests, one function per section;
- :mod:`~refimpl.conformance.peers.walks`: the spec-driven walks a peer's components
  allow, and their section of docs/peers.md.
"""
