# shiftbox — the README's commands. Everything bootstraps itself on a fresh machine (Python >= 3.11):
# uv is installed with pip when missing, .venv is created and synced from uv.lock, snapshots are
# built if absent.
SHELL := /bin/bash
PYTHON ?= python3
UV := $(PYTHON) -m uv
VENV := .venv
RUN := $(UV) run --no-sync
SNAPSHOTS := snapshots-present
export LITELLM_LOCAL_MODEL_COST_MAP := True
export UV_LINK_MODE := copy

.PHONY: help demo test test-floor lint bench attacks snapshots snapshots-present tasks images env uv clean

help:
	@echo "make demo       run the offline demo evaluation"
	@echo "make test       run the test suite (what CI runs; includes make test-floor)"
	@echo "make test-floor the MCP tests and the verifiers extra on the lowest mcp shiftbox allows (.venv-floor)"
	@echo "make lint       ruff"
	@echo "make bench      benchmarks (prints figures, writes bench/out/ and docs/benchmarks.md)"
	@echo "make attacks    re-run the hostile rounds (fuzz, load, kill -9, tampers, hostile agent, bad ids, secrets; docs/security.md)"
	@echo "make snapshots  rebuild the native snapshots"
	@echo "make tasks      regenerate the committed task sets (snapshots/<domain>/v1/tasks.json, n=150, seed 7)"
	@echo "make images     build the domain server images offline (needs a Docker engine; docs/containers.md)"

uv:
	@$(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet "uv>=0.5,<1"

# --compile-bytecode: the installed packages' bytecode is written once here, so no process of a run or a test
# compiles them again (litellm's import takes about twice as long uncompiled, and PYTHONDONTWRITEBYTECODE keeps it so).
# The workspace's own sources are installed editable, which uv does not compile: compileall writes theirs (what is
# up to date is skipped), else every `shiftbox run` compiles its modules again (~0.17 s of CPU before its first request).
env: uv $(VENV)/.synced
	@$(VENV)/bin/python -m compileall -q client/shiftbox servers/shiftbox_servers >/dev/null

$(VENV)/.synced: uv.lock pyproject.toml servers/pyproject.toml client/pyproject.toml
	$(UV) sync --locked --all-packages --all-extras --no-extra verifiers --compile-bytecode
	@touch $@

# Every installed domain's snapshot (`shiftbox snapshots list`), built when absent.
snapshots-present: env
	@domains=$$($(RUN) shiftbox snapshots list) || exit 1; for d in $$domains; do \
		[ -e snapshots/$$d/v1/db.sqlite ] || $(RUN) shiftbox snapshots build $$d || exit 1; \
	done

snapshots: env
	$(RUN) shiftbox snapshots build

# The committed generated task sets; rerun after changing a domain's tools, snapshot or missions, or the
# generator (docs/tasks.md). Same snapshot, n and seed -> byte-identical files. Every domain with task missions
# gets its set; the cross-domain set keeps the domains it names (add one: docs/adding-a-domain.md).
tasks: env $(SNAPSHOTS)
	domains=$$($(RUN) shiftbox snapshots list --tasks) || exit 1; for d in $$domains; do \
		$(RUN) shiftbox tasks generate $$d --n 150 --seed 7 --out snapshots/$$d/v1/tasks.json || exit 1; \
	done
	$(RUN) shiftbox tasks generate-cross $$($(RUN) python -c 'import json; print(json.load(open("tasks/cross-domain.json"))["domain"])') \
		--per-pair 11 --seed 7 --out tasks/cross-domain.json || exit 1; \
	$(RUN) shiftbox tasks generate-cross $$($(RUN) python -c 'import json; print(json.load(open("tasks/cross-domain.json"))["domain"])') \
		--per-pair 11 --seed 7 --independent --out tasks/cross-domain-independent.json

# Then make test-floor (below): the MCP tests again on the lowest mcp the distributions allow.
# The interop tests' MCP clients (pinned npm packages, tests/interop/package-lock.json) are installed
# when node and npm exist; without them, or if the install fails, those tests skip and say why.
test: env $(SNAPSHOTS)
	$(RUN) ruff check .
	@bash tests/interop/install.sh || echo "make test: tests/interop/install.sh failed; the interop tests will skip" >&2
	@$(RUN) pytest -q; status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test: pytest collected no tests" >&2; exit 1; fi; \
	exit $$status
	@$(MAKE) --no-print-directory test-floor

# The lowest mcp the distributions allow (`mcp>=X` in client/pyproject.toml), in an environment of its own, synced
# from the lock with the verifiers extra: verifiers pins mcp to that floor (and openai<3), so the lock resolves it in
# a fork of its own ([tool.uv] conflicts in pyproject.toml; without the inspect extra and the examples group), and
# this environment is the floor. Runs the tests that reach the MCP SDK (servers, world, serve) and the RL
# environments'; refuses to run when the lock's mcp there is not the floor.
VENV_FLOOR := .venv-floor
MCP_FLOOR = $(shell sed -n 's/^ *"mcp>=\([0-9.]*\),.*/\1/p' client/pyproject.toml)
FLOOR_TESTS := tests/servers tests/client/world tests/client/serve tests/client/rl/test_verifiers_env.py tests/client/rl/test_env_plan.py
test-floor: env $(SNAPSHOTS)
	@[ -n "$(MCP_FLOOR)" ] || { echo "make test-floor: no mcp>=X,<Y in client/pyproject.toml" >&2; exit 1; }
	UV_PROJECT_ENVIRONMENT=$(VENV_FLOOR) $(UV) sync --quiet --locked --all-packages --extra verifiers --no-group examples
	@UV_PROJECT_ENVIRONMENT=$(VENV_FLOOR) $(RUN) python -c 'import importlib.metadata as m, sys; v = m.version("mcp"); print("make test-floor: mcp", v); sys.exit(v != sys.argv[1] and f"make test-floor: the lock has mcp {v} with the verifiers extra, not the floor {sys.argv[1]} (set mcp>= in client/ and servers/pyproject.toml to what verifiers pins, then uv lock)")' "$(MCP_FLOOR)"
	UV_PROJECT_ENVIRONMENT=$(VENV_FLOOR) $(RUN) pytest -q $(FLOOR_TESTS)

lint: env
	$(RUN) ruff check .

images: env $(SNAPSHOTS)
	PYTHON=$(PYTHON) containers/build-images.sh

bench: env $(SNAPSHOTS)
	$(RUN) python bench/run.py --publish

# Issue 30's attacks re-run against the real CLI and servers, offline on 127.0.0.1: one line of figures a round,
# exit 1 when any round finds a failure; stops itself after --budget seconds (default 600).
attacks: env $(SNAPSHOTS)
	$(RUN) python bench/attacks.py

demo: env $(SNAPSHOTS)
	$(RUN) shiftbox demo

clean:
	rm -rf $(VENV) .pytest_cache tests/interop/node_modules
