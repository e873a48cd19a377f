"""The consumer: the public API, the fetcher and the read-replica routing policy."""
