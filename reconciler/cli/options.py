"""Options shared by several commands: the Kafka connection, and pruning."""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path

from reconciler.core.topic_names import topic_name_problem
from reconciler.errors import ReconcilerError
from reconciler.kafka.io.client_config import gather
from reconciler.kafka.settings import DEFAULT_GROUP, DEFAULT_TIMEOUT_S, KafkaSettings, Topics, bootstrap_from_env


def add_kafka_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("Kafka connection")
    group.add_argument(
        "--bootstrap-servers",
        default=None,
        help="host:port[,…] (default: localhost:9092)",
    )
    group.add_argument(
        "--group-id", default=DEFAULT_GROUP,
        help="Connect cluster group id; names the internal topics (default: %(default)s)",
    )
    group.add_argument("--config-topic", default=None, help="default: <group>-configs")
    group.add_argument("--status-topic", default=None, help="default: <group>-status")
    group.add_argument("--offsets-topic", default=None, help="default: <group>-offsets")
    group.add_argument("--reconciler-topic", default=None, help="default: <group>-reconciler")
    group.add_argument(
        "-X", dest="client_settings", action="append", default=[], metavar="KEY=VALUE",
        help="a client setting (repeatable), e.g. -X security.protocol=SASL_SSL; librdkafka's names, or Java's "
        "where librdkafka has an equivalent (sasl.jaas.config for PLAIN/SCRAM…) [env: RECONCILER_KAFKA_<NAME>, "
        "e.g. RECONCILER_KAFKA_SASL_MECHANISM=PLAIN]",
    )
    group.add_argument(
        "--kafka-config", type=Path, default=None,
        help="a .properties file of client settings; ${env:NAME}, ${file:path:key} and ${directory:path:name} in it (and in -X) are resolved",
    )
    group.add_argument("--no-create-topics", action="store_true", help="refuse instead of creating missing internal topics")
    group.add_argument(
        "--timeout", type=positive_seconds, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
        help="seconds to wait for the broker (default: %(default)s)"
    )


def add_prune_options(parser: argparse._ActionsContainer) -> None:
    parser.add_argument("--prune", action="store_true", help="delete orphaned connectors this reconciler created")
    parser.add_argument(
        "--allow-empty",
        action="store_true",
        help="let --prune delete every connector this reconciler created when no manifest declares any "
        "(refused otherwise: an empty or unmounted manifest directory looks the same)",
    )


def kafka_value_options() -> frozenset[str]:
    """The Kafka options that take a value (`--group-id g`): how `main` tells a value from a
    command when options come before the command."""
    parser = argparse.ArgumentParser(add_help=False)
    add_kafka_options(parser)
    return frozenset(o for a in parser._actions if a.nargs != 0 for o in a.option_strings)


def kafka_settings(args: argparse.Namespace) -> KafkaSettings:
    client = gather(args.kafka_config, os.environ, args.client_settings)  # their secrets remembered
    topics = Topics.for_group(args.group_id)
    topics = dataclasses.replace(
        topics,
        configs=args.config_topic or topics.configs,
        status=args.status_topic or topics.status,
        offsets=args.offsets_topic or topics.offsets,
        reconciler=args.reconciler_topic or topics.reconciler,
    )
    _check_names(args, topics)
    return KafkaSettings(
        bootstrap_servers=args.bootstrap_servers or bootstrap_from_env(),
        group_id=args.group_id,
        topics=topics,
        client_config=client,
        create_topics=not args.no_create_topics,
        timeout_s=args.timeout,
    )


def _check_names(args: argparse.Namespace, topics: Topics) -> None:
    """An empty group id, or a topic name Kafka refuses, is an error before anything is read or
    written: `--group-id ''` (an empty RECONCILER_GROUP_ID) would otherwise create `-configs`."""
    if not args.group_id.strip():
        raise ReconcilerError("--group-id is empty", hint="name the Connect cluster's group id "
                              f"(default {DEFAULT_GROUP}); is RECONCILER_GROUP_ID set to an empty value?")
    for option, name in (("--config-topic", topics.configs), ("--status-topic", topics.status),
                         ("--offsets-topic", topics.offsets), ("--reconciler-topic", topics.reconciler)):
        problem = topic_name_problem(name)
        if problem is not None:
            given = getattr(args, option.lstrip("-").replace("-", "_"))
            source = option if given else f"--group-id {args.group_id!r}"
            raise ReconcilerError(f"{source} names the topic {name!r}, which Kafka refuses: {problem}")


def positive_seconds(text: str) -> float:
    """argparse's type for a duration: a number of seconds above 0 (a zero or negative timeout
    would make every wait fail, or raise deep in a socket call)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, got {text}")
    return value
