# AI Fabric Lab. `sudo make demo` and `sudo make test` set everything up on first use.
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.setup-stamp
PYTEST  ?= $(BIN)/pytest

.PHONY: setup demo test test-fast lint bench bench-engine bench-runtime bench-switch bench-traffic bench-fabric clean

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

bench: bench-engine bench-runtime bench-switch bench-traffic bench-fabric

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

bench-fabric: setup
	$(BIN)/python bench/topos_bringup.py

clean: setup
	$(BIN)/fabric-lab clean
