"""A bounded HTTP client for test_api_burst: `python burst_client.py URL REQUESTS SECONDS CLIENTS ROUTE…`
sends REQUESTS GETs, paced evenly over SECONDS from CLIENTS connections, cycling over the
routes, and prints a JSON summary. A process of its own, as a real client is: its own Python
work must not compete with the loop's for the server process's interpreter lock."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx


def main(url: str, requests: int, seconds: float, clients: int, routes: list[str]) -> None:
    codes: Counter[int] = Counter()
    failures: list[str] = []
    started = time.monotonic()

    def client(index: int) -> None:
        with httpx.Client(base_url=url, timeout=5) as http:
            for n in range(index, requests, clients):
                time.sleep(max(0.0, started + n * seconds / requests - time.monotonic()))
                route = routes[n % len(routes)]
                try:
                    codes[http.get(route).status_code] += 1
                except httpx.HTTPError as exc:
                    failures.append(f"{route}: {exc!r}")

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    took = time.monotonic() - started
    print(json.dumps({"codes": {str(k): v for k, v in codes.items()}, "failures": failures[:20], "seconds": took}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), sys.argv[5:])
