"""KIP-875 offsets requests: a declared request executed step by step (stop, snapshot,
alter/reset, return), resumable after a crash at any step, and the offsets around it.

- `model`: the steps as a state machine, progress records, Connect's messages, request
  bodies ↔ maps (pure);
- `executor`: one request's execution (`RequestExecution`); which requests run and when is the
  use case's, `app.offsets`;
- `writer`: the executor's transactional writer; `source` and `sink`: a source's offsets
  records and a sink's consumer group, changed as Connect changes them; `state` and `preview`:
  what the executor and the plan read; `worker_stop`: waiting for a Connect worker to stop a
  connector; `migrate`: `offsets import` from a Kafka Connect cluster.

May import `kafka`, `connectors`, `core` and the leaves; never the runtime, the REST API or the
use cases (docs/architecture.md).
"""
