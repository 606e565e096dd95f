"""Entry point: parse arguments, run one command, map errors to exit codes — the only place
that does so (0 success / no changes, 1 error, 2 changes present with --detailed-exitcode).
A usage error (an unknown option, a bad value from a flag or a `RECONCILER_*` variable) is an
error, 1, as in Terraform: argparse's own 2 would read as "changes" or "drift" to a CI job.

Options may come before or after the command (`reconciler -v --group-id g status` is
`reconciler status -v --group-id g`), and each has a `RECONCILER_*` variable (`cli.env`).
Log lines carry a UTC timestamp; stdout is line-buffered, so a redirected log keeps the
order in which lines were written.

`entry` is the process's own entry (the `reconciler` script, `python -m reconciler.cli.main`):
after `run` and `watch` it ends the process with `os._exit` once stdout, stderr and the logs
are flushed. Everything they write is durable before they return (Kafka transactions committed,
sink offsets committed, the tasks' files closed by the tasks), so the interpreter's
finalization only tore down Kafka clients and Spark's gateway: measured 0.8–5 s
(docs/performance.md#the-fixed-cost-of-run---once-phase-by-phase). Their Spark session is not stopped either: its
JVM stops itself when the pipe PySpark holds to it closes, after the process (`SparkExecutor`).
`main` stays an ordinary function returning the exit code (tests call it in-process).
"""

from __future__ import annotations

import argparse
import importlib
import io
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from reconciler import __version__, heap, masking
from reconciler.cli import env, logs
from reconciler.cli.options import kafka_value_options
from reconciler.errors import ReconcilerError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_CHANGES = 2

# name → module under reconciler.cli; each module has `register(subparsers)` and
# `run(args) -> int`. Modules are imported lazily so `validate` never pays for Kafka or Spark.
COMMANDS: dict[str, str] = {
    "validate": "reconciler.cli.validate_cmd",
    "plugins": "reconciler.cli.plugins_cmd",
    "plan": "reconciler.cli.plan_cmd",
    "drift": "reconciler.cli.drift_cmd",
    "apply": "reconciler.cli.apply_cmd",
    "status": "reconciler.cli.status_cmd",
    "snapshot": "reconciler.cli.snapshot_cmd",
    "offsets": "reconciler.cli.offsets_cmd",
    "run": "reconciler.cli.run_cmd",
    "watch": "reconciler.cli.watch_cmd",
}
# Commands that keep running; the others exit when done (reconciler.heap: what they build is frozen).
LONG_RUNNING = {"run", "watch"}
# Commands after which `entry` ends the process at once (see the module's docstring).
EXIT_AT_ONCE = LONG_RUNNING
_TOP_LEVEL = frozenset({"-h", "--help", "--version"})


def version() -> str:
    from importlib import metadata  # noqa: PLC0415 (~25 ms: only for --version)

    try:
        return metadata.version("connect-reconciler")
    except metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return __version__


class _Parser(argparse.ArgumentParser):
    """argparse's parser, exiting 1 on a usage error (argparse exits 2: our "changes present").
    Sub-parsers are of the same class (argparse makes them of their parent's)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")


class _Version(argparse.Action):
    """argparse's `version` action, with the version looked up only when asked for."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"{parser.prog} {version()}")
        parser.exit()


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="reconciler",
        description="Declarative reconciler for Kafka Connect-style connectors.",
        epilog="Options may come before or after COMMAND. Each option can also be set with a RECONCILER_* "
        "environment variable, shown in `reconciler COMMAND --help`.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    # Only import the module of the command being run (plus all of them for --help).
    wanted = [a for a in argv if a in COMMANDS][:1] or list(COMMANDS)
    for name in COMMANDS:
        if name in wanted:
            module = importlib.import_module(COMMANDS[name])
            module.register(subparsers)
            command = subparsers.choices[name]
            command.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv: debug)")
            env.apply(command, name)
        else:
            subparsers.add_parser(name, help=f"(see `reconciler {name} --help`)")
    return parser


def parse(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """The arguments, or exit 1 with the usage of the command they are for: argparse's
    `parse_args` reports an unknown option with the top-level usage, which shows none of them."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        subparsers.choices[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def hoist_options(argv: Sequence[str]) -> list[str]:
    """Options written before the command, moved after it (where the command's parser reads them)."""
    args, takes_value = list(argv), kafka_value_options()
    for index, token in enumerate(args):
        if token in COMMANDS and (index == 0 or args[index - 1] not in takes_value):
            leading = args[:index]
            if not leading or _TOP_LEVEL & set(leading):
                return args
            return [token, *leading, *args[index + 1 :]]
    return args


def main(argv: Sequence[str] | None = None, *, exiting: bool = False) -> int:
    """Run one command; its exit code. `exiting`: the process ends right after (`entry`), so
    `run`/`watch` leave their Spark session to the process's exit."""
    args_list = hoist_options(sys.argv[1:] if argv is None else argv)
    parser = build_parser(args_list)
    args = parse(parser, args_list)
    args.exiting = exiting and args.command in EXIT_AT_ONCE
    _set_up_output(args.verbose, getattr(args, "log_format", "text"))
    masking.mask_log_handlers()
    with masking.masked_output():  # no secret value in anything a command prints (docs/secrets.md)
        code = _run(args)
    if args.exiting:
        _exit_at_once(code)
    return code


def entry() -> NoReturn:
    """The process's entry: the command, then its exit (at once after `run` and `watch`)."""
    sys.exit(main(exiting=True))


def _exit_at_once(code: int) -> NoReturn:
    """End the process without the interpreter's finalization, what is buffered flushed first."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader gone, a stream closed: nothing more to say there
            pass
    os._exit(code)


def _run(args: argparse.Namespace) -> int:
    try:
        with heap.one_shot(args.command not in LONG_RUNNING):
            code: int = args.handler(args)
    except ReconcilerError as exc:
        logs.error(exc.render())
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `reconciler status | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except Exception:  # a bug: its traceback is shown, through the masked stream like the rest
        traceback.print_exc()
        return EXIT_ERROR
    return code


def _set_up_output(verbose: int, log_format: str = "text") -> None:
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)  # block-buffered when redirected otherwise
    logs.configure(log_format, verbose)


if __name__ == "__main__":  # pragma: no cover
    entry()
