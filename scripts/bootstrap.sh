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
  # --no-compile: pip would byte-compile every module of every package (PySpark alone has
  # thousands), 43 of its 78 s here; Python compiles what is imported, once, on first use.
  "$VENV/bin/python" -m pip install --quiet --no-compile -e "$ROOT[dev]"
  rm -f "$VENV"/.installed-*
  touch "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
# Spark workers must run the same interpreter, else they lack confluent_kafka (docs/real-components.md#spark).
export PYSPARK_PYTHON="$VENV/bin/python"
export PYSPARK_DRIVER_PYTHON="$VENV/bin/python"
