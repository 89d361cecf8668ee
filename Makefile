# The README's two commands: `make run` starts everything, `make test` runs the suite. Both set themselves up.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SYSTEM_PACKAGES := redis-server bubblewrap chromium npm wrk gdal-bin
OPS_ASSETS := gateway/ops/assets
OPS_VENDOR := gateway/ops/static/vendor

.PHONY: run stac-demo test docs bench chaos compose-test fuzz lint run-deps system-deps ops-assets conformance-deps conformance clean

# What running needs (`make run`): the package alone. The test and docs extras come on top of it for the other targets.
$(BIN)/.installed-run: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $@

$(BIN)/.installed: $(BIN)/.installed-run
	$(BIN)/pip install -q -e ".[test,docs]"
	touch $@

# Python result handlers run on a system Python under /usr with its whole standard library (the worker refuses to
# start otherwise): Debian's python3, not python3.X-minimal alone, when the venv's own Python lives elsewhere (pyenv).
SANDBOX_PYTHON_WHOLE = /usr/bin/python3 -I -S -c 'import json, ctypes, inspect, ast' 2>/dev/null
# `run-deps`: what `make run` needs; `system-deps` adds what the tests and benches drive (chromium, wrk).
RUN_CHECKS = command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	command -v bwrap >/dev/null || missing="$$missing bubblewrap"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	command -v gdaldem >/dev/null || missing="$$missing gdal-bin"; \
	$(SANDBOX_PYTHON_WHOLE) || missing="$$missing python3";
TEST_CHECKS = command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v wrk >/dev/null || missing="$$missing wrk"; \
	test -e /usr/share/postgresql/15/extension/postgis.control || missing="$$missing postgresql-15-postgis-3";
APT_MISSING = if [ -n "$$missing" ]; then \
	  if command -v apt-get >/dev/null; then \
	    echo "installing$$missing with apt"; \
	    $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "missing:$$missing (install them; redis-server is optional for make run)"; fi; \
	fi
run-deps:
	@missing=""; $(RUN_CHECKS) $(APT_MISSING)

system-deps:
	@missing=""; $(RUN_CHECKS) $(TEST_CHECKS) $(APT_MISSING)

# The /ops dashboard's front-end libraries, from the npm registry into ignored folders; the gateway serves them.
$(OPS_VENDOR)/.installed: $(OPS_ASSETS)/package.json $(OPS_ASSETS)/package-lock.json
	cd $(OPS_ASSETS) && npm ci --no-audit --no-fund --loglevel=error
	mkdir -p $(OPS_VENDOR)
	cp $(OPS_ASSETS)/node_modules/htmx.org/dist/htmx.min.js $(OPS_ASSETS)/node_modules/htmx-ext-sse/dist/sse.min.js \
	   $(OPS_ASSETS)/node_modules/uplot/dist/uPlot.iife.min.js $(OPS_ASSETS)/node_modules/uplot/dist/uPlot.min.css \
	   $(OPS_ASSETS)/node_modules/maplibre-gl/dist/maplibre-gl.mjs $(OPS_ASSETS)/node_modules/maplibre-gl/dist/maplibre-gl-worker.mjs \
	   $(OPS_ASSETS)/node_modules/maplibre-gl/dist/maplibre-gl.css $(OPS_VENDOR)/
	touch $@

ops-assets: run-deps $(OPS_VENDOR)/.installed

# Node 22 and the MCP conformance suite, from the npm registry into the ignored .conformance/ (the machine's Node may be older).
CONFORMANCE := .conformance
$(CONFORMANCE)/node_modules/.installed: $(CONFORMANCE)/package.json $(CONFORMANCE)/package-lock.json
	cd $(CONFORMANCE) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

conformance-deps: system-deps $(CONFORMANCE)/node_modules/.installed

# The official suite against `geogate dev` with the fixtures, both eras; non-zero on any scored failure or tasks-* failure.
conformance: $(BIN)/.installed conformance-deps
	$(BIN)/python -m tests.conformance_suite

run: $(BIN)/.installed-run run-deps ops-assets
	$(BIN)/geogate dev

# A STAC API to search (docs/stac.md): the tests' Sentinel-2-like catalog on pgstac and its COG server, until Ctrl-C.
stac-demo: $(BIN)/.installed system-deps
	$(BIN)/python -m tests.stac

test: $(BIN)/.installed system-deps ops-assets conformance-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(README_FITS)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	$(BIN)/pytest

# The docs site (mkdocs.yml, docs/) into the ignored site/; --strict turns a broken link or anchor into a failure.
# The README stays a front door: depth goes to docs/.
README_FITS = @test $$(wc -l < README.md) -le 250 || { echo "README.md has over 250 lines: move depth to docs/"; exit 1; }
docs: $(BIN)/.installed
	$(README_FITS)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# docs/benchmarks.md's main table, each row against its baseline in the same run (BENCH_ARGS=--quick for less).
BENCH_ARGS ?=
bench: $(BIN)/.installed system-deps
	$(BIN)/python bench/run.py --json .bench/results.json $(BENCH_ARGS)

# The chaos suite at the issue's full size (100 calls on a 4096² raster, three node kills); `make test` runs it short.
chaos: $(BIN)/.installed system-deps
	GEOGATE_CHAOS=full $(BIN)/pytest -s tests/cluster

# docker-compose.yml for real under podman (tests/compose, docs/compose.md): podman, runc and mmdebstrap with apt when
# missing, base images from Debian packages (cached), Geogate's image, the cluster up, faults, down. Fails, never
# skips, when the engine cannot run.
CONTAINERS_CONF := $(CURDIR)/deploy/podman/containers.conf
compose-test: $(BIN)/.installed
	CONTAINERS_CONF=$(CONTAINERS_CONF) deploy/podman/engine.sh
	CONTAINERS_CONF=$(CONTAINERS_CONF) $(BIN)/pytest -s tests/compose

# 10,000 hostile cases against a running gateway (5,000 tool-argument cases, 5,000 raw JSON-RPC frames); CI runs 60 each
fuzz: $(BIN)/.installed system-deps
	rm -f .fuzz-report.txt
	GEOGATE_FUZZ_EXAMPLES=5000 GEOGATE_FUZZ_REPORT=.fuzz-report.txt $(BIN)/pytest tests/integration/test_fuzz_e2e.py -q --timeout 3600
	cat .fuzz-report.txt

lint: $(BIN)/.installed
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) site .geogate .bench .fuzz-report.txt $(CONFORMANCE)/node_modules $(OPS_ASSETS)/node_modules $(OPS_VENDOR)
