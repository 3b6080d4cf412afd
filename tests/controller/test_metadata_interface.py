"""The standalone MetadataStore answers the cluster-only calls as a one-broker cluster would, so nothing else
has to ask which mode it runs in; the handlers give the same answers through it."""

from __future__ import annotations

from types import SimpleNamespace as NS

from kio.schema.alter_partition_reassignments.v0.request import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from kio.schema.elect_leaders.v2.request import ElectLeadersRequest, TopicPartitions
from kio.schema.list_partition_reassignments.v0.request import ListPartitionReassignmentsRequest

from broker.broker import ProducerIdManager
from broker.controller.store import ZkMetadata
from broker.errors import ErrorCode
from broker.metadata import BrokerInfo, LocalMetadata
from broker.protocol.api import RequestContext
from broker.protocol.routes import handler_table


def _local(tmp_path):
    return LocalMetadata(tmp_path, BrokerInfo(0, "127.0.0.1", 9092))


def test_mode_is_told_by_the_interface(tmp_path):
    assert _local(tmp_path).clustered is False
    assert ZkMetadata.clustered is True


async def test_standalone_cluster_calls(tmp_path):
    md = _local(tmp_path)
    md.create_topic("t", 2, 1, {})
    assert await md.elect_leaders(0, [("t", 1), ("nope", 0)], 1) == {
        ("t", 1): (ErrorCode.election_not_needed, None), ("nope", 0): (ErrorCode.unknown_topic_or_partition, None)}
    assert await md.elect_leaders(1, None, 1) == {}
    # as a single-broker cluster: onto this broker is done at once, anywhere else is not alive
    assert md.alter_reassignments({("t", 0): (0,), ("t", 1): None, ("nope", 0): (0,)}, False) == {
        ("t", 0): (ErrorCode.none, None), ("t", 1): (ErrorCode.no_reassignment_in_progress, None),
        ("nope", 0): (ErrorCode.unknown_topic_or_partition, None)}
    assert md.alter_reassignments({("t", 0): (0, 1)})[("t", 0)] == (
        ErrorCode.invalid_replica_assignment,
        "Replica assignment has brokers that are not alive. Replica list: 0, 1, live broker list: 0")
    assert md.reassignments() == {}
    assert await md.controlled_shutdown(1) is None
    md.set_leader_election_hook(lambda ms, unclean: None)


def test_standalone_producer_ids_never_repeat_across_restarts(tmp_path):
    ids = ProducerIdManager(_local(tmp_path).claim_producer_id_block)
    first = [ids.allocate() for _ in range(1001)]
    assert first == list(range(1001))
    assert (tmp_path / "__producer_id_block").read_text() == "2000"  # the end of the last block claimed
    again = ProducerIdManager(_local(tmp_path).claim_producer_id_block)  # restart
    assert again.allocate() == 2000


async def test_cluster_admin_handlers_over_standalone_metadata(tmp_path):
    md = _local(tmp_path)
    md.create_topic("h", 1, 1, {})
    handlers = handler_table()

    def ctx(key, version):
        return RequestContext(broker=NS(metadata=md, node_id=0, authorizer=None), api_key=key, api_version=version,
                              correlation_id=1, client_id="t", client_host="127.0.0.1")

    req = ElectLeadersRequest(election_type=0, topic_partitions=(TopicPartitions(topic="h", partitions=(0,)),))
    body = await handlers[43].handle(ctx(43, 2), req)
    assert body["error_code"] == ErrorCode.none
    assert body["replica_election_results"][0]["partition_result"][0]["error_code"] == ErrorCode.election_not_needed
    alter = AlterPartitionReassignmentsRequest(topics=(ReassignableTopic(
        name="h", partitions=(ReassignablePartition(partition_index=0, replicas=(0,)),)),))
    body = await handlers[45].handle(ctx(45, 0), alter)
    assert body["responses"][0]["partitions"][0]["error_code"] == ErrorCode.none   # already there
    elsewhere = AlterPartitionReassignmentsRequest(topics=(ReassignableTopic(
        name="h", partitions=(ReassignablePartition(partition_index=0, replicas=(1,)),)),))
    body = await handlers[45].handle(ctx(45, 0), elsewhere)
    assert body["responses"][0]["partitions"][0]["error_code"] == ErrorCode.invalid_replica_assignment
    body = await handlers[46].handle(ctx(46, 0), ListPartitionReassignmentsRequest(topics=None))
    assert body["topics"] == []
