"""Placeholder: replaced by the full error table."""
class KafkaError(Exception):
    pass
class KafkaProtocolError(KafkaError):
    pass
class UnsupportedVersionError(KafkaError):
    pass
