"""The admin calls about configs."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from rackafka.admin import _checks as check
from rackafka.admin._core import AdminCore
from rackafka.admin.alter_config_op import AlterConfigOp, AlterConfigOpType
from rackafka.admin.config_resource import ConfigResource, ConfigResourceType
from rackafka.admin.responses import (
    AlterConfigsResult,
    Response,
    describe_configs_response,
)
from rackafka.errors import (
    KafkaError,
    for_code,
    is_retriable,
)
from rackafka.protocol.apis.alter_configs import ALTER_CONFIGS
from rackafka.protocol.apis.describe_configs import DESCRIBE_CONFIGS
from rackafka.protocol.apis.incremental_alter_configs import INCREMENTAL_ALTER_CONFIGS

log = logging.getLogger(__name__)


class ConfigsAdmin(AdminCore):
    """Configs of topics and brokers."""

    # -- configs ---------------------------------------------------------------

    async def describe_configs(
        self, config_resources: list[Any], include_synonyms: bool = False
    ) -> list[Response]:
        """Describe the configs of topics and brokers.

        Arguments:
            config_resources: :class:`~rackafka.admin.config_resource.ConfigResource`
                objects; the keys of a resource's ``configs`` name the configs to
                describe (``None`` or empty: all of them).
            include_synonyms: also return, for each config, where else it is set.

        Returns:
            A response per broker asked, as aiokafka's ``DescribeConfigsResponse``:
            first one per broker resource's broker, then one for all the topic
            resources. Each has ``resources``: ``(error_code, error_message,
            resource_type, resource_name, config_entries)`` tuples, each config entry
            ``(config_names, config_value, read_only, config_source, is_sensitive,
            config_synonyms)``.

        Raises:
            TypeError, ValueError: an argument is invalid (the message names it).
        """
        resources = check.check_config_resources(config_resources, alter=False)
        check.check_bool("include_synonyms", include_synonyms)
        by_broker: dict[int, list[dict[str, Any]]] = {}
        topic_res: list[dict[str, Any]] = []
        for rtype, name, configs in resources:
            entry = {
                "resource_type": int(rtype),
                "resource_name": name,
                "configuration_keys": list(configs) if configs else None,
            }
            if rtype == ConfigResourceType.BROKER:
                by_broker.setdefault(int(name), []).append(entry)
            else:
                topic_res.append(entry)

        async def ask(node: int | None, entries: list[dict[str, Any]]) -> Response:
            request = DESCRIBE_CONFIGS.Request(resources=entries, include_synonyms=include_synonyms)
            resp, _ = await self._send(DESCRIBE_CONFIGS, lambda _v: request, node)
            return describe_configs_response(resp)

        calls = [ask(node, entries) for node, entries in by_broker.items()]
        if topic_res:
            calls.append(ask(None, topic_res))
        return list(await asyncio.gather(*calls))

    async def alter_configs(self, config_resources: list[Any]) -> list[Response]:
        """Set the configs of topics and brokers (the whole dynamic config of each
        resource is replaced by its ``configs``, as Kafka's AlterConfigs does).

        Arguments:
            config_resources: :class:`~rackafka.admin.config_resource.ConfigResource`
                objects with the ``configs`` to set.

        Returns:
            As aiokafka: first the answer for the topic resources (sent even when there
            are none), then one per broker resource's broker, each an
            ``AlterConfigsResponse`` with ``resources``: ``(error_code, error_message,
            resource_type, resource_name)`` tuples.

        Raises:
            TypeError, ValueError: an argument is invalid (the message names it).
        """
        resources = check.check_config_resources(config_resources, alter=True)
        by_broker: dict[int, list[dict[str, Any]]] = {}
        topic_res: list[dict[str, Any]] = []
        for rtype, name, configs in resources:
            entry = {
                "resource_type": int(rtype),
                "resource_name": name,
                "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
            }
            if rtype == ConfigResourceType.BROKER:
                by_broker.setdefault(int(name), []).append(entry)
            else:
                topic_res.append(entry)

        async def ask(node: int | None, entries: list[dict[str, Any]]) -> Response:
            request = ALTER_CONFIGS.Request(resources=entries, validate_only=False)
            resp, _ = await self._send(ALTER_CONFIGS, lambda _v: request, node)
            done = {(r.resource_type, r.resource_name) for r in resp.responses if not r.error_code}
            await self._await_configs(
                node, [e for e in entries if (e["resource_type"], e["resource_name"]) in done]
            )
            return Response(
                "AlterConfigsResponse",
                throttle_time_ms=resp.throttle_time_ms,
                resources=[
                    AlterConfigsResult(
                        r.error_code, r.error_message, r.resource_type, r.resource_name
                    )
                    for r in resp.responses
                ],
            )

        calls = [ask(None, topic_res)]
        calls += [ask(node, entries) for node, entries in by_broker.items()]
        return list(await asyncio.gather(*calls))

    async def incremental_alter_configs(
        self,
        configs: dict[ConfigResource, list[AlterConfigOp]],
        validate_only: bool = False,
    ) -> None:
        """Change single configs of topics and brokers, leaving the others as they are
        (Java's ``incrementalAlterConfigs``, KIP-339).

        Each resource's changes are applied together or not at all.  A broker resource
        goes to that broker (the one of name ``""``, the cluster-wide default of every
        broker, to any).  Once a broker answered, the call waits (at most
        ``request_timeout_ms``) until that broker describes the changes: the values
        :attr:`~rackafka.admin.AlterConfigOpType.SET`; after a ``DELETE``, a config no
        longer set on the resource itself; after an ``APPEND`` (``SUBTRACT``), the
        resource's own value with (without) the items.

        Arguments:
            configs: by :class:`~rackafka.admin.config_resource.ConfigResource` (its
                ``configs`` left ``None``: the operations say what to change), the
                :class:`~rackafka.admin.AlterConfigOp` operations on its configs.
                Each resource once.
            validate_only: only check that the changes could be made.

        Raises:
            TypeError, ValueError: an argument is invalid (the message names it).
            BrokerResponseError: once every resource was answered, the error of a
                resource a broker refused, naming it (and the others that failed), for
                example :exc:`~rackafka.errors.InvalidConfigurationError` (an unknown
                config, a value out of range, APPEND to a config that is not a list),
                :exc:`~rackafka.errors.UnknownTopicOrPartitionError`; the resources not
                named were changed.
        """
        if not isinstance(configs, Mapping):
            raise TypeError(
                f"configs must be a dict of ConfigResource: list of AlterConfigOp, not {configs!r}"
            )
        by_node: dict[int | None, list[dict[str, Any]]] = {}
        ops_of: dict[tuple[int, str], list[AlterConfigOp]] = {}
        for res, ops in configs.items():
            rtype, name = _incremental_resource(res)
            if (rtype, name) in ops_of:
                raise ValueError(f"configs names {rtype.name} {name!r} twice")
            items = check.check_list_of(f"configs[{res!r}]", ops, AlterConfigOp)
            ops_of[int(rtype), name] = items
            node = int(name) if rtype == ConfigResourceType.BROKER and name else None
            by_node.setdefault(node, []).append(
                {
                    "resource_type": int(rtype),
                    "resource_name": name,
                    "configs": [
                        {"name": o.name, "config_operation": int(o.op), "value": o.value}
                        for o in items
                    ],
                }
            )
        check.check_bool("validate_only", validate_only)

        async def ask(node: int | None, entries: list[dict[str, Any]]) -> list[Any]:
            request = INCREMENTAL_ALTER_CONFIGS.Request(
                resources=entries, validate_only=validate_only
            )
            resp, _ = await self._send(INCREMENTAL_ALTER_CONFIGS, lambda _v: request, node)
            if not validate_only:
                done = {
                    (r.resource_type, r.resource_name) for r in resp.responses if not r.error_code
                }
                await self._await_configs(
                    node,
                    [
                        {
                            "resource_type": rtype,
                            "resource_name": rname,
                            "configs": [
                                {"name": o.name, "shown": _shows_op(rtype, rname, o)}
                                for o in ops_of[rtype, rname]
                            ],
                        }
                        for rtype, rname in done
                        if (rtype, rname) in ops_of
                    ],
                )
            return list(resp.responses)

        answers = await asyncio.gather(*(ask(n, e) for n, e in by_node.items()))
        failed = [r for rs in answers for r in rs if r.error_code]
        if not failed:
            return
        failed.sort(key=lambda r: is_retriable(for_code(r.error_code)))

        def named(r: Any) -> str:
            return f"{ConfigResourceType(r.resource_type).name.lower()} {r.resource_name!r}"

        first = failed[0]
        text = f"IncrementalAlterConfigs: {named(first)}"
        if first.error_message:
            text += f": {first.error_message}"
        if len(failed) > 1:
            others = ", ".join(f"{named(r)}: {for_code(r.error_code).__name__}" for r in failed[1:])
            text += f" (also {others})"
        raise for_code(first.error_code)(text)

    async def _await_configs(self, node: int | None, entries: list[dict[str, Any]]) -> None:
        """Wait (at most ``request_timeout_ms``) until the broker that answered an
        AlterConfigs describes the values it set: the controller applied them, the broker
        sees them a little later.  A config entry's ``"shown"``, when it has one, is what
        to wait for instead of its ``"value"``: a function of the described config (or
        ``None`` when the broker does not list it) that is true once the change shows.
        Never raises: the change was made, only its view lags."""
        wanted: dict[tuple[int, str, str], Callable[[Any], bool]] = {}
        for e in entries:
            for c in e["configs"]:
                key = (e["resource_type"], e["resource_name"], c["name"])
                if "shown" in c:
                    wanted[key] = c["shown"]
                elif c["value"] is not None:
                    wanted[key] = partial(_shows_value, c["value"])
        if not wanted:
            return
        names: dict[tuple[int, str], list[str]] = {}
        for rtype, rname, cname in wanted:
            names.setdefault((rtype, rname), []).append(cname)
        request = DESCRIBE_CONFIGS.Request(
            resources=[
                {"resource_type": rtype, "resource_name": rname, "configuration_keys": keys}
                for (rtype, rname), keys in names.items()
            ]
        )
        deadline = time.monotonic() + self._request_timeout
        backoff = self._client.retry_policy.start()
        while True:
            try:
                resp, _ = await self._send(DESCRIBE_CONFIGS, lambda _v: request, node)
            except KafkaError as exc:
                log.debug("waiting for configs to show: %s", exc)
            else:
                seen = {
                    (r.resource_type, r.resource_name, c.name): c
                    for r in resp.results
                    for c in r.configs
                }
                if all(shown(seen.get(key)) for key, shown in wanted.items()):
                    return
            wait = backoff.next()
            if time.monotonic() + wait > deadline:
                log.debug("altered configs still not described by node %s", node)
                return
            await asyncio.sleep(wait)


def _incremental_resource(res: Any) -> tuple[ConfigResourceType, str]:
    """The type and name of a resource of ``incremental_alter_configs``: a topic's name, a
    broker's id (an int or its text) or ``""`` (the default of every broker)."""
    if not isinstance(res, ConfigResource):
        raise TypeError(f"configs: the keys must be ConfigResource, not {res!r}")
    if res.configs:
        raise ValueError(
            f"configs: {res!r} has configs of its own: give the changes as AlterConfigOp"
        )
    name = res.name
    if res.resource_type == ConfigResourceType.BROKER:
        if isinstance(name, bool) or not isinstance(name, (int, str)):
            raise TypeError(f"configs: a broker's name is its id or '', not {name!r}")
        if name != "":
            try:
                if int(name) < 0:
                    raise ValueError
            except ValueError:
                raise ValueError(
                    f"configs: a broker's name is its id or '', not {name!r}"
                ) from None
        return res.resource_type, str(name)
    if not isinstance(name, str) or not name:
        raise TypeError(f"configs: a topic's name must be a str, not {name!r}")
    return res.resource_type, name


#: The config source (DescribeConfigs) of a value set on the resource itself, by resource:
#: a topic's, a broker's, the default of every broker (resource name "").
_DYNAMIC_TOPIC, _DYNAMIC_BROKER, _DYNAMIC_DEFAULT_BROKER = 1, 2, 3


def _shows_value(value: str, config: Any) -> bool:
    # A sensitive value is never shown: it counts as seen.
    return config is not None and (config.is_sensitive or config.value == value)


def _shows_op(rtype: int, rname: str, op: AlterConfigOp) -> Callable[[Any], bool]:
    """What ``incremental_alter_configs`` waits for after ``op``: the value SET; after a
    DELETE, the config no longer set on the resource itself; after an APPEND, the
    resource's own value lists the items; after a SUBTRACT, it lists none of them."""
    if op.op == AlterConfigOpType.SET:
        return partial(_shows_value, op.value or "")
    if rtype != ConfigResourceType.BROKER:
        own = _DYNAMIC_TOPIC
    else:
        own = _DYNAMIC_BROKER if rname else _DYNAMIC_DEFAULT_BROKER
    items = {v.strip() for v in (op.value or "").split(",") if v.strip()}

    def shown(config: Any) -> bool:
        if op.op == AlterConfigOpType.DELETE:
            return config is None or config.config_source != own
        if config is None or config.config_source != own:
            return False
        if config.is_sensitive:
            return True
        now = {v.strip() for v in (config.value or "").split(",")}
        if op.op == AlterConfigOpType.APPEND:
            return items <= now
        return not items & now

    return shown
