# The README's two commands: `make run` starts everything, `make test` runs the suite. Both set themselves up.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SYSTEM_PACKAGES := redis-server bubblewrap

.PHONY: run test bench chaos fuzz lint system-deps clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[test]"
	touch $@

system-deps:
	@missing=""; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	command -v bwrap >/dev/null || missing="$$missing bubblewrap"; \
	[ -x /usr/bin/python3.11 ] || missing="$$missing python3.11-minimal"; \
	if [ -n "$$missing" ]; then \
	  if command -v apt-get >/dev/null; then \
	    echo "installing$$missing with apt"; \
	    $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "missing:$$missing (install them; redis-server is optional for make run)"; fi; \
	fi

run: $(BIN)/.installed system-deps
	$(BIN)/geogate dev

test: $(BIN)/.installed system-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pytest

bench: $(BIN)/.installed system-deps
	$(BIN)/python bench/overhead.py
	$(BIN)/python bench/throughput.py

# The chaos suite at the issue's full size (100 calls on a 4096² raster, three node kills); `make test` runs it short.
chaos: $(BIN)/.installed system-deps
	GEOGATE_CHAOS=full $(BIN)/pytest -s tests/cluster

# 10,000 hostile cases against a running gateway (5,000 tool-argument cases, 5,000 raw JSON-RPC frames); CI runs 60 each
fuzz: $(BIN)/.installed system-deps
	rm -f .fuzz-report.txt
	GEOGATE_FUZZ_EXAMPLES=5000 GEOGATE_FUZZ_REPORT=.fuzz-report.txt $(BIN)/pytest tests/integration/test_fuzz_e2e.py -q --timeout 3600
	cat .fuzz-report.txt

lint: $(BIN)/.installed
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) .geogate .bench .fuzz-report.txt
