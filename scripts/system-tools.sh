# The few programs the test suite and benchmarks use that no Python or Maven package ships:
# kcat (the benchmarks' reference client, Debian's package as bench/kcat.py expects). Installed
# from Debian's packages when missing and this user may (root, or passwordless sudo); otherwise
# one line says what to install. Run by scripts/test.sh; safe to run again (does nothing then).
set -euo pipefail

missing=()
command -v kcat >/dev/null 2>&1 || command -v kafkacat >/dev/null 2>&1 || missing+=(kcat)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  SUDO=(sudo -n)
else
  echo "missing: ${missing[*]}; install it (Debian: apt-get install -y ${missing[*]})" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "missing: ${missing[*]}; no apt-get here: install it with this system's package manager" >&2
  exit 1
fi
echo "==> installing ${missing[*]} from Debian's packages" >&2
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq >/dev/null
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
