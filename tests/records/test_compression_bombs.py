"""A compression bomb is refused without holding much more than the decompression limit.

Each codec's bomb (256 MiB of zeros, a few MiB or less compressed) is decompressed with a
32 MiB limit; Python's allocations are traced (:mod:`tracemalloc` sees every bytes and
bytearray object, where the decompressed data lives) and the peak must stay within the
limit plus a small margin: inflating stops at the limit, and no second copy of the output
is made on the way.
"""

from __future__ import annotations

import tracemalloc
import zlib
from collections.abc import Iterator

import pytest

from rackafka.errors import RecordTooLargeError
from rackafka.records.compression import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    compress,
    decompress,
)

MiB = 1 << 20
LIMIT = 32 * MiB
MARGIN = 8 * MiB
BOMB = 256 * MiB


@pytest.fixture(scope="module")
def bombs() -> Iterator[dict[int, bytes]]:
    gzip = zlib.compressobj(1, zlib.DEFLATED, 31)
    zeros = bytes(MiB)
    out = {
        CODEC_GZIP: b"".join([gzip.compress(zeros) for _ in range(BOMB // MiB)] + [gzip.flush()])
    }
    big = bytes(BOMB)
    for codec in (CODEC_ZSTD, CODEC_LZ4, CODEC_SNAPPY):
        out[codec] = compress(codec, big)
    del big
    yield out


@pytest.mark.parametrize(
    "codec",
    [CODEC_GZIP, CODEC_ZSTD, CODEC_LZ4, CODEC_SNAPPY],
    ids=["gzip", "zstd", "lz4", "snappy"],
)
def test_a_bomb_is_refused_within_the_limit(bombs: dict[int, bytes], codec: int) -> None:
    data = bombs[codec]
    assert len(data) < BOMB // 8  # it is a bomb
    tracemalloc.start()
    try:
        with pytest.raises(RecordTooLargeError, match="compression bomb"):
            decompress(codec, data, max_size=LIMIT)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= LIMIT + MARGIN, f"peak {peak / MiB:.1f} MiB for a {LIMIT // MiB} MiB limit"


@pytest.mark.parametrize("members", [1, 3])
def test_gzip_just_under_the_limit_and_several_members_still_decode(members: int) -> None:
    part = bytes(range(256)) * (LIMIT // 256 // members // 2)
    data = b"".join(compress(CODEC_GZIP, part) for _ in range(members))
    assert decompress(CODEC_GZIP, data, max_size=LIMIT) == part * members
    with pytest.raises(RecordTooLargeError):
        decompress(CODEC_GZIP, data, max_size=len(part) * members - 1)
