"""FileRegion: the Fetch path's handle on segment bytes, sent later with sendfile."""

import os
import socket

from broker.config import LogConfig
from broker.log.log import PartitionLog
from broker.log.records import Record, build_batch
from common.clock import ManualClock


def test_region_outlives_deletion_of_its_segment(tmp_path):
    plog = PartitionLog("t", 0, tmp_path / "t-0", LogConfig(), ManualClock())
    batch = build_batch([Record(timestamp=1, key=b"k", value=b"v" * 100)])
    plog.append_as_leader(batch, 0)
    region = plog.read_region(0, 1 << 20)
    assert region is not None and len(region) == len(batch)
    plog.delete()  # closes and unlinks the segment while the region is still to be sent
    a, b = socket.socketpair()
    try:
        assert os.sendfile(a.fileno(), region.fd, region.position, region.length) == len(batch)
        received = b.recv(len(batch))
        assert received[16:] == batch[16:]  # base offset and leader epoch patched, the rest as produced
    finally:
        region.release()
        a.close()
        b.close()
    assert region.fd == -1


def test_region_respects_max_bytes_and_high_watermark(tmp_path):
    plog = PartitionLog("t", 0, tmp_path / "t-0", LogConfig(), ManualClock())
    sizes = []
    for i in range(3):
        b = build_batch([Record(timestamp=1, value=bytes([i]) * 200)])
        sizes.append(len(b))
        plog.append_as_leader(b, 0)
    assert len(plog.read_region(0, 1)) == sizes[0]  # KIP-74: the first batch even if over max_bytes
    assert len(plog.read_region(0, sizes[0] + sizes[1])) == sizes[0] + sizes[1]
    assert len(plog.read_region(0, 1 << 20, max_offset=2)) == sizes[0] + sizes[1]
    assert plog.read_region(3, 1 << 20) is None
    assert plog.read(1, 1 << 20) == plog.read_region(1, 1 << 20).read_bytes()
