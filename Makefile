# Two entry points on a fresh clone: `make tour` and `make test`.
# Each bootstraps .venv with the pinned tools (constraints.txt) on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CROSSHAIR_TARGETS := refimpl/workqueue/backoff.py proofs/crosshair_backoff.py
CROSSHAIR_TIMEOUT ?= 2

#: Peers: every adapter folder with a peer.json (docs/conformance.md, "Peers and their
#: manifests"); each folder's own Makefile builds it from its pinned manifest.
PEERS := $(patsubst adapters/%/peer.json,%,$(wildcard adapters/*/peer.json))

.PHONY: tour test lint typecheck pytest bytecode crosshair bench peers pins clean

# editable_mode=compat: a .pth with the checkout's path rather than setuptools' import-hook
# finder, which mypy cannot follow (mypy run from another folder would not find refimpl).
# setuptools calls that mode transitional in a 14-line warning on every install; the
# PYTHONWARNINGS filter keeps it out of `make tour`'s first screen (nothing else is hidden).
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	PYTHONWARNINGS='ignore:Compat editable installs' $(BIN)/python -m pip install --quiet -c constraints.txt --config-settings editable_mode=compat -e '.[dev]'
	touch $(STAMP)

tour: $(STAMP)
	$(BIN)/refimpl tour

# ruff and mypy first (seconds: a style or type error is told at once); then pytest on
# every core (pytest-xdist) with crosshair beside it: crosshair mostly waits out its
# per-condition timeouts, so it costs the tests little; its output is held back and
# printed after pytest's. Fails if any of the four fails.
test: lint typecheck
	@log=$$(mktemp); \
	$(MAKE) --no-print-directory crosshair >$$log 2>&1 & crosshair=$$!; \
	$(MAKE) --no-print-directory pytest; tests=$$?; \
	wait $$crosshair; checks=$$?; cat $$log; rm -f $$log; \
	[ $$checks -eq 0 ] || echo "make test: crosshair failed (exit $$checks)" >&2; \
	[ $$tests -eq 0 ] && [ $$checks -eq 0 ]

lint: $(STAMP)
	$(BIN)/ruff check refimpl tests benchmarks adapters proofs docs/examples
	$(BIN)/ruff format --check refimpl tests benchmarks adapters proofs docs/examples

typecheck: $(STAMP)
	$(BIN)/mypy

#: Extra pytest arguments; .ci/run passes -m "not peers" (make peers ran those searches).
PYTEST_FLAGS ?=
#: pytest-xdist workers: one per core (2 on the project's machine); PYTEST_WORKERS=0 runs
#: the tests in this process. worksteal: a worker that runs dry takes queued tests from
#: the other, and tests/conftest.py hands the minute-long graph replays and walks out
#: first, so none of them starts last beside an idle core.
PYTEST_WORKERS ?= auto

# The machines set PYTHONDONTWRITEBYTECODE=1, so without compileall every adapter and
# CLI process the tests and the peers' checks start would compile refimpl from source
# again (about 0.2 s of CPU each). Python still reads the .pyc files; they are git-ignored.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q -j 0 refimpl adapters/broken tests benchmarks

pytest: bytecode
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist worksteal --durations=15 $(PYTEST_FLAGS)

crosshair: $(STAMP)
	$(BIN)/crosshair check --analysis_kind=PEP316 --per_condition_timeout=$(CROSSHAIR_TIMEOUT) $(CROSSHAIR_TARGETS)

# Build every peer (make -C adapters/NAME build), run each peer.json's seeded checks and
# pinned traces, write docs/peers.json and docs/peers.md (refimpl/conformance/peers/run.py).
# Fails if a toolchain is missing, a peer does not build, or a verdict differs from its pin.
# `make peers PEER=client-go` runs one peer and keeps the others' results. In CI (CI set)
# the files go to build/peers, so tests/test_conformance_peers.py still checks the
# committed docs/peers.md against the committed manifests and traces.
PEERS_OUT := $(if $(CI),build/peers,docs)

peers: bytecode
	$(BIN)/refimpl peers --out $(PEERS_OUT) $(PEER)

# Regenerate every pinned number (CONTRIBUTING.md, "Pinned numbers"); review the diff it
# leaves. With TLA2TOOLS_JAR: TLC's states and depth into spec/models.json, the graphs
# into spec/graphs/ (first: the walks are computed from the graphs). Then the walks'
# pins (tests/pins/walks.json) and the walks tables in docs/conformance.md
# (benchmarks/spec_driven.py, minutes), then docs/peers.md (make peers).
pins: $(STAMP)
ifneq ($(TLA2TOOLS_JAR),)
	$(BIN)/refimpl spec check --record
	$(BIN)/refimpl spec export
else
	@echo "pins: no TLA2TOOLS_JAR: spec/models.json and spec/graphs/ are left as they are"
endif
	$(BIN)/python benchmarks/spec_driven.py --write-pins --write-docs
	$(MAKE) peers

bench: $(STAMP)
	$(BIN)/python benchmarks/workqueue.py
	$(BIN)/python benchmarks/informer.py
	$(BIN)/python benchmarks/sim.py
	$(BIN)/python benchmarks/conformance.py
	$(BIN)/python benchmarks/spec_driven.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
	@for peer in $(PEERS); do $(MAKE) -C adapters/$$peer clean; done
