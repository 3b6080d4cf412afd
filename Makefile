# kafkascope: every target installs what it needs first (apt packages, .venv with pinned deps).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
# python3-venv: Debian's python3.11 ships without ensurepip, so `python3.11 -m venv` fails on a fresh machine.
APT_PACKAGES := python3-venv kcat zookeeper prometheus prometheus-node-exporter openjdk-17-jre-headless openssl
STAMP := $(VENV)/.installed

.PHONY: install demo check test test-slow bench lint clean

install: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; fi
	@test -x $(PY) || python3.11 -m venv $(VENV) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements.lock
	$(PIP) install -q --no-deps -e .
	@touch $(STAMP)

demo: install
	$(PY) -m kafkascope up

# What CI promises before any test runs: lint (unused noqa included) and the type check.
check: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy broker exporter common

test: check
	$(PY) -m pytest -q --durations=25

test-slow: install
	@dpkg -s chromium >/dev/null 2>&1 || { SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }
	$(PY) -m pytest -q -m slow

bench: install
	$(PY) -m benchmarks.run_all

lint: install
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) build *.egg-info

.PHONY: reference-kafka
reference-kafka: install
	$(PY) -m benchmarks.reference_kafka fetch
	$(PY) -m benchmarks.reference_kafka fetch --version 3.9.2
