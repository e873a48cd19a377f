"""Amazon MSK IAM authentication: an OAUTHBEARER token provider signed with AWS credentials.

Tokens are made by the optional ``aws-msk-iam-sasl-signer-python`` package (``pip install
'rackafka[aws]'``) in a worker thread, never on the event loop (the AWS credential chain
may do blocking I/O), and reused until shortly before they expire.  They are never logged.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from typing import Any

from rackafka.errors import KafkaConfigurationError

#: A fresh token is made when the cached one has less than this left (seconds).
_REFRESH_MARGIN = 60.0
_MSK_HOST = re.compile(r"\.kafka(?:-serverless)?\.([a-z]{2}(?:-[a-z]+)+-\d)\.amazonaws\.com")


def _load_signer() -> Any:
    try:
        from aws_msk_iam_sasl_signer import MSKAuthTokenProvider
    except ImportError as exc:
        raise KafkaConfigurationError(
            "MSK IAM authentication needs the aws-msk-iam-sasl-signer-python package: "
            "pip install 'rackafka[aws]'"
        ) from exc
    return MSKAuthTokenProvider


def region_from_bootstrap(bootstrap_servers: str | list[str]) -> str | None:
    """The AWS region named in MSK broker host names (``b-1.x.kafka.eu-west-1.amazonaws.com``)."""
    text = bootstrap_servers if isinstance(bootstrap_servers, str) else ",".join(bootstrap_servers)
    found = _MSK_HOST.search(text)
    return found.group(1) if found else None


class MSKIAMTokenProvider:
    """A ``sasl_oauth_token_provider`` for Amazon MSK clusters with IAM access control.

    Use it with ``security_protocol="SASL_SSL"`` and ``sasl_mechanism="OAUTHBEARER"`` on
    port 9098 (public access: 9198)::

        from rackafka import AIOKafkaConsumer
        from rackafka.helpers import create_ssl_context
        from rackafka.net.sasl.aws_msk_iam import MSKIAMTokenProvider

        consumer = AIOKafkaConsumer(
            "orders",
            bootstrap_servers="b-1.mycluster.abc123.c2.kafka.eu-west-1.amazonaws.com:9098",
            security_protocol="SASL_SSL",
            ssl_context=create_ssl_context(),
            sasl_mechanism="OAUTHBEARER",
            sasl_oauth_token_provider=MSKIAMTokenProvider(region="eu-west-1"),
            client_rack="auto",
        )

    Credentials come from the default AWS chain (environment, profile, container or
    instance role), or from ``profile`` / ``role_arn``.

    Arguments:
        region: the cluster's AWS region; default ``AWS_REGION`` or
            ``AWS_DEFAULT_REGION``.
        profile: a named profile of the AWS configuration files.
        role_arn: a role to assume for the token (``role_session_name`` names the session).
        aws_debug_creds: let the signer log which identity it uses (never the secret).

    Raises:
        KafkaConfigurationError: the package is missing, or no region is known.
    """

    def __init__(
        self,
        region: str | None = None,
        *,
        profile: str | None = None,
        role_arn: str | None = None,
        role_session_name: str | None = None,
        aws_debug_creds: bool = False,
    ) -> None:
        self._signer = _load_signer()
        region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if not region:
            raise KafkaConfigurationError(
                "MSKIAMTokenProvider needs region= (or AWS_REGION in the environment)"
            )
        if profile and role_arn:
            raise KafkaConfigurationError("MSKIAMTokenProvider: give profile or role_arn, not both")
        self.region = region
        self._profile = profile
        self._role_arn = role_arn
        self._role_session_name = role_session_name
        self._debug = aws_debug_creds
        self._token: str | None = None
        self._expires_at = 0.0
        self._lock: asyncio.Lock | None = None

    def __repr__(self) -> str:
        how = "profile" if self._profile else "role" if self._role_arn else "default chain"
        return f"<MSKIAMTokenProvider region={self.region!r} credentials={how}>"

    def _generate(self) -> tuple[str, int]:
        signer = self._signer
        if self._role_arn:
            name = self._role_session_name
            kwargs = {"sts_session_name": name} if name else {}
            result = signer.generate_auth_token_from_role_arn(self.region, self._role_arn, **kwargs)
        elif self._profile:
            result = signer.generate_auth_token_from_profile(self.region, self._profile)
        else:
            result = signer.generate_auth_token(self.region, aws_debug_creds=self._debug)
        token, expiry_ms = result
        return str(token), int(expiry_ms)

    async def token(self) -> str:
        """A valid token, made in a worker thread when the cached one is close to expiry."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._token is None or time.time() > self._expires_at - _REFRESH_MARGIN:
                token, expiry_ms = await asyncio.get_running_loop().run_in_executor(
                    None, self._generate
                )
                self._token = token
                self._expires_at = expiry_ms / 1000
            return self._token

    def extensions(self) -> dict[str, str]:
        """No SASL extensions."""
        return {}
