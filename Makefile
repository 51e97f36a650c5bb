# marathon: make marathon SEED=42 | make test | make lint | make bench
SHELL := /bin/bash
# The virtualenv's interpreter: the distribution's /usr/bin/python3 when it is 3.11 or later, else python3 on
# PATH; `make PYTHON=...` picks another. A marathon is CPU-bound in Python, and Debian's interpreter (one
# statically linked binary) runs it with about a sixth less CPU than a build with a shared libpython, such
# as pyenv's (`make bench`, marathon rows).
PYTHON ?= $(firstword $(shell /usr/bin/python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  2>/dev/null && echo /usr/bin/python3) python3)
VENV := .venv
BIN := $(VENV)/bin
SEED ?= 42
APP ?= online-boutique
AGENT ?= runbook
STAMP := $(VENV)/.installed
# The modules the twin's simulation spends its time in, compiled to C with mypyc (tools/compile_native.py;
# orchestrator/twin/native.py): the twin's steps take about 30% less CPU, with the same results.
# `make NATIVE=0 ...` leaves them as they are (from source where they were never compiled).
NATIVE ?= 1
NATIVE_SOURCES := $(filter-out %/__init__.py,$(sort $(wildcard orchestrator/twin/model/*.py orchestrator/twin/controllers/*.py))) \
  orchestrator/twin/cluster.py orchestrator/twin/store.py orchestrator/twin/runtime.py \
  orchestrator/twin/selectors.py orchestrator/twin/logbook.py orchestrator/twin/observe/metrics.py
NATIVE_MANIFEST := orchestrator/twin/native.json

.PHONY: setup test lint unit rules marathon bench clean

setup: $(STAMP) $(if $(filter 1,$(NATIVE)),$(NATIVE_MANIFEST)) prometheus sandbox

$(STAMP): pyproject.toml
	@if ! test -x $(BIN)/python && ! $(PYTHON) -c 'import ensurepip' 2>/dev/null && command -v apt-get >/dev/null; then \
	  echo "installing Debian's python3-venv package (venv for $(PYTHON))"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq python3-venv >/dev/null; \
	fi
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $(STAMP)

# A C compiler and the interpreter's headers come from Debian's packages when they are missing; without them
# the build says so in one line and the twin runs from source.
$(NATIVE_MANIFEST): $(STAMP) $(NATIVE_SOURCES) tools/compile_native.py
	@if ! command -v gcc >/dev/null || ! test -f "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h"; then \
	  if command -v apt-get >/dev/null; then \
	    echo "installing Debian's gcc and python3-dev packages (to compile the twin)"; \
	    SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	    $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq gcc python3-dev >/dev/null || true; \
	  fi; \
	fi
	@$(BIN)/python tools/compile_native.py $(NATIVE_SOURCES)

# Prometheus (and promtool) come from Debian's package when they are not on PATH.
prometheus:
	@if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then \
	  echo "installing Debian's prometheus package"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq prometheus >/dev/null; \
	  $$SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true; \
	fi
.PHONY: prometheus

# The agent's sandbox is Debian's bubblewrap (setpriv, which drops the agent's uid, is in util-linux).
sandbox:
	@if ! command -v bwrap >/dev/null; then \
	  echo "installing Debian's bubblewrap package"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq bubblewrap >/dev/null; \
	fi
.PHONY: sandbox

lint: $(STAMP)
	$(BIN)/ruff check orchestrator tests
	$(BIN)/mypy
	$(BIN)/lint-imports

rules: prometheus
	promtool check rules alert_rules/*.yaml
	promtool test rules alert_rules/tests/*.yaml

unit: setup
	$(BIN)/pytest

# Every catalog entry has an admission record made for its current content; an entry changed since is
# screened again here (so the log shows whether it would pass) and the check fails until it is re-admitted.
admissions: setup
	@for app in online-boutique train-ticket astronomy-shop; do \
	  $(BIN)/marathon catalog admit --app $$app --stale --check || exit 1; \
	done
.PHONY: admissions

test: lint rules admissions unit

marathon: setup
	$(BIN)/marathon run --app $(APP) --seed $(SEED) --agent $(AGENT)

serve: setup
	$(BIN)/marathon serve
.PHONY: serve

# One table of figures; `make bench BENCH_ARGS=--save-baseline` keeps them in tests/bench_baseline.json, and
# later runs show each figure's ratio to it (BENCH_ARGS="--only marathon,interface" runs some areas).
bench: setup
	$(BIN)/python tests/bench.py $(BENCH_ARGS)

# The full-length validity matrix (tests/validity.py): oracle, noop and runbook on 3 apps x seeds 1-5.
validity: setup
	$(BIN)/pytest -m matrix -s tests/test_validity_matrix.py
.PHONY: validity

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build $(NATIVE_MANIFEST)
	find orchestrator/twin -name '*.so' -delete

# A real cluster (README "Real cluster"): Kind with Docker, or kubeadm (deploy/kubeadm/).
cluster:
	deploy/kind/up.sh

cluster-down:
	deploy/kind/down.sh

cluster-install: $(STAMP)
	PYTHON=$(abspath $(BIN))/python deploy/install.sh

# Offline checks of deploy/ and manifests/: schemas, promtool, scripts, Dockerfile context.
validate-deploy: $(STAMP) prometheus
	$(BIN)/pytest -q tests/deploy -p no:cacheprovider
.PHONY: cluster cluster-down cluster-install validate-deploy
