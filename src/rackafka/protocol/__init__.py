"""The Kafka wire protocol, sans-IO.

Each API is declared once in ``rackafka.protocol.apis`` (see :mod:`.schema`);
:mod:`.registry` lists them by key, :mod:`.frames` adds headers and framing and
:mod:`.versions` picks the version to speak with a broker.  Nothing here does IO.
"""
