"""The command line: one module per command (`<name>_cmd.py`), registered in `main`, which is the
only place errors become exit codes. A command parses its arguments, calls a use case
(`reconciler.app`) or a reader, and prints; `tick_output`, `logs` and `progress` are what `run`
and `watch` say while they run. The top layer: it may import every package but `devtools`, and
nothing imports it. `validate`, `plan`, `apply` and `status` never import Spark.
"""
