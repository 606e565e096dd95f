"""Every command-line option from the environment, for containers: `RECONCILER_<OPTION>`.

`--group-id` is `RECONCILER_GROUP_ID`, `--prune` is `RECONCILER_PRUNE=true`, `-v` is
`RECONCILER_VERBOSE=2`. Options that mean something else in each command (`--format`,
`--out`…) name the command too: `RECONCILER_PLAN_FORMAT`, `RECONCILER_SNAPSHOT_OUT`.
A repeatable option takes one value per line. A flag on the command line wins over its
variable. Client settings (`-X`) come from `RECONCILER_KAFKA_*` (`reconciler.kafka.io.client_config`).

The variable is shown in each option's `--help` line.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from typing import Any

PREFIX = "RECONCILER_"
# Options whose values differ from one command to another: their variables name the command.
PER_COMMAND = frozenset({"--format", "--out", "--name", "--id", "--history"})
# Read from the environment by the command itself (it must tell a flag from the variable).
READ_BY_COMMAND = {"--bootstrap-servers"}
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def variable(command: str, option: str) -> str:
    """`RECONCILER_GROUP_ID` for `--group-id`; `RECONCILER_PLAN_FORMAT` for plan's `--format`."""
    name = option.lstrip("-").upper().replace("-", "_")
    return PREFIX + (f"{command.upper()}_{name}" if option in PER_COMMAND else name)


def apply(parser: argparse.ArgumentParser, command: str, environ: Mapping[str, str] | None = None) -> None:
    """Name each option's variable in its help, and take its default from the environment."""
    environ = os.environ if environ is None else environ
    for action in parser._actions:
        option = _long_option(action)
        if option is None:
            continue
        name = variable(command, option)
        if action.help and action.help != argparse.SUPPRESS:
            action.help += f" [env: {name}]"
        if name in environ and option not in READ_BY_COMMAND:
            action.default = _value(parser, action, name, environ[name])
            action.required = False


def _long_option(action: argparse.Action) -> str | None:
    if isinstance(action, (argparse._HelpAction, argparse._VersionAction)) or not action.option_strings:
        return None
    return next((o for o in action.option_strings if o.startswith("--")), None)


def _value(parser: argparse.ArgumentParser, action: argparse.Action, name: str, text: str) -> Any:
    try:
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            return _boolean(text) == isinstance(action, argparse._StoreTrueAction)
        if isinstance(action, argparse._CountAction):
            return int(text)
        if isinstance(action, argparse._AppendAction):
            return [_converted(action, line) for line in text.splitlines() if line.strip()]
        return _converted(action, text)
    except (ValueError, TypeError, argparse.ArgumentTypeError) as exc:
        parser.error(f"${name}: {exc}")


def _converted(action: argparse.Action, text: str) -> Any:
    convert: Callable[[str], Any] = action.type if callable(action.type) else str
    value = convert(text)
    if action.choices is not None and value not in action.choices:
        raise ValueError(f"invalid choice {text!r} (choose from {', '.join(map(str, action.choices))})")
    return value


def _boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"expected true or false, got {text!r}")
