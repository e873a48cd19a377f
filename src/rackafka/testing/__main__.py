"""``python -m rackafka.testing serve``: run a test cluster for another process.

``--engine mock`` (the default) runs librdkafka's mock brokers in-process
(:class:`~rackafka.testing.EmbeddedCluster`); ``--engine kafka`` runs real Apache Kafka
brokers as JVMs (:class:`~rackafka.testing.KafkaCluster`), where the fault-injection
commands of the mock answer ``ERR`` and ``broker-down``/``broker-up`` stop and restart a
broker's JVM. ``python -m rackafka.testing kafka-jars`` downloads the Kafka jars once.

The server prints ``BOOTSTRAP=host:port,...`` on one line once the topics are created and
filled, then reads control commands on stdin, one per line, and answers each with one line,
``OK`` (maybe followed by a space and JSON) or ``ERR message``. It exits on ``quit`` or on
SIGTERM/SIGINT, after closing the cluster; at the end of its input (``/dev/null``, a
background job, a container without a terminal) it keeps serving, unless
``--exit-on-eof`` is given. ``help`` lists commands.

:class:`rackafka.testing.ServedCluster` starts this server in a child process and drives it
from Python, so that the brokers (and the front that plays the replica selector with
``--replica-selector rack-aware``) never share the interpreter of the clients under test.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import shlex
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO, Union

from ._api import api_key
from ._clients import COMPRESSION_TYPES
from .cluster import EmbeddedCluster, PartitionInfo
from .secure_front import REPLICA_SELECTORS

if TYPE_CHECKING:
    from .kafka import KafkaCluster

__all__ = ["CommandInterpreter", "main"]

log = logging.getLogger("rackafka.testing.serve")


class _Quit(Exception):
    """Raised by the ``quit`` command."""


class _Terminate(BaseException):
    """Raised by the SIGTERM/SIGINT handler to leave the input loop."""


class CommandError(Exception):
    """A command line that cannot be executed (answered with ``ERR``)."""


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise CommandError(f"{what} must be an integer, got {text!r}") from None


def _broker_or_none(text: str) -> int | None:
    if text.lower() in ("none", "-1", "-"):
        return None
    return _int(text, "broker id")


def _broker_or_all(text: str) -> int | None:
    return None if text.lower() == "all" else _int(text, "broker id")


def _number(what: str) -> Callable[[str], int]:
    return functools.partial(_int, what=what)


def _partition_json(info: PartitionInfo) -> dict[str, Any]:
    data = asdict(info)
    data["replicas"] = list(info.replicas)
    data["follower_watermarks"] = list(info.follower_watermarks)
    return data


def _process_of(cluster: Any, node_id: int) -> dict[str, Any]:
    """``{"pid": ...}`` of a real broker's JVM (None when down); nothing for the mock."""
    pid_of = getattr(type(cluster), "broker_pid", None)
    return {"pid": pid_of(cluster, node_id)} if pid_of is not None else {}


def _dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), sort_keys=True)


#: Commands that call one cluster method with their arguments converted, and answer
#: nothing or the partition it returns: name -> (method, converters, answer).
_CALLS: dict[str, tuple[str, tuple[Callable[[str], Any], ...], Callable[[Any], Any] | None]] = {
    "partition": ("partition_info", (str, _number("partition")), _partition_json),
    "move-leader": ("move_leader", (str, _number("partition"), _broker_or_none), _partition_json),
    "set-follower": (
        "set_preferred_read_replica",
        (str, _number("partition"), _broker_or_none),
        _partition_json,
    ),
    "follower-wmarks": (
        "set_follower_watermarks",
        (str, _number("partition"), _number("low"), _number("high")),
        _partition_json,
    ),
    "broker-down": ("broker_down", (_number("broker id"),), None),
    "broker-up": ("broker_up", (_number("broker id"),), None),
    "rtt": ("set_broker_rtt", (_broker_or_all, _number("rtt")), None),
    "delete-records": ("delete_records", (str, _number("partition"), _number("offset")), None),
    "cap-version": ("cap_api_version", (str, _number("min"), _number("max")), None),
    "restore-version": ("restore_api_version", (str,), None),
    "clear-errors": ("clear_request_errors", (str,), None),
}

_HELP = {
    "help": "",
    "info": "",
    "create-topic": "NAME PARTITIONS [RF]",
    "partition": "TOPIC P",
    "move-leader": "TOPIC P BROKER|none",
    "set-follower": "TOPIC P BROKER|none",
    "clear-follower": "TOPIC P",
    "clear-followers": "[TOPIC...]",
    "emulate-rack": "RACK|none [TOPIC...]",
    "follower-wmarks": "TOPIC P LO HI",
    "broker-down": "ID",
    "broker-up": "ID",
    "rtt": "ID|all MS",
    "produce": "TOPIC N [SIZE] [COMPRESSION]",
    "produce-txn": "TOPIC commit:N|abort:N ...",
    "delete-records": "TOPIC P OFFSET",
    "cap-version": "API MIN MAX",
    "restore-version": "API",
    "api-versions": "[BROKER]",
    "push-errors": "API CODE...",
    "clear-errors": "API",
    "track-start": "",
    "track-stop": "",
    "track-clear": "",
    "requests": "[API]",
    "request-counts": "[API]",
    "served-bytes": "",
    "quit": "",
}


class CommandInterpreter:
    """Executes the ``serve`` control commands against a running cluster.

    Arguments:
        cluster: the running :class:`EmbeddedCluster` or :class:`KafkaCluster`.
    """

    def __init__(self, cluster: Union[EmbeddedCluster, KafkaCluster]) -> None:
        # A KafkaCluster answers the mock-only calls with FaultInjectionUnsupportedError.
        self.cluster: Any = cluster
        self._commands: dict[str, Callable[[list[str]], Any]] = {
            name: (
                functools.partial(self._call, *_CALLS[name])
                if name in _CALLS
                else getattr(self, "_cmd_" + name.replace("-", "_"))
            )
            for name in _HELP
        }

    def execute(self, line: str) -> str:
        """Run one command line and return the one-line answer (``OK ...`` / ``ERR ...``).

        Raises:
            _Quit: on ``quit``/``exit``, after the answer was decided (``OK bye``).
        """
        try:
            words = shlex.split(line)
        except ValueError as exc:
            return f"ERR cannot parse the line: {exc}"
        if not words:
            return "ERR empty command"
        name, args = words[0].lower(), words[1:]
        if name == "exit":
            name = "quit"
        command = self._commands.get(name)
        if command is None:
            return f"ERR unknown command {words[0]!r}; try 'help'"
        try:
            result = command(args)
        except _Quit:
            raise
        except CommandError as exc:
            return f"ERR {exc}"
        except (IndexError, TypeError) as exc:
            usage = _HELP[name]
            return f"ERR usage: {name} {usage}".rstrip() + f" ({exc})"
        except Exception as exc:
            return f"ERR {type(exc).__name__}: {exc}".replace("\n", " ")
        if result is None:
            return "OK"
        return "OK " + _dumps(result)

    def _args(self, args: list[str], low: int, high: int | None = None) -> list[str]:
        if len(args) < low or (high is not None and len(args) > high):
            raise IndexError(f"got {len(args)} argument(s)")
        return args

    def _call(
        self,
        method: str,
        converters: tuple[Callable[[str], Any], ...],
        answer: Callable[[Any], Any] | None,
        args: list[str],
    ) -> Any:
        self._args(args, len(converters), len(converters))
        result = getattr(self.cluster, method)(*(c(a) for c, a in zip(converters, args)))
        return None if answer is None else answer(result)

    # -- commands --------------------------------------------------------------------------
    def _cmd_help(self, args: list[str]) -> Any:
        return {name: usage for name, usage in _HELP.items()}

    def _cmd_quit(self, args: list[str]) -> Any:
        raise _Quit

    def _cmd_info(self, args: list[str]) -> Any:
        self._args(args, 0, 0)
        c = self.cluster
        return {
            "bootstrap": c.bootstrap_servers,
            "brokers": {
                str(b.node_id): {
                    "host": b.host,
                    "port": b.port,
                    "rack": b.rack,
                    "up": b.node_id not in c.down_brokers,
                    **_process_of(c, b.node_id),
                }
                for b in c.brokers.values()
            },
            "topics": {t: [_partition_json(p) for p in c.partitions(t)] for t in c.topics()},
        }

    def _cmd_create_topic(self, args: list[str]) -> Any:
        self._args(args, 2, 3)
        rf = _int(args[2], "replication factor") if len(args) > 2 else None
        parts = self.cluster.create_topic(args[0], _int(args[1], "partitions"), rf)
        return [_partition_json(p) for p in parts]

    def _cmd_clear_follower(self, args: list[str]) -> Any:
        self._args(args, 2, 2)
        info = self.cluster.set_preferred_read_replica(args[0], _int(args[1], "partition"), None)
        return _partition_json(info)

    def _cmd_clear_followers(self, args: list[str]) -> Any:
        self.cluster.clear_preferred_read_replicas(args or None)
        return None

    def _cmd_emulate_rack(self, args: list[str]) -> Any:
        self._args(args, 1)
        rack = None if args[0].lower() in ("none", "-") else args[0]
        chosen = self.cluster.emulate_rack_aware_selector(rack, args[1:] or None)
        return {f"{topic}/{p}": replica for (topic, p), replica in chosen.items()}

    def _cmd_produce(self, args: list[str]) -> Any:
        self._args(args, 2, 4)
        size = _int(args[2], "size") if len(args) > 2 else 100
        compression = args[3] if len(args) > 3 else "none"
        result = self.cluster.produce(
            args[0], _int(args[1], "count"), value_size=size, compression=compression,
            partition="spread",
        )  # fmt: skip
        return {"count": result.count, "counts": {str(p): n for p, n in result.counts.items()}}

    def _cmd_produce_txn(self, args: list[str]) -> Any:
        self._args(args, 2)
        steps: list[tuple[str, int]] = []
        for spec in args[1:]:
            action, _, count = spec.partition(":")
            steps.append((action.lower(), _int(count, "transaction size")))
        result = self.cluster.produce_transactional(args[0], steps, partition="spread")
        return {
            "committed": result.committed_count,
            "aborted": result.aborted_count,
            "transactions": [
                {
                    "committed": t.committed,
                    "count": t.count,
                    "first_offsets": {str(p): o for p, o in t.first_offsets.items()},
                    "last_offsets": {str(p): o for p, o in t.last_offsets.items()},
                    "marker_offsets": {str(p): o for p, o in t.marker_offsets.items()},
                }
                for t in result.transactions
            ],
        }

    def _cmd_api_versions(self, args: list[str]) -> Any:
        self._args(args, 0, 1)
        broker = _int(args[0], "broker id") if args else None
        versions = self.cluster.api_versions(broker)
        return {str(k): list(v) for k, v in sorted(versions.items())}

    def _cmd_push_errors(self, args: list[str]) -> Any:
        self._args(args, 2)
        self.cluster.push_request_errors(args[0], *(_int(a, "error code") for a in args[1:]))
        return None

    def _cmd_track_start(self, args: list[str]) -> Any:
        self.cluster.start_request_tracking()
        return None

    def _cmd_track_stop(self, args: list[str]) -> Any:
        self.cluster.stop_request_tracking()
        return None

    def _cmd_track_clear(self, args: list[str]) -> Any:
        self.cluster.clear_requests()
        return None

    def _cmd_requests(self, args: list[str]) -> Any:
        self._args(args, 0, 1)
        api = api_key(args[0]) if args else None
        return [
            {"broker_id": r.broker_id, "api_key": r.api_key, "api": r.api_name, "ts": r.timestamp}
            for r in self.cluster.requests(api)
        ]

    def _cmd_request_counts(self, args: list[str]) -> Any:
        self._args(args, 0, 1)
        api = api_key(args[0]) if args else None
        return {str(b): n for b, n in sorted(self.cluster.request_counts(api).items())}

    def _cmd_served_bytes(self, args: list[str]) -> Any:
        """Record bytes each broker served in Fetch responses, per client rack (``""`` for
        requests without a rack): ``{"BROKER": {"RACK": bytes}}``, counted by the front
        that plays the replica selector (``--replica-selector``)."""
        self._args(args, 0, 0)
        if not getattr(self.cluster, "supports_fault_injection", True):
            raise CommandError(
                "served-bytes needs --engine mock: real brokers keep no per-rack count of "
                "the bytes they serve (read the client's fetch_stats())"
            )
        front = self.cluster.front
        if front is None or self.cluster.replica_selector is None:
            raise CommandError("served-bytes needs --replica-selector (the front counts them)")
        served: dict[str, dict[str, int]] = {}
        for (node, rack), n in sorted(front.stats.fetch_bytes.items()):
            served.setdefault(str(node), {})[rack or ""] = n
        return served


def _topic_spec(text: str) -> tuple[str, int, int | None]:
    parts = text.split(":")
    if not parts[0] or len(parts) > 3:
        raise argparse.ArgumentTypeError(f"expected NAME[:PARTITIONS[:RF]], got {text!r}")
    try:
        partitions = int(parts[1]) if len(parts) > 1 else 1
        rf = int(parts[2]) if len(parts) > 2 else None
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME[:PARTITIONS[:RF]], got {text!r}") from None
    return parts[0], partitions, rf


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rackafka.testing",
        description="Embedded multi-rack Kafka cluster (librdkafka's mock brokers).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser(
        "serve",
        help="run a cluster, print BOOTSTRAP=..., then read control commands on stdin",
        description=(
            "Start a cluster, create the topics, produce the messages, print one line "
            "'BOOTSTRAP=host:port,...', then execute one control command per stdin line "
            "(answering 'OK ...' or 'ERR ...'; 'help' lists them) until 'quit', "
            "SIGTERM or SIGINT (or the end of input, with --exit-on-eof)."
        ),
    )
    serve.add_argument(
        "--engine",
        choices=("mock", "kafka"),
        default="mock",
        help=(
            "mock: librdkafka's mock brokers in-process (default, with fault injection); "
            "kafka: real Apache Kafka brokers (JVMs, Java 17+; jars from Maven Central)"
        ),
    )
    serve.add_argument(
        "--kafka-version",
        default=None,
        help="Apache Kafka release for --engine kafka (default: RACKAFKA_KAFKA_VERSION or the pin)",
    )
    serve.add_argument(
        "--kafka-work-dir",
        default=None,
        help="--engine kafka: keep the brokers' data and logs in this directory",
    )
    serve.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    serve.add_argument(
        "--racks",
        default="az-a,az-b,az-c",
        help="comma-separated racks assigned round-robin to brokers; '' for none",
    )
    serve.add_argument(
        "--topic",
        action="append",
        type=_topic_spec,
        default=[],
        metavar="NAME:PARTITIONS:RF",
        help="create a topic (repeatable)",
    )
    serve.add_argument("--messages", type=int, default=0, help="records to produce into each topic")
    serve.add_argument("--value-size", type=int, default=100, help="bytes per record value")
    serve.add_argument("--compression", choices=COMPRESSION_TYPES, default="none")
    serve.add_argument("--batch-size", type=int, default=None, help="producer batch.size in bytes")
    serve.add_argument(
        "--emulate-rack",
        default=None,
        metavar="RACK",
        help="emulate RackAwareReplicaSelector for consumers in RACK",
    )
    serve.add_argument(
        "--replica-selector",
        choices=REPLICA_SELECTORS,
        default=None,
        help=(
            "the brokers' replica.selector.class: 'rack-aware' answers every Fetch as Kafka's "
            "RackAwareReplicaSelector does, per client rack (default: none, leaders serve)"
        ),
    )
    serve.add_argument(
        "--group-initial-rebalance-delay-ms",
        type=int,
        default=0,
        metavar="MS",
        help="the coordinator's group.initial.rebalance.delay.ms (default 0)",
    )
    serve.add_argument(
        "--consumer-group-heartbeat-interval-ms",
        type=int,
        default=None,
        metavar="MS",
        help="group.consumer.heartbeat.interval.ms of KIP-848 groups (default: the engine's)",
    )
    serve.add_argument(
        "--consumer-group-session-timeout-ms",
        type=int,
        default=None,
        metavar="MS",
        help="group.consumer.session.timeout.ms of KIP-848 groups (default: the engine's)",
    )
    serve.add_argument(
        "--track-requests", action="store_true", help="start request tracking at once"
    )
    serve.add_argument(
        "--exit-on-eof",
        action="store_true",
        help="stop at the end of standard input (default: keep serving until a signal)",
    )
    serve.add_argument(
        "--security-protocol",
        choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
        default="PLAINTEXT",
        help="put a TLS/SASL front before the brokers (prints CA_FILE=... before BOOTSTRAP=...)",
    )
    serve.add_argument(
        "--sasl-mechanism",
        action="append",
        default=[],
        metavar="MECHANISM",
        help="enable a SASL mechanism (repeatable; default: PLAIN, SCRAM-SHA-256/512, OAUTHBEARER)",
    )
    serve.add_argument(
        "--user",
        action="append",
        type=_user_spec,
        default=[],
        metavar="NAME:PASSWORD",
        help="a PLAIN/SCRAM user (repeatable)",
    )
    serve.add_argument(
        "--session-lifetime-ms",
        type=int,
        default=None,
        help="SASL session lifetime (KIP-368 re-authentication; connections.max.reauth.ms "
        "with --engine kafka)",
    )
    serve.add_argument(
        "--require-client-cert",
        action="store_true",
        help="mutual TLS (prints CLIENT_CERT=... and CLIENT_KEY=...)",
    )
    serve.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    jars = sub.add_parser(
        "kafka-jars",
        help="download Apache Kafka's broker jars once (Maven Central, checksums verified)",
        description=(
            "Resolve the runtime jars of Apache Kafka's broker with Maven into the cache "
            "(RACKAFKA_KAFKA_CACHE or ~/.cache/rackafka/kafka), check their SHA-256 and "
            "print the directory."
        ),
    )
    jars.add_argument("--kafka-version", default=None, help="default: the pinned release")
    jars.add_argument("--cache-dir", default=None, help="default: RACKAFKA_KAFKA_CACHE or ~/.cache")
    jars.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    return parser


def _user_spec(text: str) -> tuple[str, str]:
    name, sep, password = text.partition(":")
    if not sep or not name or not password:
        raise argparse.ArgumentTypeError("a user is NAME:PASSWORD")
    return name, password


def _make_cluster(
    args: argparse.Namespace, racks: list[str], security: dict[str, Any]
) -> EmbeddedCluster | KafkaCluster:
    engine = getattr(args, "engine", "mock")
    if engine == "kafka":
        from .kafka import KafkaCluster

        if args.emulate_rack or args.track_requests:
            raise ValueError(
                "--emulate-rack and --track-requests need --engine mock (real brokers run "
                "Kafka's own RackAwareReplicaSelector and track nothing)"
            )
        selector = getattr(args, "replica_selector", None)
        if selector not in (None, "rack-aware"):
            raise ValueError(
                f"--replica-selector {selector} needs --engine mock (real brokers run "
                "Kafka's own RackAwareReplicaSelector)"
            )
        broker_config: dict[str, Any] = {}
        heartbeat = getattr(args, "consumer_group_heartbeat_interval_ms", None)
        session = getattr(args, "consumer_group_session_timeout_ms", None)
        if heartbeat is not None:
            broker_config["group.consumer.heartbeat.interval.ms"] = heartbeat
            broker_config["group.consumer.min.heartbeat.interval.ms"] = min(heartbeat, 5000)
        if session is not None:
            broker_config["group.consumer.session.timeout.ms"] = session
            broker_config["group.consumer.min.session.timeout.ms"] = min(session, 45000)
        return KafkaCluster(
            brokers=args.brokers,
            racks=racks,
            kafka_version=args.kafka_version,
            work_dir=args.kafka_work_dir,
            keep_work_dir=args.kafka_work_dir is not None,
            group_initial_rebalance_delay_ms=getattr(args, "group_initial_rebalance_delay_ms", 0),
            broker_config=broker_config,
            **security,
        )
    return EmbeddedCluster(
        brokers=args.brokers,
        racks=racks,
        replica_selector=getattr(args, "replica_selector", None),
        group_initial_rebalance_delay_ms=getattr(args, "group_initial_rebalance_delay_ms", 0),
        **security,
    )


def serve(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    """Run the ``serve`` command; returns the exit status."""
    racks = [r for r in args.racks.split(",") if r] if args.racks else []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        raise _Terminate(signum)

    previous = {}
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            previous[sig] = signal.signal(sig, on_signal)
        except ValueError:  # pragma: no cover - not the main thread
            pass
    cluster: EmbeddedCluster | KafkaCluster | None = None
    try:
        try:
            security: dict[str, Any] = {}
            protocol = getattr(args, "security_protocol", "PLAINTEXT")
            if protocol != "PLAINTEXT":
                security = {
                    "security_protocol": protocol,
                    "sasl_mechanisms": args.sasl_mechanism or None,
                    "users": dict(args.user),
                    "session_lifetime_ms": args.session_lifetime_ms,
                    "require_client_cert": args.require_client_cert,
                }
            selector = getattr(args, "replica_selector", None)
            if selector is not None and args.emulate_rack:
                raise ValueError(
                    "--replica-selector and --emulate-rack exclude each other: the selector "
                    "already answers each client for its own rack"
                )
            cluster = _make_cluster(args, racks, security)
            cluster.start()
            heartbeat = getattr(args, "consumer_group_heartbeat_interval_ms", None)
            session = getattr(args, "consumer_group_session_timeout_ms", None)
            if isinstance(cluster, EmbeddedCluster) and (
                heartbeat is not None or session is not None
            ):
                cluster.set_consumer_group_timing(
                    heartbeat_interval_ms=heartbeat, session_timeout_ms=session
                )
            for name, partitions, rf in args.topic:
                cluster.create_topic(name, partitions, rf)
                if args.messages:
                    cluster.produce(
                        name, args.messages, value_size=args.value_size,
                        compression=args.compression, batch_size=args.batch_size,
                        partition="spread",
                    )  # fmt: skip
            if args.emulate_rack:
                cluster.emulate_rack_aware_selector(args.emulate_rack)
            if args.track_requests:
                cluster.start_request_tracking()
        except Exception as exc:
            # The controlling process waits for the first line: tell it why there is none.
            log.error("startup failed", exc_info=True)
            message = f"{type(exc).__name__}: {exc}".replace("\n", " ")
            stdout.write(f"ERR startup failed: {message}\n")
            stdout.flush()
            return 1
        front = cluster.front
        if front is not None:
            stdout.write(f"SECURITY_PROTOCOL={front.security_protocol}\n")
            if front.ca_file:
                stdout.write(f"CA_FILE={front.ca_file}\n")
            if front.require_client_cert:
                stdout.write(f"CLIENT_CERT={front.client_cert_file}\n")
                stdout.write(f"CLIENT_KEY={front.client_key_file}\n")
            if front.mechanisms:
                stdout.write(f"SASL_MECHANISMS={','.join(front.mechanisms)}\n")
        stdout.write(f"BOOTSTRAP={cluster.bootstrap_servers}\n")
        stdout.flush()
        interpreter = CommandInterpreter(cluster)
        while True:
            line = stdin.readline()
            if not line:
                if not getattr(args, "exit_on_eof", False):
                    log.info("end of standard input: serving until SIGTERM or SIGINT")
                    while True:
                        time.sleep(3600)  # a signal ends it (_Terminate)
                break
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                answer = interpreter.execute(line)
            except _Quit:
                stdout.write("OK bye\n")
                stdout.flush()
                break
            stdout.write(answer + "\n")
            stdout.flush()
    except _Terminate as exc:
        log.info("terminating on signal %s", exc.args[0] if exc.args else "?")
    finally:
        if cluster is not None:
            cluster.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m rackafka.testing``."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    if args.command == "serve":
        try:
            return serve(args, sys.stdin, sys.stdout)
        except BrokenPipeError:  # the controlling process went away
            return 0
    if args.command == "kafka-jars":
        from .kafka_dist import KafkaJarsError, kafka_libs

        try:
            print(kafka_libs(args.kafka_version, args.cache_dir))
        except (KafkaJarsError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        return 0
    return 2  # pragma: no cover - argparse requires a command


if __name__ == "__main__":
    sys.exit(main())
