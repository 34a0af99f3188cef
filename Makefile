# Two commands that work on a fresh machine (each makes its own virtual environment):
#   make demo   -> installs medaudit and runs the audit on the embedded (simulated) default
#   make test   -> installs medaudit with its test witnesses and runs the whole test suite
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
OUT    ?= demo-out

.PHONY: demo test bench lint clean

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	touch $@

$(VENV)/.audit: $(VENV)/.created pyproject.toml
	$(PY) -m pip install --quiet -e '.[audit]'
	touch $@

$(VENV)/.test: $(VENV)/.created pyproject.toml
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.audit

demo: $(VENV)/.audit
	$(VENV)/bin/medaudit audit examples/paper000_simulated.yaml --out $(OUT) --overwrite

test: $(VENV)/.test
	$(PY) -m pytest -q -p no:cacheprovider --durations=25 -n logical --dist worksteal

bench: $(VENV)/.test
	$(PY) benchmarks/bench_core.py

lint: $(VENV)/.test
	$(PY) -m pip install --quiet ruff
	$(PY) -m ruff check src tests benchmarks

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache .hypothesis
