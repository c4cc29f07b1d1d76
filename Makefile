# AI Fabric Lab. `sudo make demo` and `sudo make test` set everything up on first use.
VENV    := .venv
BIN     := $(VENV)/bin
PYTEST  ?= $(BIN)/pytest
# Real BMv2 and p4c beside the checkout, when there (never required).
P4LANG_ENV := $(abspath $(CURDIR)/../shared/p4lang/env.sh)

.PHONY: setup demo test test-fast test-bmv2 lint typecheck bench bench-engine bench-runtime bench-switch \
        bench-traffic bench-fabric bench-lb bench-congestion bench-failover bench-jobs clean figures \
        docs-figures

# provision.sh is idempotent and quick when nothing changed; it runs every time so that a
# `sudo make setup` after a user's `make setup` still links the commands onto sudo's PATH.
setup:
	@bash scripts/provision.sh

demo: setup
	$(BIN)/fabric-lab demo --web

test: setup
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(PYTEST) -q -p no:cacheprovider --durations=25 -n 2 --dist loadgroup

test-fast: setup
	$(PYTEST) -q -p no:cacheprovider -m "not slow and not mininet"

# Only the tests that need BMv2, on BMv2 from $(P4LANG_ENV) if it exists, else from PATH.
test-bmv2: SHELL := /bin/bash
test-bmv2: setup
	@if [ -f "$(P4LANG_ENV)" ]; then . "$(P4LANG_ENV)"; echo "test-bmv2: BMv2 and p4c from $(dir $(P4LANG_ENV))"; fi; \
	missing=""; for p in simple_switch_grpc p4c-bm2-ss; do command -v $$p >/dev/null || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "test-bmv2: BMv2 not found:$$missing not on PATH. The lab VM installs them" \
	       "(scripts/install_p4lang.sh); or build them: sudo bash scripts/build_p4lang.sh" >&2; exit 1; fi; \
	if ! out=$$(simple_switch_grpc --version 2>&1); then \
	  echo "test-bmv2: $$(command -v simple_switch_grpc) does not run: $$out" >&2; \
	  echo "test-bmv2: (for $(dir $(P4LANG_ENV)): sudo bash $(dir $(P4LANG_ENV))install-deps.sh)" >&2; exit 1; fi; \
	echo "test-bmv2: simple_switch_grpc $$out ($$(command -v simple_switch_grpc))"; \
	$(PYTEST) -q -p no:cacheprovider -m bmv2

lint: setup
	$(BIN)/ruff check .

# mypy on the packages and with the settings in pyproject.toml ([tool.mypy]).
typecheck: setup
	$(BIN)/mypy

# Benchmarks print figures; they are never part of the tests. Those marked (root) start networks.
bench: bench-engine bench-runtime bench-switch bench-traffic bench-fabric bench-lb bench-congestion \
       bench-failover bench-jobs

bench-engine: setup
	$(BIN)/python bench/engine_pps.py

bench-runtime: setup
	$(BIN)/python bench/runtime_lookup.py

bench-switch: setup  # (root)
	$(BIN)/python bench/switch_pps.py
	$(BIN)/python bench/chain_hops.py --rates 1000,8000
	$(BIN)/python bench/chain_hops.py --rates 1000,8000 --pipeline c
	$(BIN)/python bench/chain_hops.py --rates 1000,8000 --target c-forward

bench-traffic: setup
	$(BIN)/python bench/traffic_sender_pps.py
	$(BIN)/python bench/traffic_receiver_pps.py
	$(BIN)/python bench/traffic_baseline_reorder.py
	$(BIN)/python bench/paced_worker_cpu.py

bench-fabric: setup  # (root)
	$(BIN)/python bench/topos_bringup.py
	$(BIN)/python bench/fabric_bringup.py
	$(BIN)/python bench/fabric_capacity.py --quick --pipelines native,c

bench-lb: setup
	$(BIN)/python bench/lb_engine_pps.py

bench-congestion: setup  # (root for the telemetry part)
	$(BIN)/python bench/congestion_pipeline.py
	$(BIN)/python bench/congestion_telemetry.py
	$(BIN)/python bench/incast_stalls.py

bench-failover: setup  # (root)
	$(BIN)/python bench/failover_loss_window.py --trials 5

bench-jobs: setup  # (root; BMv2's rows beside p4switch's where BMv2 is installed)
	$(BIN)/python bench/jobs_busbw.py

# The pages' figures and the shipped examples (examples/results/) from --quick runs, each checked
# against what its page claims (scripts/figures.py; root: most runs start Mininet fabrics; several
# minutes; never part of the tests).
figures: setup
	$(BIN)/python scripts/figures.py

# All of the above, then the benchmarks behind the pages' tables, each output recorded in
# docs/runs/ with the code it measured (tests/docs says when a page's run is older than its code).
docs-figures: figures
	$(BIN)/python scripts/figures.py --tables

clean: setup
	$(BIN)/fabric-lab clean
