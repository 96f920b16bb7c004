"""One search's throughput, as a JSON line: run by benchmarks/conformance.py with the
Python of the checkout being measured (its own or ``--baseline DIR``'s), so both sides
run the same code here against their own refimpl.

    python benchmarks/search_rate.py COMPONENT SEED EXAMPLES [ADAPTER ...]

Searches COMPONENT with SEED for EXAMPLES examples (the adapter: the checkout's
reference adapter unless one is given) and prints steps, examples and seconds.
"""

from __future__ import annotations

import importlib.util
import io
import json
import resource
import sys
import time
from typing import Any


def _search_api() -> tuple[Any, Any, Any, str]:
    """(Config, RunContext, run_component, reference adapter module) of this refimpl:
    the package layout changed after revision 0edaa45, the API did not."""
    if importlib.util.find_spec("refimpl.conformance.search") is not None:
        from refimpl.conformance.search.config import Config
        from refimpl.conformance.search.run import run_component
        from refimpl.conformance.search.session import RunContext

        _load("search.machines", "search.informer_machine", "search.generation")
        return Config, RunContext, run_component, "refimpl.conformance.reference.adapter"
    from refimpl.conformance.runner import Config, RunContext, run_component  # type: ignore

    _load("machines", "informer_machine")
    return Config, RunContext, run_component, "refimpl.conformance.reference_adapter"


def _load(*modules: str) -> None:
    """Import what ``run_component`` imports when first called (Hypothesis and the
    generators) before either side's clock starts: loading them is the process's
    one-time cost, not the search's (0.2-0.4 s, more where PYTHONDONTWRITEBYTECODE has
    every run compile them), and it weighed more in the shorter run."""
    for name in modules:
        importlib.import_module(f"refimpl.conformance.{name}")


def main(argv: list[str]) -> int:
    component, seed, examples = argv[0], int(argv[1]), int(argv[2])
    config_type, context_type, run_component, reference = _search_api()
    command = argv[3:] or [sys.executable, "-m", reference]
    config = config_type(
        command=command, budget=600.0, seed=seed, max_examples=examples, progress=False
    )
    ctx = context_type(config, io.StringIO())
    before = resource.getrusage(resource.RUSAGE_SELF)
    try:
        ctx.start_adapter()
        started = time.perf_counter()
        result = run_component(ctx, component, 600.0)
        elapsed = time.perf_counter() - started
    finally:
        ctx.close()
    mine = resource.getrusage(resource.RUSAGE_SELF)
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    line = {
        "component": component,
        "seed": seed,
        "status": result.status,
        "examples": result.examples,
        "steps": result.steps,
        "seconds": elapsed,
        # CPU seconds of the harness and of the adapter (the machine may be shared).
        "harness_cpu": mine.ru_utime + mine.ru_stime - before.ru_utime - before.ru_stime,
        "adapter_cpu": child.ru_utime + child.ru_stime,
    }
    print(json.dumps(line))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
