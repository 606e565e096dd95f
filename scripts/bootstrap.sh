# Create .venv on first use and install the project into it; re-installs only when
# pyproject.toml changed since the last install. Run it (`bash scripts/bootstrap.sh`), then call
# `.venv/bin/reconciler`; the other scripts source it, for the PATH and PYSPARK_* it exports.
# Not for an interactive shell's `source`: `set -euo pipefail` would stay on in it, and the next
# command exiting non-zero (`plan --detailed-exitcode` exits 2) would close the terminal.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x "$VENV/bin/python" ]; then
  echo "==> creating $VENV" >&2
  "$PY" -m venv "$VENV"
fi
STAMP="$VENV/.installed-$(sha256sum "$ROOT/pyproject.toml" | cut -c1-16)"
if [ ! -f "$STAMP" ]; then
  echo "==> installing connect-reconciler and its dependencies into $VENV" >&2
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  # --no-compile: pip byte-compiles every module of every package (PySpark alone has thousands)
  # on one core, 43 of its 78 s here; they are compiled below on every core at once instead.
  "$VENV/bin/python" -m pip install --quiet --no-compile -e "$ROOT[dev]"
  rm -f "$VENV"/.installed-*
  touch "$VENV/.compile-pending" "$STAMP"
fi
# The packages' bytecode, not left to first use: where PYTHONDONTWRITEBYTECODE is set (CI
# containers often do) no import ever writes it, and every process, each `reconciler` command
# and each Spark Python worker, compiled PySpark, pandas and the rest again: 2.9-3.6 s of imports
# instead of 1.0-1.5 s, measured. A file a package ships that does not compile (test data) is not
# an error here. The packages' own test suites (pandas', PySpark's…: 1,602 of 9,325 modules) are
# never imported: left out, 26.5 s instead of 33.5 s on two idle cores. scripts/test.sh sets
# BOOTSTRAP_DEFER_COMPILE and calls this beside its unit tests instead of before them.
compile_packages() {
  "$VENV/bin/python" -m compileall -q -j 0 -x '/tests?/' "$VENV/lib" >/dev/null 2>&1 || true
  rm -f "$VENV/.compile-pending"
}
if [ -f "$VENV/.compile-pending" ] && [ -z "${BOOTSTRAP_DEFER_COMPILE:-}" ]; then
  compile_packages
fi
# This project's own modules too, those that changed since (quick when none did).
"$VENV/bin/python" -m compileall -q -j 0 "$ROOT/reconciler" >/dev/null 2>&1 || true
export PATH="$VENV/bin:$PATH"
# Spark workers must run the same interpreter, else they lack confluent_kafka (docs/real-components.md#spark).
export PYSPARK_PYTHON="$VENV/bin/python"
export PYSPARK_DRIVER_PYTHON="$VENV/bin/python"
