# AI Fabric Lab. `sudo make demo` and `sudo make test` set everything up on first use.
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.setup-stamp
PYTEST  ?= $(BIN)/pytest

.PHONY: setup demo test test-fast lint bench bench-engine bench-runtime bench-switch bench-traffic \
        bench-fabric bench-lb bench-congestion bench-failover clean

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml scripts/provision.sh
	bash scripts/provision.sh

demo: setup
	$(BIN)/fabric-lab demo

test: setup
	$(BIN)/ruff check .
	$(PYTEST) -q -p no:cacheprovider

test-fast: setup
	$(PYTEST) -q -p no:cacheprovider -m "not slow and not mininet"

lint: setup
	$(BIN)/ruff check .

# Benchmarks print figures; they are never part of the tests. Those marked (root) start networks.
bench: bench-engine bench-runtime bench-switch bench-traffic bench-fabric bench-lb bench-congestion \
       bench-failover

bench-engine: setup
	$(BIN)/python bench/engine_pps.py

bench-runtime: setup
	$(BIN)/python bench/runtime_lookup.py

bench-switch: setup
	$(BIN)/python bench/switch_pps.py

bench-traffic: setup
	$(BIN)/python bench/traffic_sender_pps.py
	$(BIN)/python bench/traffic_receiver_pps.py
	$(BIN)/python bench/traffic_baseline_reorder.py

bench-fabric: setup  # (root)
	$(BIN)/python bench/topos_bringup.py
	$(BIN)/python bench/fabric_bringup.py

bench-lb: setup
	$(BIN)/python bench/lb_engine_pps.py

bench-congestion: setup  # (root for the telemetry part)
	$(BIN)/python bench/congestion_pipeline.py
	$(BIN)/python bench/congestion_telemetry.py

bench-failover: setup  # (root)
	$(BIN)/python bench/failover_loss_window.py --trials 5

clean: setup
	$(BIN)/fabric-lab clean
