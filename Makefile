# ticketiq-pg: build, lint and test.  `make test` is what CI runs (.ci/run).
#
# Steps that need a PostgreSQL server go through scripts/with_test_server.py: it reuses
# TICKETIQ_TEST_DATABASE_URL when set (as inside `make test`, where one private cluster
# serves every step) and otherwise starts a private cluster for that one step.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
VBIN   := $(VENV)/bin
STAMP_TEST := $(VENV)/.stamp-test
STAMP_DEMO := $(VENV)/.stamp-demo
WITH_SERVER := $(VPY) scripts/with_test_server.py --
PYTEST_ARGS ?=
# this workplace's pip config names local index folders that may be absent: hide that noise
PIP_INSTALL = $(VPY) -m pip install --quiet --disable-pip-version-check
PIP_QUIET   = 2>&1 | { grep -v 'is ignored: it is neither a file nor a directory' || true; }

# section headers; bold only on a terminal
banner = @if [ -t 1 ]; then printf '\n\033[1m==> %s\033[0m\n' "$(1)"; else printf '\n==> %s\n' "$(1)"; fi

.PHONY: help deps venv lint lint-sql lint-py lint-plpgsql pgtap pytest test _test-inner demo clean

help:
	@echo "make test          deps + venv + lint, lint-plpgsql, pgtap, pytest on one private cluster"
	@echo "make deps          check/install PostgreSQL server, pgTAP, pg_prove, plpgsql_check"
	@echo "make venv          .venv with the package editable and the test extra"
	@echo "make lint          sqlfluff (sql/) + ruff"
	@echo "make lint-plpgsql  plpgsql_check over every PL/pgSQL function"
	@echo "make pgtap         pg_prove over sql/tests/"
	@echo "make pytest        pytest (PYTEST_ARGS=... to pass options)"
	@echo "make demo          run the demo on an embedded PostgreSQL"
	@echo "make kill-trials   200 kill-trial rounds (KILL_TRIALS=N, LIYAGENT_KILL_MODE=...)"
	@echo "make bench         the benchmark (docs/performance.md)"
	@echo "make clean         remove .venv, caches, build output, .ticketiq/"

# DEPS_DONE=1 (set by `make test` for its inner steps) skips the repeated check
deps:
	@[ -n "$(DEPS_DONE)" ] || bash scripts/ensure_system_deps.sh

venv: $(STAMP_TEST)
	@:

$(STAMP_TEST): pyproject.toml
	$(call banner,venv: $(VENV) with .[test])
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	@$(PIP_INSTALL) -e '.[test]' $(PIP_QUIET)
	@rm -f $(STAMP_DEMO)
	@touch $@

$(STAMP_DEMO): $(STAMP_TEST)
	$(call banner,venv: adding .[demo])
	@$(PIP_INSTALL) -e '.[test,demo]' $(PIP_QUIET)
	@touch $@

lint: lint-sql lint-py

lint-sql: venv
	$(call banner,lint: sqlfluff sql/)
	@$(VBIN)/sqlfluff lint sql/ --disable-progress-bar
	@echo "sqlfluff: clean"

lint-py: venv
	$(call banner,lint: ruff check)
	@$(VBIN)/ruff check .

lint-plpgsql: deps venv
	$(call banner,lint-plpgsql: plpgsql_check)
	@$(WITH_SERVER) $(VPY) scripts/lint_plpgsql.py

pgtap: deps venv
	$(call banner,pgtap: pg_prove sql/tests/)
	@$(WITH_SERVER) $(VPY) scripts/run_pgtap.py

pytest: venv
	$(call banner,pytest)
	@$(WITH_SERVER) $(VBIN)/pytest $(PYTEST_ARGS)

test: deps venv
	@$(WITH_SERVER) $(MAKE) _test-inner DEPS_DONE=1
	$(call banner,make test: all steps passed)

# One step after another, stopping at the first failure.
_test-inner:
	@$(MAKE) lint
	@$(MAKE) lint-plpgsql
	@$(MAKE) pgtap
	@$(MAKE) pytest
	@$(MAKE) kill-trials-smoke
	@$(MAKE) kill-trials-shape-smoke
	@$(MAKE) bench-smoke

demo: $(STAMP_DEMO)
	$(call banner,demo)
	@$(VBIN)/ticketiq-pg demo

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build dist *.egg-info .ticketiq
	find . -name __pycache__ -type d -prune -not -path './.git/*' -exec rm -rf {} +

# -- performance evidence (bench/, docs/performance.md) ---------------------------------------
# `make bench` measures on this machine (a private durable cluster, or the server named by
# TICKETIQ_BENCH_DATABASE_URL / TICKETIQ_TEST_DATABASE_URL) and prints the table;
# TICKETIQ_BENCH_JSON=file writes every figure, TICKETIQ_BENCH_PLOTS=dir the PNG plots.
# `make bench-smoke` runs the same code with tiny sizes in seconds (the last step of make test).
.PHONY: bench bench-smoke kill-trials kill-trials-smoke kill-trials-shape-smoke

# Kill trials (tests/unit/test_kill_trials.py): a 3+1-round smoke in `make test`,
# 200 rounds on demand.  LIYAGENT_KILL_MODE=kill|stop|backend|restart|failover,
# LIYAGENT_KILL_LEASE_ONLY=N adds N rounds detected by lease expiry alone,
# LIYAGENT_KILL_SEED fixes the timings, LIYAGENT_KILL_REPORT=file writes JSON,
# LIYAGENT_KILL_FLAKY=1 adds transient model and vendor errors at random (judged:
# no run fails, no loss counted for an error).  The production shape (docs/operations.md):
# LIYAGENT_KILL_EDGE=1 (HAProxy in front), LIYAGENT_KILL_MODE=deploy|patroni,
# LIYAGENT_KILL_POOLER=session|transaction (PgBouncer), LIYAGENT_KILL_TARGET=versions (a
# deploy of a new workflow version); kill-trials-shape-smoke runs a round or two of each
# (about 3.5 minutes), skipping with the apt-get command if a package is missing.
KILL_TRIALS ?= 200
kill-trials: deps venv
	$(call banner,kill-trials: $(KILL_TRIALS) rounds ($(or $(LIYAGENT_KILL_MODE),kill)))
	@LIYAGENT_KILL_TRIALS=$(KILL_TRIALS) $(WITH_SERVER) $(VBIN)/pytest tests/unit/test_kill_trials.py -q -s

kill-trials-smoke: deps venv
	$(call banner,kill-trials-smoke: 3 rounds + 1 lease-only amid transient model and vendor errors)
	@LIYAGENT_KILL_TRIALS=3 LIYAGENT_KILL_LEASE_ONLY=1 LIYAGENT_KILL_FLAKY=1 $(WITH_SERVER) $(VBIN)/pytest tests/unit/test_kill_trials.py -q

SHAPE_TRIALS = $(WITH_SERVER) $(VBIN)/pytest tests/unit/test_kill_trials.py -q -rs
kill-trials-shape-smoke: deps venv
	$(call banner,kill-trials-shape-smoke: edge + session pooler; deploy; a new workflow version; Patroni; transaction pooler)
	@LIYAGENT_KILL_TRIALS=1 LIYAGENT_KILL_EDGE=1 LIYAGENT_KILL_POOLER=session $(SHAPE_TRIALS)
	@LIYAGENT_KILL_TRIALS=2 LIYAGENT_KILL_EDGE=1 LIYAGENT_KILL_MODE=deploy $(SHAPE_TRIALS)
	@LIYAGENT_KILL_TRIALS=2 LIYAGENT_KILL_EDGE=1 LIYAGENT_KILL_MODE=deploy LIYAGENT_KILL_TARGET=versions LIYAGENT_KILL_SEED=11 $(SHAPE_TRIALS)
	@LIYAGENT_KILL_TRIALS=2 LIYAGENT_KILL_MODE=patroni $(SHAPE_TRIALS)
	@LIYAGENT_KILL_TRIALS=1 LIYAGENT_KILL_POOLER=transaction $(SHAPE_TRIALS)

STAMP_BENCH := $(VENV)/.stamp-bench

$(STAMP_BENCH): $(STAMP_TEST)
	$(call banner,venv: adding the bench and peers extras)
	@$(PIP_INSTALL) -e '.[test,bench,peers]' $(PIP_QUIET)
	@touch $@

bench: deps $(STAMP_BENCH)
	$(call banner,bench)
	@$(VPY) -m bench

bench-smoke: deps venv
	$(call banner,bench-smoke)
	@$(VPY) -m bench --smoke
