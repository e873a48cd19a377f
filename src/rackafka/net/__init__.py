"""asyncio networking: connections to brokers (framing, pipelining, timeouts, version negotiation)."""
