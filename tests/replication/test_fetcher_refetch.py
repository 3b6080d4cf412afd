"""The follower's fetch loop against a scripted leader on 127.0.0.1 (no cluster): after a fetch that brought
records it fetches again at once, carrying its new log end offset (Kafka's ReplicaFetcherThread does not back off
after progress; the leader's high watermark moves on that next fetch), and only backs off when nothing came."""

import asyncio
import contextlib
import struct
import time
from collections.abc import AsyncIterator

from broker.config import BrokerConfig
from broker.controller.state import PartitionState
from broker.errors import ErrorCode, KafkaError
from broker.log.records import Record, build_batch
from broker.protocol.codec import encode_response, parse_request
from broker.replication.fetcher import ReplicaFetcherManager
from broker.replication.replica_manager import ReplicaManager
from common.polling import wait_until_async
from tests.broker.test_replica_manager import _manager

BACKOFF_MS = 5_000  # replica.fetch.backoff.ms: a fetch loop that waited it would show


class ScriptedLeader:
    """Answers OffsetForLeaderEpoch with 'no epoch known', the first Fetch with one batch, the second is recorded
    (time and fetch offset) and left parked, as a leader with nothing new parks it."""

    def __init__(self, park_after: int = 1) -> None:
        self.fetches: list[tuple[float, int]] = []
        self.park_after = park_after
        self.second = asyncio.Event()   # set when the fetch after `park_after` ones arrives

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            size = struct.unpack(">i", await reader.readexactly(4))[0]
            header, body = parse_request(await reader.readexactly(size))
            if header.request_api_key == 23:
                out = encode_response(23, header.request_api_version, header.correlation_id, {
                    "throttle_time": 0, "topics": [{"topic": t.topic, "partitions": [
                        {"partition": p.partition, "error_code": 0, "leader_epoch": -1, "end_offset": -1}
                        for p in t.partitions]} for t in body.topics]})
            else:
                p = body.topics[0].partitions[0]
                self.fetches.append((time.monotonic(), p.fetch_offset))
                if len(self.fetches) > self.park_after:
                    self.second.set()
                    await asyncio.sleep(3600)  # parked: nothing new on the leader
                records = build_batch([Record(timestamp=1, key=b"k", value=b"v")], base_offset=p.fetch_offset)
                out = encode_response(1, 12, header.correlation_id, {
                    "throttle_time": 0, "error_code": 0, "session_id": 0, "responses": [
                        {"topic": "t", "partitions": [{
                            "partition_index": 0, "error_code": ErrorCode.none, "high_watermark": 0,
                            "last_stable_offset": 0, "log_start_offset": 0, "aborted_transactions": None,
                            "preferred_read_replica": -1, "records": records}]}]})
            writer.writelines([bytes(b) for b in out] if isinstance(out, list) else [out])
            await writer.drain()


async def test_the_follower_fetches_again_at_once_after_records_came(tmp_path):
    leader = ScriptedLeader()
    server = await asyncio.start_server(leader.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    config = BrokerConfig(broker_id=1, replica_fetch_backoff_ms=BACKOFF_MS, replica_fetch_wait_max_ms=500)
    fm = ReplicaFetcherManager(1, config, lambda b: ("127.0.0.1", port), ReplicaManager.on_follower_progress)
    rm, _, _ = _manager(tmp_path, fm)
    try:
        rm.on_partition_state("t", 0, PartitionState((2, 1), 2, 0, (2, 1), version=0))
        await asyncio.wait_for(leader.second.wait(), BACKOFF_MS / 1000 / 2)
        (t1, offset1), (t2, offset2) = leader.fetches[:2]
        assert (offset1, offset2) == (0, 1)  # the next fetch tells the leader the batch arrived
        assert rm.partitions[("t", 0)].log.log_end_offset == 1
        assert t2 - t1 < 1.0
    finally:
        fm.stop()
        server.close()


async def test_a_follower_append_failing_every_round_logs_within_a_budget(tmp_path, caplog):
    """A full disk on the follower fails the append of every fetched batch: 20 warnings a minute, not one per
    round (a cluster drill logged 374 lines in 20 s for two partitions)."""
    leader = ScriptedLeader(park_after=60)
    server = await asyncio.start_server(leader.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    config = BrokerConfig(broker_id=1, replica_fetch_backoff_ms=1, replica_fetch_wait_max_ms=500)
    fm = ReplicaFetcherManager(1, config, lambda b: ("127.0.0.1", port), ReplicaManager.on_follower_progress)
    rm, _, _ = _manager(tmp_path, fm)

    def disk_full(records):
        raise KafkaError(ErrorCode.kafka_storage_error, "no space left on device")

    try:
        rm.on_partition_state("t", 0, PartitionState((2, 1), 2, 0, (2, 1), version=0))
        rm.partitions[("t", 0)].log.append_as_follower = disk_full
        with caplog.at_level("WARNING", logger="broker.replication"):
            await asyncio.wait_for(leader.second.wait(), 30)
        assert {offset for _, offset in leader.fetches} == {0}   # nothing appended, the same batch each round
        failures = [r for r in caplog.records if "follower append failed" in r.getMessage()]
        assert len(failures) == 20
    finally:
        fm.stop()
        server.close()


async def test_the_replication_client_and_the_broker_disable_nagle(tmp_path):
    """TCP_NODELAY on both ends of a replication connection: a follower's small Fetch must not wait for the ACK
    of the previous segment (Nagle), nor the leader's answer (Kafka sets it on every broker socket)."""
    import socket

    from broker.replication.client import BrokerConnection
    from tests.broker.inproc import inproc_broker

    async with inproc_broker(tmp_path) as (broker, port):
        conn = BrokerConnection("127.0.0.1", port, "replica-fetcher-9")
        await conn.connect(timeout_s=5)
        try:
            await conn.request(18, 3, {"client_software_name": "t", "client_software_version": "1"}, 5)
            client_sock = conn.socket()
            assert client_sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            served = [c.sock for c in broker.server._connections]
            assert served and all(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for s in served)
        finally:
            conn.close()


@contextlib.asynccontextmanager
async def _follower_of_inproc_leader(tmp_path, partitions: int) -> AsyncIterator[tuple]:
    """A standalone broker of ours in this process leads topic "t"; broker 1 is set up to follow it (100 ms long
    polls). Yields (leader, the follower's ReplicaManager, follow): `follow(i, epoch_ahead=0)` makes broker 1 follow
    partition i, at the leader's epoch plus `epoch_ahead`."""
    from tests.broker.inproc import inproc_broker

    async with inproc_broker(tmp_path / "leader") as (leader, port):
        leader.create_topic("t", partitions, 1)
        config = BrokerConfig(broker_id=1, replica_fetch_backoff_ms=BACKOFF_MS, replica_fetch_wait_max_ms=100)
        fm = ReplicaFetcherManager(1, config, lambda b: ("127.0.0.1", port), ReplicaManager.on_follower_progress)
        (tmp_path / "follower").mkdir()
        rm, _, store = _manager(tmp_path / "follower", fm)
        store.topics["t"] = store.topics["t"].__class__("t", None, partitions)

        def follow(i: int, epoch_ahead: int = 0) -> None:
            epoch = leader.replicas.partitions[("t", i)].state.leader_epoch + epoch_ahead
            rm.on_partition_state("t", i, PartitionState((leader.node_id, 1), leader.node_id, epoch,
                                                         (leader.node_id, 1), version=0))
        try:
            yield leader, rm, follow
        finally:
            fm.stop()


def _append(leader, partition: int, timestamp: int) -> None:
    leader.replicas.append("t", partition, build_batch([Record(timestamp=timestamp, key=b"k", value=b"v")]), 1)


async def test_the_follower_replicates_through_an_incremental_fetch_session(tmp_path):
    """Against a real leader (a standalone broker of ours in this process): the first Fetch opens a session
    (KIP-227), later ones are incremental, an empty answer is followed by the next fetch without a backoff, and
    appends on the leader still reach the follower at once."""
    async with _follower_of_inproc_leader(tmp_path, 2) as (leader, rm, follow):
        for i in (0, 1):
            _append(leader, i, 1)
            follow(i)
        logs = [rm.partitions[("t", i)].log for i in (0, 1)]
        await wait_until_async(lambda: [g.log_end_offset for g in logs] == [1, 1], 5)
        fetcher = rm.fetchers.active()[0]
        assert fetcher.session.session_id != 0 and fetcher.session.epoch >= 1
        # empty incremental answers (the 100 ms long poll ran out, nothing new) are fetched past at once
        epoch_now = fetcher.session.epoch
        await wait_until_async(lambda: fetcher.session.epoch >= epoch_now + 3, BACKOFF_MS / 1000 / 2)
        started = time.monotonic()
        _append(leader, 1, 2)
        await wait_until_async(lambda: logs[1].log_end_offset == 2, 5)
        assert time.monotonic() - started < BACKOFF_MS / 1000 / 2 and logs[0].log_end_offset == 1
        session = leader.fetch_sessions.get(fetcher.session.session_id)
        assert session is not None and len(session.partitions) == 2  # both stay in the leader's session


async def test_the_follower_chains_its_fetches_inside_the_connection_without_resuming_its_task(tmp_path):
    """Each answer is appended and the next Fetch sent from the connection's data_received (Kafka's
    ReplicaFetcherThread loops in its own thread): while batches replicate, the fetcher's task is not resumed."""
    async with _follower_of_inproc_leader(tmp_path, 1) as (leader, rm, follow):
        follow(0)
        fetcher = rm.fetchers.active()[0]
        await wait_until_async(lambda: fetcher.session.epoch >= 2, 5)   # truncated, fetching in a session
        resumed = []
        chained = fetcher._fetch
        fetcher._fetch = lambda conn: resumed.append(1) or chained(conn)   # the task's next round, if any
        follower_log = rm.partitions[("t", 0)].log
        for n in range(1, 6):
            _append(leader, 0, n)
            await wait_until_async(lambda n=n: follower_log.log_end_offset == n, 5)
        assert resumed == []


async def test_a_partition_that_cannot_truncate_does_not_hold_up_the_others(tmp_path):
    """OffsetForLeaderEpoch fails for one partition (the leader does not know the epoch it is followed with): the
    others are fetched meanwhile, without the backoff, and the failing one is retried between fetches."""
    async with _follower_of_inproc_leader(tmp_path, 2) as (leader, rm, follow):
        follow(0)
        follow(1, epoch_ahead=5)   # an epoch the leader has not reached
        fetcher = rm.fetchers.active()[0]
        started = time.monotonic()
        for n in range(1, 4):
            _append(leader, 0, n)
            await wait_until_async(lambda n=n: rm.partitions[("t", 0)].log.log_end_offset == n, 5)
        assert time.monotonic() - started < BACKOFF_MS / 1000 / 2
        assert not fetcher.targets[("t", 1)].truncated
