# nightshift — the two commands a fresh machine needs: `make up` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export GRADIO_ANALYTICS_ENABLED := False
export HF_HUB_DISABLE_TELEMETRY := 1

.PHONY: install system-deps up test lint bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,postgres,embedded]'
	touch $(STAMP)

install: $(STAMP)

## Debian tools some tests drive for real (installed when we are root; otherwise those tests skip locally).
SYSTEM_PACKAGES := docker-compose chromium redis-server
system-deps:
	@missing=""; for pkg in $(SYSTEM_PACKAGES); do \
	  command -v $$pkg >/dev/null 2>&1 || missing="$$missing $$pkg"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing:$$missing"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "not installed:$$missing (tests that need them skip outside CI)"; fi; fi

## Start API, scheduler and a worker on one port (embedded Redis + SQLite unless configured).
## As root with no `run_as` mapping, jobs would be refused; a one-person box runs them as root, said out loud.
up: $(STAMP)
	@if [ "$$(id -u)" = 0 ] && [ -z "$$NIGHTSHIFT_ALLOW_ROOT_JOBS" ]; then \
	  echo "warning: running as root: jobs run as root too (set run_as in nightshift.toml to map users to accounts)"; \
	  export NIGHTSHIFT_ALLOW_ROOT_JOBS=true; fi; \
	$(BIN)/nightshift up

## Run the whole test suite (starts its own redis-server; uses PostgreSQL on 127.0.0.1:5432 when present).
## Most tests wait on processes they started, so they run side by side (TEST_WORKERS=0: one at a time);
## each xdist worker has its own redis-server and PostgreSQL database.
TEST_WORKERS ?= 3
test: $(STAMP) system-deps
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS)

lint: $(STAMP)
	$(BIN)/ruff check scheduler api assistant tests bench
	$(BIN)/ruff format --check scheduler api assistant tests bench
	$(BIN)/mypy scheduler

## Benchmarks: each script prints one JSON line.
bench: $(STAMP)
	@for script in bench/*.py; do echo "# $$script" >&2; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
