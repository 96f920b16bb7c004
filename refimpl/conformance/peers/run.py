"""``refimpl peers``: build every peer adapter from its manifest, check it, write docs/peers.md.

A *peer* is another implementation checked through an adapter folder ``adapters/NAME/``
holding a ``Makefile`` (``build``, ``clean``), a ``peer.json`` manifest and pinned traces
``traces/*.jsonl`` (the manifest's fields: docs/conformance.md, "Peers and their
manifests"). For each manifest the runner

1. checks that every toolchain it names is on PATH (missing: ``peer X: toolchain 'cargo'
   not found``, a failure);
2. runs ``make -C adapters/NAME build`` (failing: ``peer X did not build: <the last
   lines of its output>``, a failure, never a skip) and checks that ``built`` exists;
3. asks the adapter's ``hello`` which components it offers;
4. runs each seeded check as a ``refimpl conform`` process and compares its findings'
   signatures with ``expect`` (or, in the older form, the first finding's verdict: an
   invariant ID, ``difference``, or ``pass``), each finding marked known when the
   manifest's ``known`` lists it and labelled by a replay against client-go's adapter
   (built first); a ``known`` signature that no check finds is stale, a failure;
5. replays each pinned trace against the peer (it must fail with the header's
   ``expect``) and against the reference adapter (it must pass);
6. walks every TLA+ model whose component the peer offers along its state graph
   (``refimpl conform --from-spec``, :mod:`refimpl.conformance.peers.walks`) and compares
   each walk's verdict with the manifest's ``walks`` pins.

What it saw is kept in ``docs/peers.json`` (observations, timings apart) and rendered
with the manifests into ``docs/peers.md``; rendering is a pure function of the two, so
``tests/test_conformance_peers.py`` can tell a stale docs/peers.md without running
anything. Exit status 1 when any peer failed (toolchain, build, start, or a verdict that
differs from its pin), else 0.

This module is the command line (``refimpl peers``, ``python -m
refimpl.conformance.peers.run``); the manifest is :mod:`~refimpl.conformance.peers.manifest`,
the steps above :mod:`~refimpl.conformance.peers.checking`, docs/peers.md
:mod:`~refimpl.conformance.peers.render`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from refimpl.conformance.peers.checking import run_peers
from refimpl.conformance.peers.manifest import MANIFEST, discover, relative
from refimpl.conformance.peers.render import DOC, OBSERVATIONS, load_observations, render
from refimpl.usage import Parser, UsageError

__all__ = ["add_arguments", "execute", "main", "register"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "names",
        nargs="*",
        metavar="PEER",
        help="adapter folder names to run (default: every adapters/*/peer.json)",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=Path.cwd(),
        help="the repository root holding adapters/ and docs/ (default: the current folder)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DOC.parent,
        metavar="DIR",
        help="where to write peers.json and peers.md, relative to the root (default: docs; "
        "CI writes to build/peers so that the committed docs/ stay what the tests check)",
    )
    parser.add_argument(
        "--no-write",
        action="store_true",
        help="do not update docs/peers.json and docs/peers.md (default: update them)",
    )
    parser.add_argument(
        "--render-only",
        action="store_true",
        help="run nothing: write docs/peers.md again from docs/peers.json and the manifests "
        "(a check whose manifest entry changed shows as not run)",
    )


def _check_names(root: Path, names: Sequence[str]) -> None:
    """A root without adapters or an unknown peer name is a usage error (exit 3), never
    "0 ok, 0 failed": nothing would be checked."""
    if not (root / "adapters").is_dir():
        raise UsageError(f"--root {root}: no adapters/ folder there (is it a refimpl checkout?)")
    known = sorted(p.parent.name for p in discover(root))
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(
            f"no {MANIFEST} for {', '.join(unknown)} (known: {', '.join(known) or 'none'})"
        )


def execute(args: argparse.Namespace) -> int:
    root = args.root.resolve()
    _check_names(root, args.names)
    where = (args.out if args.out.is_absolute() else root / args.out).resolve()
    if args.render_only:
        store = load_observations(where / OBSERVATIONS.name)
        (where / DOC.name).write_text(render(root, store, where), encoding="utf-8")
        print(f"wrote {relative(where / DOC.name, root)} from its peers.json (nothing run)")
        return 0
    return run_peers(root, args.names, write=not args.no_write, where=where)


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "peers",
        help="build the peer adapters (adapters/*/peer.json), check them, write docs/peers.md",
        description=(
            "For every adapter folder with a peer.json: check its toolchains, build it "
            "(make -C adapters/NAME build), run its seeded checks and replay its pinned "
            "traces; then write docs/peers.json and docs/peers.md. Exit status 1 if a peer "
            "fails to build or a verdict differs from its pin."
        ),
    )
    add_arguments(parser)
    parser.set_defaults(func=execute)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m refimpl.conformance.peers.run [PEER...]``."""
    parser = Parser(prog="refimpl peers")
    add_arguments(parser)
    try:
        return execute(parser.parse_args(argv))
    except UsageError as exc:
        parser.error(str(exc))


if __name__ == "__main__":
    sys.exit(main())
