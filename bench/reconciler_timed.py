"""`reconciler ARGS…` exactly as the command runs, with the runtime's debug log on stderr.

The log gives the time of each batch's Spark job (`sink NAME: … job 1.234s …`, `source NAME:
job 1.234s …`) and of the Spark session start, each line stamped with its time since start, which bench/connect_head_to_head.py prints
beside the whole command's time. Only logging differs from `reconciler`: the command's own
`-vv` would turn every library's debug log on as well (py4j logs each call).

    python bench/reconciler_timed.py run M --once --bootstrap-servers … --group-id …
"""

from __future__ import annotations

import logging
import sys

from reconciler.cli.main import main

if __name__ == "__main__":
    # Each line ends with its time since start (` @1234ms`): a job's time overlaps the session's start
    # when the session starts inside it (h2h_sides.job_times); at the end, so that patterns anchored
    # at the level still match.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s @%(relativeCreated).0fms",
                        stream=sys.stderr)
    logging.getLogger("reconciler.runtime").setLevel(logging.DEBUG)
    sys.exit(main(exiting=True))  # as the `reconciler` script ends (`main.entry`)
