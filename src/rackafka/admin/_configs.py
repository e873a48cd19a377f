"""The admin calls about configs."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from rackafka.admin import _checks as check
from rackafka.admin._core import AdminCore
from rackafka.admin.config_resource import ConfigResourceType
from rackafka.admin.responses import (
    AlterConfigsResult,
    Response,
    describe_configs_response,
)
from rackafka.errors import (
    KafkaError,
)
from rackafka.protocol.apis.alter_configs import ALTER_CONFIGS
from rackafka.protocol.apis.describe_configs import DESCRIBE_CONFIGS

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

    async def _await_configs(self, node: int | None, entries: list[dict[str, Any]]) -> None:
        """Wait (at most ``request_timeout_ms``) until the broker that answered an
        AlterConfigs describes the values it set: the controller applied them, the broker
        sees them a little later.  Never raises: the change was made, only its view lags."""
        wanted = {
            (e["resource_type"], e["resource_name"], c["name"]): c["value"]
            for e in entries
            for c in e["configs"]
            if c["value"] is not None
        }
        if not wanted:
            return
        request = DESCRIBE_CONFIGS.Request(
            resources=[
                {
                    "resource_type": e["resource_type"],
                    "resource_name": e["resource_name"],
                    "configuration_keys": [c["name"] for c in e["configs"]],
                }
                for e in entries
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
                # A sensitive value is never shown: it counts as seen.
                seen = {
                    key: wanted.get(key) if c.is_sensitive else c.value
                    for r in resp.results
                    for c in r.configs
                    for key in [(r.resource_type, r.resource_name, c.name)]
                }
                if all(seen.get(key) == value for key, value in wanted.items()):
                    return
            wait = backoff.next()
            if time.monotonic() + wait > deadline:
                log.debug("altered configs still not described by node %s", node)
                return
            await asyncio.sleep(wait)
