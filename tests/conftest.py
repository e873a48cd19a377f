"""Test configuration: the embedded cluster fixtures come from our own pytest plugin."""

pytest_plugins = ["rackafka.testing.pytest_plugin"]
