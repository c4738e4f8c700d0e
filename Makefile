# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_DB := reports/demo.db

.PHONY: demo test fuzz bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,fast]' || $(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	@echo "== triage scan: a real DFC compile that fails (fixture) =="
	-$(BIN)/triage scan fixtures/corpus/dfc/cases/043-ghnote-bilstm-hailo8l-automri-partition-failure.log --no-store
	@echo
	@echo "== triage scan: an hls4ml synthesis report with Bonded IOB over 100 % =="
	-$(BIN)/triage scan fixtures/corpus/hls/cases/002-hls4ml-fixture-vivado_synth-bonded-iob-307pct.rpt --no-store
	@rm -f $(DEMO_DB)
	@echo
	@echo "== a compile farm's history: eight jobs over six nights, ingested from JSON documents dated by 'created' =="
	$(BIN)/python tests/history.py $(DEMO_DB) reports/
	$(BIN)/triage report --last --db $(DEMO_DB) --out reports/demo-run.html
	@echo
	@echo "HTML reports written: $(CURDIR)/reports/index.html (one nightly page per night, each run's own page in reports/runs/) and $(CURDIR)/reports/demo-run.html"

test: $(STAMP)
	$(BIN)/python -m pytest

fuzz: $(STAMP)
	TRIAGE_FUZZ_EXAMPLES=10000 $(BIN)/python -m pytest tests/test_fuzz.py -p no:cacheprovider

bench: $(STAMP)
	bench/run

clean:
	rm -rf $(VENV) build dist *.egg-info
