"""The use cases, each written once: what a command or a tick does, from reading to writing.

- `plan`: read the live state (a snapshot, Kafka, or none), pair it with the manifests, diff,
  plan; against Kafka, offsets requests show their current offsets.
- `apply`: plan against the live state read inside the apply's own transaction, write the
  plan's records, then run its offsets requests.
- `offsets`: which offsets requests run, when and how far, each under its connector's
  transactional id.
- `status` and `offsets_view`: what `reconciler status` and `reconciler offsets NAME` read;
  their read models (rows, notes, snapshot history) are pure values in `render.status_view`
  and `render.offsets_history`, below `api`, so the REST API serves the same ones.
- `tick`: one tick of `run` / `watch`: apply, then one batch of every connector's tasks
  (`TickRunner`).
- `serve`: `run` and `watch` — ticks until a signal (`loop`: the cadence, SIGTERM and the
  grace period), the manifests re-read when the files change (`reload`), resync passes, and
  the REST API's lifetime beside the ticks.

The CLI calls these. They may import every layer below them: `api` and `runtime`, `offsets`,
`kafka`, `manifests`, `render`, `connectors`, `core`. Only `tick`, `serve` (and `loop`,
`reload`) import the runtime, hence Spark: `plan`, `apply`, `offsets` and the read models
never do (an import-linter contract checks it). Nothing here parses arguments or prints: what
`run`/`watch` say goes to the CLI's output (`serve.ServeOutput`).
"""
