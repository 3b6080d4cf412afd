"""The frame walker that runs before kio: it must pass every real request and stop every forged count."""

from __future__ import annotations

import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from kio.serial import entity_reader

from broker.protocol.codec import UnparseableRequest, parse_request, request_class
from broker.protocol.routes import handler_table
from broker.protocol.validate import InvalidFrame, walker
from kafkascope.fuzz.mutate import campaign
from kafkascope.fuzz.seeds import seeds

CORPUS = Path(__file__).resolve().parents[1] / "fuzz" / "corpus"
ROOT = Path(__file__).resolve().parents[2]
ADVERTISED = {k: (s.min_version, s.max_version) for k, s in handler_table().items()}
SEEDS = list(seeds(ADVERTISED))


def test_every_seed_of_every_advertised_version_walks_to_where_kio_ends() -> None:
    assert len({(s.api_key, s.api_version) for s in SEEDS}) >= 150
    for s in SEEDS:
        frame = s.encode()
        cls = request_class(s.api_key, s.api_version)
        _, n = entity_reader(cls.__header_schema__)(frame, 0)
        _, m = entity_reader(cls)(frame, n)
        assert walker(cls)(frame) == n + m, (s.api_key, s.api_version)


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.bin")), ids=lambda p: p.stem)
def test_corpus_frames_that_aborted_kio_are_refused_in_a_live_process(path: Path) -> None:
    # Without the walker kio allocates the forged count and Rust aborts the interpreter (exit -6).
    code = ("import sys; from broker.protocol.codec import parse_request, UnparseableRequest\n"
            "frame = open(sys.argv[1], 'rb').read()[4:]\n"
            "try:\n    parse_request(frame)\nexcept UnparseableRequest as e:\n    print('refused', e)\n")
    out = subprocess.run([sys.executable, "-c", code, str(path)], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("refused"), out.stdout


def _offset_fetch_v1(topics_count: int) -> bytes:
    header = struct.pack(">hhih", 9, 1, 7, 1) + b"c"
    return header + struct.pack(">h", 1) + b"g" + struct.pack(">i", topics_count)


def test_null_where_the_schema_forbids_it_is_a_parse_error() -> None:
    # OffsetFetch v1: topics is not nullable (null means "all topics" from v2 on); kio alone accepts it
    with pytest.raises(UnparseableRequest, match="topics is null"):
        parse_request(_offset_fetch_v1(-1))
    _, body = parse_request(struct.pack(">hhih", 9, 2, 7, 1) + b"c" + struct.pack(">h", 1) + b"g"
                            + struct.pack(">i", -1))
    assert body.topics is None


@pytest.mark.parametrize("count", [0x7FFFFFFF, 1000, -2, -0x80000000])
def test_array_counts_beyond_the_bytes_received_are_refused(count: int) -> None:
    with pytest.raises(InvalidFrame, match="topics count"):
        walker(request_class(9, 1))(_offset_fetch_v1(count))


def test_string_lengths_and_varints_are_bounded() -> None:
    cls = request_class(3, 12)
    header = struct.pack(">hhih", 3, 12, 7, 1) + b"c" + b"\x00"
    with pytest.raises(InvalidFrame):  # topics: 1 entry, topic id, then a name of 2**31 bytes
        walker(cls)(header + b"\x02" + bytes(16) + b"\xff\xff\xff\xff\x07")
    with pytest.raises(InvalidFrame, match="varint"):
        walker(cls)(header + b"\xff" * 8)
    with pytest.raises(InvalidFrame, match="client_id"):  # header client id longer than the frame
        walker(cls)(struct.pack(">hhih", 3, 12, 7, 0x7FFF) + b"c")


def test_mutated_frames_either_parse_or_are_refused() -> None:
    """Every outcome is a parsed request or UnparseableRequest; a native abort would end the test run."""
    refused = parsed = 0
    for framed, _ in campaign(SEEDS, random.Random(7), 6000):
        try:
            parse_request(framed[4:])
            parsed += 1
        except UnparseableRequest:
            refused += 1
    assert parsed > 1000 and refused > 1000
