"""asyncio networking: broker connections with framing, pipelining, timeouts and
version negotiation."""
