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
	@for f in fixtures/corpus/logs/hls4ml/*.log fixtures/corpus/logs/vivado/*.log fixtures/corpus/dfc/cases/0[0-4]*.log; do \
		$(BIN)/triage scan "$$f" --db $(DEMO_DB) --label "$$(basename $$f | cut -d- -f2)" --format json > /dev/null 2>&1 || true; \
	done
	$(BIN)/triage report --last --db $(DEMO_DB) --out reports/demo-run.html
	$(BIN)/triage nightly --db $(DEMO_DB) --since 3650d --out reports/
	@echo
	@echo "HTML reports written: $(CURDIR)/reports/demo-run.html and $(CURDIR)/reports/index.html"

test: $(STAMP)
	$(BIN)/python -m pytest

fuzz: $(STAMP)
	TRIAGE_FUZZ_EXAMPLES=10000 $(BIN)/python -m pytest tests/test_fuzz.py -p no:cacheprovider

bench: $(STAMP)
	bench/run

clean:
	rm -rf $(VENV) build dist *.egg-info
