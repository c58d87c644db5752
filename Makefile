# rocketmq-actors - the two commands a new user needs are `make run` and `make test`.
# Everything is created from nothing: a virtualenv in .venv, the RocketMQ server jars from
# Maven Central in ~/.cache/rocketmq-actors (downloaded once, then reused offline).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STATE  ?= .state/cluster
STAMP  := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help venv run test test-busy lint typecheck pytest unit integration integration-a integration-b compat oldest-anyio oldest-faststream trio solo chaos fuzz bench soak cluster-up cluster-down clean

help:
	@echo "make run          start a local RocketMQ cluster and run the main job, then stop it"
	@echo "make test         ruff, mypy --strict, then side by side: the unit tests, the integration tests"
	@echo "                  on real 5.3.3, 5.5.0 and 4.9.7 clusters, the lifecycle tests on the oldest"
	@echo "                  anyio and the FastStream tests on the oldest FastStream we support, the"
	@echo "                  lifecycle, producer and consumer tests on trio; then,"
	@echo "                  alone, the tests that start Spark in a process of their own (solo);"
	@echo "                  every stage runs whatever another did, then one summary (tests/stages.py)"
	@echo "make test-busy    make test with two busy loops beside it: it must pass on a busy machine"
	@echo "make chaos        every chaos scenario (make test runs the fast ones) and the report"
	@echo "make bench        benchmarks against the Java client, and ours alone (benchmarks/results/)"
	@echo "make soak         10 minutes of steady produce + consume: RSS, tasks and fds must stay flat"
	@echo "make fuzz         a million mutated inputs through every decoder of peer bytes"
	@echo "make cluster-up   start a local cluster in the background (state in $(STATE))"
	@echo "make cluster-down stop it"

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("Python >= 3.11 is required, found " + sys.version.split()[0]) if sys.version_info < (3, 11) else None'
	@command -v java >/dev/null || { echo "java not found: install a JDK 17 (apt-get install openjdk-17-jdk-headless)"; exit 1; }
	@command -v mvn >/dev/null || { echo "mvn not found: install Maven (apt-get install maven)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	$(PY) examples/main_job.py

lint: $(STAMP)
	$(VENV)/bin/ruff check rocketmq_actors tests benchmarks examples
	$(VENV)/bin/ruff format --check rocketmq_actors tests benchmarks examples
	$(VENV)/bin/lint-imports --no-cache

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# REPORT=<path>: a pytest stage's JUnit report goes there (tests/stages.py reads it)
JUNIT = $(if $(REPORT),--junitxml=$(REPORT))

# the unit tests (no broker) and the integration tests on 5.3.3; `make pytest` runs both in one
# session, make test runs them as two stages side by side (each with a temporary directory of
# its own: pytest empties its base directory when a session starts)
MAIN_MARKERS := not spark and not chaos and not solo

pytest: $(STAMP)
	$(PY) -m pytest -m "$(MAIN_MARKERS)" --ignore=tests/test_snippets.py $(JUNIT)

unit: $(STAMP)
	$(PY) -m pytest -m "not integration and $(MAIN_MARKERS)" --ignore=tests/test_snippets.py \
		--basetemp=.state/pytest/unit $(JUNIT)

# (without the tests marked `elsewhere`: compat-5.5.0 runs them, see below). make test runs
# them as two sessions side by side, each with a cluster of its own (in one session they were
# the longest stage): integration-a, the paths below, which hold every test of the shared
# two-master cluster (so it starts once), and integration-b, the rest
INTEGRATION_MARKERS := integration and $(MAIN_MARKERS) and not elsewhere
INTEGRATION_A := tests/consumer tests/cluster tests/testing tests/producer/test_failover_real.py \
	tests/runtime tests/trace

integration: $(STAMP)
	$(PY) -m pytest -m "$(INTEGRATION_MARKERS)" --ignore=tests/test_snippets.py $(JUNIT)

integration-a: $(STAMP)
	$(PY) -m pytest -m "$(INTEGRATION_MARKERS)" $(INTEGRATION_A) \
		--basetemp=.state/pytest/integration-a $(JUNIT)

integration-b: $(STAMP)
	$(PY) -m pytest -m "$(INTEGRATION_MARKERS)" --ignore=tests/test_snippets.py \
		$(addprefix --ignore=,$(INTEGRATION_A)) --basetemp=.state/pytest/integration-b $(JUNIT)

# the integration suite again on the other broker versions: 5.5.0, the newest release whose
# server jars all resolve on Maven Central (5.5.1 published only its broker), and 4.9.7, the
# newest 4.9 one (4.9.8's server jars were never published). What does not depend on the
# broker's version runs once, in `pytest` on 5.3.3: the unit tests and the integration tests
# marked `once` (client-side fault handling, the launcher's fixed-version runs); the
# documentation's snippets run in compat-5.5.0, and the chaos tests (client behaviour under
# faults, marker `chaos`) and the Spark tests in compat-4.9.7, to even out the three sessions'
# lengths; for the same reason compat-5.5.0 also runs the `once` tests marked `elsewhere`,
# which start clusters of their own and use no session's.
# docs/compatibility.md lists what differs between the versions.
COMPAT_VERSIONS := 5.5.0 4.9.7
COMPAT_IGNORE := --ignore=tests/spark --ignore=tests/chaos --ignore=tests/test_snippets.py

compat: $(addprefix compat-,$(COMPAT_VERSIONS))

compat-%: $(STAMP)
	$(PY) -m pytest -m "integration and not once" --rocketmq-version $* $(COMPAT_IGNORE) $(JUNIT)

compat-5.5.0: $(STAMP)
	$(PY) -m pytest -m "((integration and not once) or elsewhere) and not solo" \
		--rocketmq-version 5.5.0 \
		$(filter-out --ignore=tests/test_snippets.py,$(COMPAT_IGNORE)) $(JUNIT)

compat-4.9.7: $(STAMP)
	$(PY) -m pytest -m "((integration and not once) or spark) and not solo" \
		--rocketmq-version 4.9.7 \
		$(filter-out --ignore=tests/spark --ignore=tests/chaos,$(COMPAT_IGNORE)) $(JUNIT)

# the tests that start Spark in a process of their own (the killed driver on a multi-process
# local-cluster, the documentation's Spark programs): run alone, after the parallel sessions,
# whose brokers would otherwise share the two cores with their JVMs (under that load a Python
# worker once missed Spark's time limit to connect back)
solo: $(STAMP)
	$(PY) -m pytest -m solo $(JUNIT)

# the lifecycle tests again on the oldest anyio pyproject.toml allows, installed once into a
# directory that shadows the venv's (newest) anyio for this run only
ANYIO_OLDEST := $(shell sed -n 's/^ *"anyio>=\([0-9.]*\)",$$/\1/p' pyproject.toml)
OLDEST_ANYIO := .state/anyio-$(ANYIO_OLDEST)
LIFECYCLE_TESTS := tests/runtime/test_lifecycle.py tests/runtime/test_lifecycle_real.py \
	tests/cluster/test_instance_start.py tests/producer/test_failures.py

$(OLDEST_ANYIO)/.installed: pyproject.toml | $(STAMP)
	rm -rf $(OLDEST_ANYIO)
	$(PY) -m pip install --quiet --target $(OLDEST_ANYIO) "anyio==$(ANYIO_OLDEST)"
	touch $@

oldest-anyio: $(OLDEST_ANYIO)/.installed
	PYTHONPATH=$(OLDEST_ANYIO) ROCKETMQ_ACTORS_EXPECT_ANYIO=$(ANYIO_OLDEST) \
		$(PY) -m pytest -p no:cacheprovider $(LIFECYCLE_TESTS) --basetemp=$(OLDEST_ANYIO)-tmp \
		$(JUNIT)

# the lifecycle tests and the producer and consumer integration tests again on anyio's trio
# backend (the client runs on any anyio backend): tests/conftest.py runs each async test under
# anyio.run(..., backend="trio") when ROCKETMQ_ACTORS_BACKEND says so, pytest-asyncio off
TRIO_TESTS := $(LIFECYCLE_TESTS) tests/producer/test_producer_real.py \
	tests/producer/test_autobatch.py tests/runtime/test_workqueue.py \
	tests/consumer/push/test_concurrent.py \
	tests/consumer/push/test_push_real.py tests/consumer/pull/test_pull_real.py \
	tests/consumer/pop/test_pop_real.py

trio: $(STAMP)
	ROCKETMQ_ACTORS_BACKEND=trio $(PY) -m pytest -p no:asyncio -p no:anyio -p no:cacheprovider \
		$(TRIO_TESTS) --basetemp=.state/pytest/trio $(JUNIT)

# the FastStream tests again on the oldest FastStream the `faststream` extra allows (pytest ran
# them on the newest), installed once into a directory that shadows the venv's for this run
FASTSTREAM_OLDEST := $(shell sed -n 's/^faststream = \["faststream\(\[cli\]\)\{0,1\}>=\([0-9.]*\),.*/\2/p' pyproject.toml)
OLDEST_FASTSTREAM := .state/faststream-$(FASTSTREAM_OLDEST)

$(OLDEST_FASTSTREAM)/.installed: pyproject.toml | $(STAMP)
	rm -rf $(OLDEST_FASTSTREAM)
	$(PY) -m pip install --quiet --no-deps --target $(OLDEST_FASTSTREAM) "faststream==$(FASTSTREAM_OLDEST)"
	touch $@

oldest-faststream: $(OLDEST_FASTSTREAM)/.installed
	PYTHONPATH=$(OLDEST_FASTSTREAM) ROCKETMQ_ACTORS_EXPECT_FASTSTREAM=$(FASTSTREAM_OLDEST) \
		$(PY) -m pytest -p no:cacheprovider tests/faststream tests/examples/test_faststream_service.py \
		--basetemp=$(OLDEST_FASTSTREAM)-tmp $(JUNIT)

# make test: lint and typecheck, then side by side the unit tests, the integration tests on
# 5.3.3 (two sessions), 5.5.0 and 4.9.7 (each session with its own cluster on free ports: a session spends most
# of its time waiting on its broker, so together they use the two cores a CI machine has),
# oldest-anyio and oldest-faststream; then solo, alone. tests/stages.py runs every stage whatever
# another did (each is a target here, so any one can be run alone), prints each stage's output
# when it ends and then one summary: what failed where, each stage's wall and CPU time, the
# slowest tests; the logs stay in .state/test-logs/.
test: $(STAMP)
	$(PY) -m tests.stages

# the same beside two busy loops (python -c 'while True: pass'): what a shared CI machine does
test-busy: $(STAMP)
	$(PY) -m tests.stages --busy 2

soak: $(STAMP)
	$(PY) -m benchmarks.soak --minutes 10

# every chaos scenario (broker kill -9 and SIGSTOP, NameServer outage, proxy faults, consumer
# kills, orderly rebalances, and the long ones make test skips: controller-mode failover,
# network partitions, packet loss (nftables), delay and jitter (the fault proxy) and netem in
# network namespaces, which need root), then the report: benchmarks/results/chaos.json and the
# table of docs/reliability.md. The packet-loss scenarios need nft: when it is missing, and
# only when running as root with apt-get, this installs it (apt-get install -y nftables, after
# an apt-get update if that alone fails); otherwise, or if apt fails, they skip with the reason
chaos: $(STAMP)
	@command -v nft >/dev/null || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null || \
		DEBIAN_FRONTEND=noninteractive apt-get install -y nftables || \
		{ apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y nftables; } || \
		echo "nftables could not be installed: the packet-loss scenarios will skip"
	$(PY) -m benchmarks.chaos

fuzz: $(STAMP)
	$(PY) -m tests.fuzz.mutate --inputs 1000000

bench: $(STAMP)
	$(PY) -m benchmarks.nullbroker  # both clients against a null broker, in one rotation
	$(PY) -m benchmarks.nullbroker --uvloop  # the same with our side on uvloop
	$(PY) -m benchmarks.nullbroker --pin  # the same with the null broker on a core of its own
	$(PY) -m benchmarks.floor  # what one Python thread cannot go below, beside Java's rates
	$(PY) -m benchmarks.contention  # both clients' drains alone and beside two busy loops
	$(PY) -m benchmarks.gcfreeze  # many sends in flight, with and without gc.freeze()
	$(PY) -m benchmarks.codec
	$(PY) -m benchmarks.roundtrip
	$(PY) -m benchmarks.roundtrip --uvloop --out benchmarks/results/roundtrip-uvloop.json
	$(PY) -m benchmarks.scale  # a push consumer of 64, 1,024 and 10,000 queues on two masters
	$(PY) -m benchmarks.jvmstart  # the launcher's jit="quick" (the tests') against "full"
	$(PY) -m benchmarks.producer
	$(PY) -m benchmarks.consumer
	$(PY) -m benchmarks.docs  # docs/performance.md and the README's table from the results

cluster-up: $(STAMP)
	$(VENV)/bin/rocketmq-actors cluster start --state-dir $(STATE)

cluster-down: $(STAMP)
	$(VENV)/bin/rocketmq-actors cluster stop --state-dir $(STATE)

clean:
	rm -rf $(VENV) .state .mypy_cache .ruff_cache .pytest_cache .hypothesis build dist *.egg-info
