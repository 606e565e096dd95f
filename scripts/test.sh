#!/usr/bin/env bash
# The test command (README, .ci/run): type checks, layering contracts, then every test —
# unit tests and integration tests against a real broker and a real local SparkSession.
# With arguments, only `pytest ARGS` after the checks (a file, a -k expression…).
set -euo pipefail
# The whole suite compiles the packages' bytecode beside its unit tests, not before them.
[ $# -gt 0 ] || BOOTSTRAP_DEFER_COMPILE=1
source "$(dirname "$0")/bootstrap.sh"
cd "$ROOT"

checks() {
  echo "==> mypy --strict" >&2
  mypy
  echo "==> ruff (correctness lints)" >&2
  ruff check reconciler tests bench scripts
  echo "==> import-linter (layering contracts)" >&2
  lint-imports
}

if [ $# -gt 0 ]; then
  checks
  echo "==> pytest $*" >&2
  exec pytest "$@"
fi

# The whole suite. The unit tests (which need neither Kafka nor Spark) take one core; beside
# them run the checks, then the packages' bytecode on a fresh .venv (bootstrap.sh's, ~26 s on
# two cores), then what the integration tests' fixtures would otherwise build in their own time:
# Spark's class-data-sharing archive (~30 s, once per virtualenv), the executors' packed
# environment (~20 s, once per machine), Azurite's npm install (~1 min, once per lock file), the
# GCS server's `go build` (~2 min, once per source) and MiniDFSCluster's jars (~100 MB from Maven
# Central, once per pom). All are cached and written atomically; should one fail here, its
# fixture builds it again and reports why. The unit tests' timing checks have room for this
# (measured: they pass beside two processes spinning on the two cores).
mkdir -p .test-logs
bash scripts/system-tools.sh  # kcat, for the benchmarks the integration tests run at a tiny size
(checks) >.test-logs/checks.log 2>&1 &
CHECKS=$!
(
  [ ! -f "$VENV/.compile-pending" ] || compile_packages
  python -m reconciler.runtime.spark.cds_build
  python -m reconciler.devtools.pack_env
  python -c 'from reconciler.devtools.azurite import installed; installed()'
  python -c 'from reconciler.devtools.gcs import server_binary; server_binary()'
  python -c 'from reconciler.devtools.hdfs import jars; jars()'
) >.test-logs/prepare.log 2>&1 &
PREPARE=$!
echo "==> pytest tests/unit (mypy, ruff and import-linter beside it)" >&2
unit=0
pytest tests/unit || unit=$?
checked=0
wait "$CHECKS" || checked=$?
cat .test-logs/checks.log
if [ "$checked" -ne 0 ]; then
  echo "FAILED: the checks above (unit tests exit $unit)" >&2
  exit 1
fi
wait "$PREPARE" || echo "(preparing for the integration tests failed, see .test-logs/prepare.log; the fixtures try again)" >&2
# Two pytest workers (pytest-xdist), each a test session with its own broker, Java worker,
# SparkSession and stores, and whole files, so a module's fixtures are built once. The suite
# spends much of its time waiting on JVMs, brokers and subprocesses: one process kept 1.2 of the
# two cores busy and took 28 min, two keep 1.8 busy and take 21 (docs/real-components.md#ci-time).
# Then the tests marked `alone`, which compare timings under a load they make themselves, in a
# session of their own with the machine to themselves.
workers="${RECONCILER_TEST_WORKERS:-2}"
echo "==> pytest tests/integration ($workers workers)" >&2
integration=0
pytest tests/integration -n "$workers" --dist loadfile -m "not alone" --junitxml=.test-logs/integration.xml \
  || integration=$?
echo "==> pytest tests/integration -m alone" >&2
pytest tests/integration -m alone --junitxml=.test-logs/integration-alone.xml || integration=$?
if [ "$unit" -ne 0 ] || [ "$integration" -ne 0 ]; then
  echo "FAILED: unit tests exit $unit, integration tests exit $integration" >&2
  exit 1
fi
