#!/usr/bin/env bash
# The main job (README): start a local Apache Kafka broker, run examples/quickstart —
# `datagen` → topic `quickstart-orders` → `parquet-sink` — and show the plan, the statuses and
# the rows that landed, then stop the broker (also when a step fails).
#
# Two `run --once` ticks: in one tick every connector's batch runs in parallel (one Spark job
# each), so the sink snapshots the topic's end while the source is still producing and may
# see none of it. The second tick archives everything the first one produced; the counts
# printed at the end check that each of the 20,000 ids landed exactly once.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
cd "$ROOT"

OUT=.quickstart
GROUP=quickstart
# The broker keeps its data in a temp directory it removes when it stops: a new broker means
# new topics, so old Parquet files (which the sink trusts as already written) must go too.
rm -rf "$OUT"
mkdir -p "$OUT"

echo "==> starting a local broker (Apache Kafka, one KRaft node; log under $OUT/broker)"
python -m reconciler.devtools.broker --log-dir "$OUT/broker" >"$OUT/broker.address" 2>"$OUT/broker.err" &
BROKER_PID=$!
stop_broker() {
  kill "$BROKER_PID" 2>/dev/null || true
  wait "$BROKER_PID" 2>/dev/null || true
}
trap stop_broker EXIT
for _ in $(seq 1 1200); do  # the first run resolves Kafka's jars through Maven
  [ -s "$OUT/broker.address" ] && break
  if ! kill -0 "$BROKER_PID" 2>/dev/null; then cat "$OUT/broker.err" >&2; exit 1; fi
  sleep 0.1
done
[ -s "$OUT/broker.address" ] || { echo "the broker did not start; see $OUT/broker.err" >&2; exit 1; }
RECONCILER_BOOTSTRAP_SERVERS="$(head -n1 "$OUT/broker.address")"
export RECONCILER_BOOTSTRAP_SERVERS
echo "    broker at $RECONCILER_BOOTSTRAP_SERVERS"

echo "==> reconciler validate examples/quickstart"
reconciler validate examples/quickstart
echo "==> reconciler plan examples/quickstart   (the group is new: planned against an empty state)"
env -u RECONCILER_BOOTSTRAP_SERVERS reconciler plan examples/quickstart  # a read never creates the group's topics
echo "==> reconciler run examples/quickstart --once   (tick 1: apply, generate task configs, run)"
reconciler run examples/quickstart --once --group-id "$GROUP"
echo "==> reconciler run examples/quickstart --once   (tick 2: the sink archives what tick 1 produced)"
reconciler run examples/quickstart --once --group-id "$GROUP"
echo "==> reconciler status"
reconciler status --group-id "$GROUP"
echo "==> rows that landed"
python scripts/quickstart.py "$OUT/orders-parquet" --expect 20000
