"""A seed gives the same search in any process: the same examples, the same verdict.

``make test`` runs the suite on pytest-xdist workers, each a process of its own with its
own string-hash seed, and a pinned seed (tests/test_conformance_generation.py,
tests/pins/) must mean there what it means in a serial run. The search for
add-after-no-dedup (adapters/broken), seed 3, is run here in this process and in two
child processes with different PYTHONHASHSEED: every protocol line sent and received
(``--log``) and the failing example must be the same in all three.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from refimpl.conformance.search.config import Config
from refimpl.conformance.search.run import run_component
from refimpl.conformance.search.session import RunContext

ROOT = Path(__file__).resolve().parents[1]
BROKEN = ROOT / "adapters" / "broken" / "adapter.py"


def search(log: Path) -> dict[str, object]:
    """Search delaying_queue for add-after-no-dedup (seed 3, at most 60 examples, no
    shrinking); the digest of the protocol log and what was found."""
    config = Config(
        command=[sys.executable, str(BROKEN), "--bug", "add-after-no-dedup"],
        budget=60.0,
        seed=3,
        max_examples=60,
        shrink=False,
        progress=False,
        log=str(log),
    )
    ctx = RunContext(config, io.StringIO())
    try:
        ctx.start_adapter()
        result = run_component(ctx, "delaying_queue", config.budget)
    finally:
        ctx.close()
    failure = result.failure
    return {
        "log": hashlib.sha256(log.read_bytes()).hexdigest(),
        "examples": result.examples,
        "steps": result.steps,
        "failure": None
        if failure is None
        else [failure.kind, failure.example, len(failure.steps), failure.message],
    }


_CHILD = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from test_conformance_determinism import search
print(json.dumps(search(Path(sys.argv[2]))))
"""


@pytest.mark.timeout(300)
def test_a_seed_gives_the_same_examples_and_verdict_in_every_process(tmp_path: Path) -> None:
    here = search(tmp_path / "here.log")
    assert here["failure"] is not None, "seed 3 no longer finds add-after-no-dedup"
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        log = tmp_path / f"child-{hash_seed}.log"
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, str(Path(__file__).parent), str(log)],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=240,
            check=True,
        )
        assert json.loads(out.stdout) == here, f"PYTHONHASHSEED={hash_seed}: another search"
