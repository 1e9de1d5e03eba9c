# Developer and CI entry points. Every target works on a fresh machine with only python3.11:
# the virtualenv is created and the pinned requirements installed on first use (stamp files make
# re-runs instant; touching a requirements file reinstalls).
#
#   make run           migrate, seed a demo widget, print its token, start web, worker, ai, bulk and beat
#   make test          the whole pytest suite (embedded default, or DATABASE_URL / REDIS_URL)
#   make lint          ruff check, ruff format --check, import-linter contracts (pyproject.toml)
#   make schema        OpenAPI schema, validated, warnings are errors -> var/openapi.yaml
#   make bench         every bench/*.py; checks every BENCH line against its target (exit 1 naming misses)
#   make check-deploy  Django's deployment checks with production settings
#   make widget        rebuild the widget (npm ci + esbuild) into apps/widget/static/widget/ (committed)
#   make console-charts rebuild the console's report charts (npm ci + esbuild) into apps/console/static/console/charts/ (committed)
#   make docs          the guides (docs/, MkDocs Material) served on http://127.0.0.1:8001
#   make docs-build    mkdocs build --strict into var/site (a broken link or an orphan page fails)

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

VENV := .venv
PY := $(VENV)/bin/python
BASE_STAMP := $(VENV)/.installed-base
DEV_STAMP := $(VENV)/.installed-dev
PIP_INSTALL := $(PY) -m pip install --disable-pip-version-check --progress-bar off -q
# requirements/*.txt name local wheel folders too; where a machine lacks one, pip warns per package.
# justext asks for lxml[html_clean], an extra lxml 6 does not declare; lxml-html-clean is pinned itself.
PIP_QUIET := 2>&1 | { grep -v -e 'is ignored: it is neither a file nor a directory' \
  -e "does not provide the extra 'html_clean'" || true; }

PORT ?= 8000
export PORT
# Procfile commands (uvicorn, celery) and scripts find the venv's tools first.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

PYTEST_ARGS ?=

.PHONY: help run test lint schema bench check-deploy venv venv-dev widget console-charts docs docs-build

help:
	@sed -n 's/^#   make /make /p' $(firstword $(MAKEFILE_LIST))

$(PY):
	@if command -v python3.11 >/dev/null 2>&1; then python3.11 -m venv $(VENV); \
	else echo "python3.11 not found, using python3 ($$(python3 --version))" >&2; python3 -m venv $(VENV); fi

$(BASE_STAMP): requirements/base.txt | $(PY)
	@echo "pip: installing requirements/base.txt into $(VENV)"
	@$(PIP_INSTALL) -r requirements/base.txt $(PIP_QUIET)
	@touch $@

$(DEV_STAMP): requirements/base.txt requirements/dev.txt | $(PY)
	@echo "pip: installing requirements/base.txt + dev.txt into $(VENV)"
	@$(PIP_INSTALL) -r requirements/base.txt -r requirements/dev.txt $(PIP_QUIET)
	@touch $@ $(BASE_STAMP)

venv: $(BASE_STAMP)
venv-dev: $(DEV_STAMP)

run: $(BASE_STAMP)
	@exec scripts/run.sh

test: $(DEV_STAMP)
	@scripts/pytest.sh $(PYTEST_ARGS)

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache

schema: $(BASE_STAMP)
	@mkdir -p var
	$(PY) manage.py spectacular --validate --fail-on-warn --file var/openapi.yaml
	@echo "schema: var/openapi.yaml"

bench: $(DEV_STAMP)
	@scripts/bench.sh

check-deploy: $(BASE_STAMP)
	@APP_MODE=production DEBUG=0 ALLOWED_HOSTS=example.com \
	  SECRET_KEY="$$($(PY) -c 'import secrets; print(secrets.token_urlsafe(48))')" \
	  $(PY) manage.py check --deploy --fail-level WARNING

# The built files are committed (make run needs only Python); CI rebuilds and compares.
widget:
	cd frontend/widget && npm ci --no-audit --no-fund && node build.mjs

console-charts:
	cd frontend/console-charts && npm ci --no-audit --no-fund && node build.mjs

DOCS_PORT ?= 8001
docs: $(DEV_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:$(DOCS_PORT)

docs-build: $(DEV_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict
