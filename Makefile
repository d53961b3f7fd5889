# Set-up and entry points. `make demo` and `make test` each do all set-up on a
# fresh machine (a virtualenv in .venv with the CPU torch wheel, then the project
# and its extras in one pip command).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DATA_ROOT ?= ../shared/data

.PHONY: setup demo test test-fast baselines clean

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[models,plots,test,onnx,package,viz,ray]"
	touch $@

setup: $(BIN)/.installed

## The main job on the embedded default: link a sample text's mentions.
demo: setup
	$(BIN)/python -m spacy_bioel link

## The whole test suite (data-marked tests run when $(DATA_ROOT) exists).
test: setup
	BIOEL_DATA_ROOT=$(abspath $(DATA_ROOT)) $(BIN)/python -m pytest -q

## Unit tests only (no real data).
test-fast: setup
	$(BIN)/python -m pytest -q -m "not data"

## Every dataset workflow and the baseline table (metrics/baselines.md).
baselines: setup
	$(BIN)/python -m spacy project run all . --vars.data_root $(DATA_ROOT)

clean:
	rm -rf $(VENV) corpus kbs metrics project.lock
