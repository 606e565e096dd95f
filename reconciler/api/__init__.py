"""The HTTP side of `run` / `watch`: a read-only Connect REST API, health and Prometheus metrics.

KIP-304's static deployments keep the REST API "as a health-check and diagnostic tool only":
every answer here is Connect's shape for the same question (docs/compatibility.md#rest-shapes),
and every request that would change state is refused with 403, because the manifests are the
only way to change it.

- `state`: the loop's results as one immutable snapshot, swapped atomically after each tick;
  HTTP threads only ever read a whole snapshot (no locks on the read path, no torn reads);
- `observer`: the loop's side, publishing each tick's results, live state and metrics;
- `app`: the FastAPI application and our routes; `connect_routes` Connect's; `http` what they
  share; `schemas` the OpenAPI models; `plugin_catalog` plugin listing and validation; `refusals` the 403s;
- `health`: `/healthz` and `/readyz`; `metrics`: `/metrics` in Connect's metric names;
- `server`: uvicorn in a thread beside the loop, and the broker probe.

May import `offsets`, `kafka`, `render`, `connectors`, `core` and the leaves; never the runtime
(nothing here imports Spark), the use cases or the CLI, which starts the server.
"""
