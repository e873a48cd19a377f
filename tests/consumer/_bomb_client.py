"""Run in a subprocess by test_bombs.py: a consumer meets one compressed batch that
inflates to ``size`` bytes; prints what it raised and the process's peak RSS as JSON."""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import zlib

import cramjam

from rackafka import AIOKafkaConsumer, TopicPartition
from rackafka.records import CODEC_GZIP, CODEC_LZ4, CODEC_ZSTD, encode_batch
from rackafka.testing.fake_broker import FakeBroker

from ..records.refcodec import batch_bytes, zigzag_varint

CODECS = {"zstd": CODEC_ZSTD, "lz4": CODEC_LZ4, "gzip": CODEC_GZIP}


def inflating(codec: str, size: int) -> bytes:
    """Compressed data of one record whose value is ``size`` zero bytes, built in chunks."""
    # A record: length, attributes, timestamp delta, offset delta, null key, then the
    # value's length and the value, and no headers.
    body = b"\x00\x00\x00\x01"
    prefix = zigzag_varint(len(body) + len(zigzag_varint(size)) + size + 1)
    prefix += body + zigzag_varint(size)
    chunk = bytes(16 << 20)
    if codec == "gzip":
        co = zlib.compressobj(6, zlib.DEFLATED, 31)
        parts = [co.compress(prefix)]
        left = size
        while left:
            n = min(left, len(chunk))
            parts.append(co.compress(chunk[:n]))
            left -= n
        parts.append(co.compress(b"\x00") + co.flush())
        return b"".join(parts)
    comp = getattr(cramjam, codec).Compressor(1)
    comp.compress(prefix)
    left = size
    while left:
        n = min(left, len(chunk))
        comp.compress(chunk[:n])
        left -= n
    comp.compress(b"\x00")
    return bytes(comp.finish())


async def main(codec: str, size: int) -> dict[str, object]:
    payload = inflating(codec, size)
    tp = TopicPartition("t", 0)
    async with FakeBroker(topics={"t": 1}) as broker:
        broker.append("t", 0, encode_batch([(0, b"k", b"v")], base_offset=0))
        broker.append(
            "t", 0, batch_bytes(payload, count=1, base_offset=1, attributes=CODECS[codec])
        )
        broker.append("t", 0, encode_batch([(0, b"k", b"w")], base_offset=2))
        consumer = AIOKafkaConsumer(
            bootstrap_servers=broker.bootstrap_servers,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=100,
        )
        await consumer.start()
        consumer.assign([tp])
        delivered: list[int] = []
        error = None
        try:
            for _ in range(50):
                got = await consumer.getmany(timeout_ms=200)
                delivered += [r.offset for r in got.get(tp, [])]
        except Exception as exc:
            error = type(exc).__name__
        position = await consumer.position(tp)
        await consumer.stop()
    return {
        "compressed": len(payload),
        "error": error,
        "delivered": delivered,
        "position": position,
        "max_rss_mb": peak_rss_mb(),
    }


def peak_rss_mb() -> float:
    """This process's peak resident memory in MiB.

    Linux's ``VmHWM`` belongs to the address space made at ``exec``; ``ru_maxrss`` does not
    (the kernel carries the high-water mark over ``exec``), so a child started by a big
    pytest worker would report at least the worker's size."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], int(sys.argv[2])))))
