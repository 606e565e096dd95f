"""The image's HEALTHCHECK: `GET /healthz` on the reconciler's REST port; exit 0 on 200, else 1.

Liveness only (the process answers); whether the last reconcile worked is `/readyz`, for
Kubernetes' readiness probe. Python's standard library, so the image needs no curl.
RECONCILER_HEALTH_URL changes the address (default http://127.0.0.1:8083/healthz).
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request

URL = os.environ.get("RECONCILER_HEALTH_URL", "http://127.0.0.1:8083/healthz")
TIMEOUT_S = 3.0


def main() -> int:
    try:
        with urllib.request.urlopen(URL, timeout=TIMEOUT_S) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (OSError, ValueError) as exc:
        print(f"unhealthy: {URL}: {exc}", file=sys.stderr)
        return 1
    if status != 200:
        print(f"unhealthy: {URL} answered {status}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
