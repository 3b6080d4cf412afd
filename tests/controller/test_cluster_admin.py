"""ElectLeaders / AlterPartitionReassignments / ListPartitionReassignments handlers over ZkMetadata."""

from __future__ import annotations

from types import SimpleNamespace as NS

from kio.schema.alter_partition_reassignments.v0.request import AlterPartitionReassignmentsRequest
from kio.schema.elect_leaders.v2.request import ElectLeadersRequest
from kio.schema.list_partition_reassignments.v0.request import ListPartitionReassignmentsRequest

from broker.errors import ErrorCode
from broker.protocol.api import RequestContext
from broker.protocol.codec import encode_with_kio
from broker.protocol.routes import handler_table
from tests.controller.test_zk_cluster import online, three


def ctx(node, key, version):
    return RequestContext(broker=NS(metadata=node, node_id=node.me.node_id, authorizer=None), api_key=key, api_version=version,
                          correlation_id=1, client_id="t", client_host="127.0.0.1")


def test_handlers_round_trip(cluster):
    handlers = handler_table()
    ctrl = three(cluster)
    ctrl.create_topic("h", 1, 2, {}, assignment={0: [1, 2]})
    online(cluster, ctrl, "h", 1)
    from kio.schema.elect_leaders.v2.request import TopicPartitions
    req = ElectLeadersRequest(election_type=0, topic_partitions=(TopicPartitions(topic="h", partitions=(0,)),))
    body = cluster.run(handlers[43].handle(ctx(ctrl, 43, 2), req))
    assert body["replica_election_results"][0]["partition_result"][0]["error_code"] == \
        ErrorCode.election_not_needed
    encode_with_kio(43, 2, 1, body)
    other = next(n for n in cluster.nodes.values() if n is not ctrl)
    body = cluster.run(handlers[43].handle(ctx(other, 43, 2), req))
    assert body["error_code"] == ErrorCode.not_controller

    from kio.schema.alter_partition_reassignments.v0.request import ReassignablePartition, ReassignableTopic
    alter = AlterPartitionReassignmentsRequest(topics=(ReassignableTopic(
        name="h", partitions=(ReassignablePartition(partition_index=0, replicas=(2, 3)),)),))
    body = cluster.run(handlers[45].handle(ctx(other, 45, 0), alter))
    assert body["responses"][0]["partitions"][0]["error_code"] == ErrorCode.none
    encode_with_kio(45, 0, 1, body)
    body = cluster.run(handlers[46].handle(ctx(other, 46, 0), ListPartitionReassignmentsRequest(topics=None)))
    part = body["topics"][0]["partitions"][0]
    assert part["replicas"] == [2, 3, 1] and part["adding_replicas"] == [3] and part["removing_replicas"] == [1]
    encode_with_kio(46, 0, 1, body)
    # cancel
    cancel = AlterPartitionReassignmentsRequest(topics=(ReassignableTopic(
        name="h", partitions=(ReassignablePartition(partition_index=0, replicas=None),)),))
    body = cluster.run(handlers[45].handle(ctx(other, 45, 0), cancel))
    assert body["responses"][0]["partitions"][0]["error_code"] == ErrorCode.none
    # Kafka (KIP-455) reverts to the full set minus the adding replicas
    assert set(other.assignment("h").partitions[0]) == {1, 2} and not other.reassignments()
