# kangaroo_wbc developer entry points. Every target runs inside .venv (see scripts/env.sh);
# `make setup` creates it from nothing (scripts/bootstrap.sh).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

ENV := source scripts/env.sh &&
PYTEST_ARGS ?=
BENCH_ARGS ?= --json

.PHONY: help setup test lint ruff mypy demo bench peer-env model-files clean distclean

help:
	@echo "make setup   create/update .venv (pinned requirements, editable install, tf2_msgs, controller_manager_msgs)"
	@echo "make test    setup, ruff, the import contract (lint-imports) and mypy, then the test suite (pytest -q test)"
	@echo "make lint    ruff, the import contract (lint-imports) and mypy"
	@echo "make demo    setup, then the closed-loop simulation demo (report + bag in reports/demo, replaced each run)"
	@echo "make bench   setup, then the timing benchmarks (creates the peer environment on first use)"
	@echo "make peer-env  create/update the benchmark's peer environment: pin 3 + toolbox-parallel-robots"
	@echo "             in a venv outside the repository (requirements-peer.txt; \$$KANGAROO_WBC_PEER_VENV)"
	@echo "make model-files  regenerate the committed model and ros2_control files (urdf/, config/) from"
	@echo "             kangaroo_wbc/robots/kangaroo/params.yaml (kangaroo-wbc model generate, model ros2-control)"
	@echo "make clean   remove build artefacts and caches (distclean also removes .venv)"

setup:
	@bash scripts/bootstrap.sh

# Lint (ruff, the import contract, mypy) and tests all run; the target fails if any fails.
# A run that ends without pytest's summary line (a process that died mid-run) fails too.
test: setup
	@$(ENV) rc=0; log=$$(mktemp); \
	ruff check --output-format concise kangaroo_wbc kangaroo_wbc_tools test || rc=$$?; \
	lint-imports --no-cache || rc=$$?; \
	mypy || rc=$$?; \
	pytest -q test $(PYTEST_ARGS) 2>&1 | tee $$log; prc=$${PIPESTATUS[0]}; [ $$prc -eq 0 ] || rc=$$prc; \
	if ! tail -n 3 $$log | grep -Eq '[0-9]+ (passed|failed)'; then \
		echo "make test: pytest ended without its summary line: the run did not complete"; rc=1; fi; \
	rm -f $$log; exit $$rc

lint: setup
	@$(ENV) rc=0; \
	ruff check --output-format concise kangaroo_wbc kangaroo_wbc_tools test || rc=$$?; \
	lint-imports --no-cache || rc=$$?; \
	mypy || rc=$$?; \
	exit $$rc

ruff: setup
	$(ENV) ruff check --output-format concise kangaroo_wbc kangaroo_wbc_tools test

mypy: setup
	$(ENV) mypy

# --force: each run replaces the previous one's report folder (reports/demo), never mixes with it.
DEMO_ARGS ?= --behaviour sway --duration 10 --out reports/demo --force

demo: setup
	$(ENV) kangaroo-wbc demo $(DEMO_ARGS)

bench: setup
	$(ENV) kangaroo-wbc bench $(BENCH_ARGS)

# The peer library's own venv (default ~/.cache/kangaroo_wbc/peer-venv); `bench` also creates it.
peer-env: setup
	$(ENV) kangaroo-wbc bench peer-env

# The committed files generated from params.yaml (test/robots checks they are up to date).
model-files: setup
	$(ENV) kangaroo-wbc model generate urdf && kangaroo-wbc model ros2-control .

clean:
	rm -rf build dist *.egg-info .pytest_cache .ruff_cache .mypy_cache reports out MUJOCO_LOG.TXT
	find . -path ./.venv -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf .venv
