# Set-up and entry points. `make demo` and `make test` each do all set-up on a
# fresh machine (a virtualenv in .venv with the CPU torch wheel, then the project
# and its extras in one pip command).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# spacy-transformers 1.4 needs transformers<4.53.3: its own environment, so the main one keeps 5.x
TRF_VENV ?= .venv-trf
TRF_BIN := $(TRF_VENV)/bin
DATA_ROOT ?= ../shared/data

.PHONY: setup setup-trf demo test test-trf test-fast baselines clean

EXTRAS := train,models,plots,test,package,viz,ray
TRF_EXTRAS := train,models,test,trf

# a virtualenv $(1) with the CPU torch wheel, then the project and the extras $(2) in one pip command
define make_venv
	test -x $(1)/bin/python || $(PYTHON) -m venv $(1)
	$(1)/bin/python -m pip install -q --upgrade pip
	$(1)/bin/python -m pip install -q torch==2.13.0
	$(1)/bin/python -m pip install -q -e ".[$(2)]"
	touch $(1)/bin/.installed
endef

$(BIN)/.installed: pyproject.toml
	$(call make_venv,$(VENV),$(EXTRAS))

setup: $(BIN)/.installed

$(TRF_BIN)/.installed: pyproject.toml
	$(call make_venv,$(TRF_VENV),$(TRF_EXTRAS))

## The trf environment: spacy-transformers 1.4 with the transformers it supports (<4.53.3).
setup-trf: $(TRF_BIN)/.installed

## The main job on the embedded default: link a sample text's mentions.
demo: setup
	$(BIN)/python -m spacy_bioel link

## The whole test suite (data-marked tests run when $(DATA_ROOT) exists), then the
## spacy-transformers tests in the trf environment. The suite runs on one pytest-xdist
## worker per core, at most 4 (TEST_WORKERS=0 runs it in one process); each test file stays
## on one worker (tests/conftest.py).
TEST_WORKERS ?= auto
test: setup test-trf
	BIOEL_DATA_ROOT=$(abspath $(DATA_ROOT)) $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --maxprocesses 4 --dist loadgroup

## The tests of the transformer-listening mention tower, with spacy-transformers installed.
test-trf: setup-trf
	$(TRF_BIN)/python -m pytest -q tests/encoders/test_contextual.py "tests/test_registry.py::test_every_shipped_config_resolves_its_stages"

## Unit tests only (no real data).
test-fast: setup
	$(BIN)/python -m pytest -q -m "not data"

## Every dataset workflow and the baseline table (metrics/baselines.md).
baselines: setup
	$(BIN)/python -m bench project all --vars.data_root $(DATA_ROOT)

clean:
	rm -rf $(VENV) $(TRF_VENV) corpus kbs metrics project.lock
