#!/usr/bin/env bash
# The test command (README, .ci/run): type checks, layering contracts, then every test —
# unit tests and integration tests against a real broker and a real local SparkSession.
set -euo pipefail
source "$(dirname "$0")/bootstrap.sh"
cd "$ROOT"
echo "==> mypy --strict" >&2
mypy
echo "==> ruff (correctness lints)" >&2
ruff check reconciler tests bench scripts
echo "==> import-linter (layering contracts)" >&2
lint-imports
echo "==> pytest" >&2
pytest "$@"
