"""The Amazon MSK IAM token provider: tokens signed offline from environment credentials,
made in a worker thread, cached, and never shown."""

from __future__ import annotations

import asyncio
import base64
import threading
from urllib.parse import parse_qs, urlparse

import pytest

from rackafka.net.sasl.aws_msk_iam import MSKIAMTokenProvider, region_from_bootstrap

pytest.importorskip("aws_msk_iam_sasl_signer", reason="the aws extra signs MSK IAM tokens")

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.fixture(autouse=True)
def offline_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    """Credentials from the environment only: nothing may reach an AWS endpoint or the
    instance metadata service."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")


def _decode(token: str) -> str:
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()


async def test_token_is_a_signed_msk_connect_url_made_off_the_loop() -> None:
    provider = MSKIAMTokenProvider(region="eu-west-1")
    seen_threads: list[str] = []
    generate = provider._generate

    def spy() -> tuple[str, int]:
        seen_threads.append(threading.current_thread().name)
        return generate()

    provider._generate = spy  # type: ignore[method-assign]
    token = await provider.token()
    url = urlparse(_decode(token))
    query = parse_qs(url.query)
    assert url.hostname == "kafka.eu-west-1.amazonaws.com"
    assert query["Action"] == ["kafka-cluster:Connect"]
    assert "X-Amz-Signature" in query
    assert SECRET not in token and SECRET not in _decode(token)
    assert seen_threads and seen_threads[0] != threading.main_thread().name
    # Cached: the same token, no second signature.
    assert await provider.token() == token
    assert len(seen_threads) == 1
    assert "AKIA" not in repr(provider) and SECRET not in repr(provider)


async def test_concurrent_connections_share_one_token() -> None:
    provider = MSKIAMTokenProvider(region="us-east-1")
    tokens = await asyncio.gather(*(provider.token() for _ in range(5)))
    assert len(set(tokens)) == 1


def test_region_from_environment_and_host_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "ap-southeast-2")
    assert MSKIAMTokenProvider().region == "ap-southeast-2"
    assert (
        region_from_bootstrap("b-2.c1.x7.c3.kafka.us-gov-west-1.amazonaws.com:9098")
        == "us-gov-west-1"
    )
    assert region_from_bootstrap(["b-1.s.kafka-serverless.eu-central-1.amazonaws.com:9098"]) == (
        "eu-central-1"
    )
    assert region_from_bootstrap("localhost:9092") is None


def test_no_region_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from rackafka.errors import KafkaConfigurationError

    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    with pytest.raises(KafkaConfigurationError, match="region"):
        MSKIAMTokenProvider()
