"""Transaction APIs over the TransactionCoordinator (KIP-98): AddPartitionsToTxn (24), AddOffsetsToTxn (25),
EndTxn (26), WriteTxnMarkers (27), TxnOffsetCommit (28), DescribeProducers (61), DescribeTransactions (65),
ListTransactions (66).
InitProducerId with a transactional id is in produce.py, FindCoordinator key_type 1 in groups.py.

Authorization follows Kafka's KafkaApis: TRANSACTIONAL_ID WRITE for the producer's requests (DESCRIBE for
Describe/ListTransactions), TOPIC WRITE per partition added, GROUP READ for the offsets, CLUSTER_ACTION for
WriteTxnMarkers (sent by brokers only).
"""

from __future__ import annotations

from broker.coordinator.group_metadata_manager import OFFSET_METADATA_MAX_BYTES
from broker.coordinator.transaction.broker_io import write_local_marker, write_txn_offsets
from broker.errors import ErrorCode, KafkaError
from broker.metadata import OFFSETS_TOPIC
from broker.protocol import authz
from broker.protocol.api import ApiSpec, RequestContext
from broker.protocol.codec import ms


def _txn_denied(ctx: RequestContext, api: int, transactional_id: str) -> ErrorCode:
    return authz.request_error(ctx, api, names={authz.TRANSACTIONAL_ID: transactional_id})


def _partition_errors(ctx: RequestContext, api: int, topics: list[tuple[str, list[int]]]
                      ) -> dict[tuple[str, int], ErrorCode]:
    """Per partition: TOPIC_AUTHORIZATION_FAILED or UNKNOWN_TOPIC_OR_PARTITION; the others pass."""
    denied = authz.resource_errors(ctx, api, authz.TOPIC, (t for t, _ in topics))
    out = {}
    for topic, parts in topics:
        info = ctx.broker.metadata.topic(topic)
        for p in parts:
            if topic in denied:
                out[(topic, p)] = denied[topic]
            elif info is None or not 0 <= p < info.partitions:
                out[(topic, p)] = ErrorCode.unknown_topic_or_partition
    return out


async def _add_partitions(ctx: RequestContext, tid: str, pid: int, epoch: int, topics: list[tuple[str, list[int]]],
                          verify_only: bool) -> list[dict]:
    """One transaction's AddPartitionsToTxn: per-partition results; a partition in error fails the others with
    OPERATION_NOT_ATTEMPTED, as Kafka does."""
    wanted = {(t, p) for t, ps in topics for p in ps}
    code = _txn_denied(ctx, 24, tid)
    errors: dict[tuple[str, int], ErrorCode] = {}
    if code:
        errors = dict.fromkeys(wanted, code)
    else:
        errors = _partition_errors(ctx, 24, topics)
        if errors:
            errors = {tp: errors.get(tp, ErrorCode.operation_not_attempted) for tp in wanted}
        elif verify_only:
            error = ctx.broker.txn_coordinator.verify_partitions(tid, pid, epoch, wanted)
            errors = dict.fromkeys(wanted, error)
        else:
            try:
                await ctx.broker.txn_coordinator.add_partitions(tid, pid, epoch, wanted)
                errors = dict.fromkeys(wanted, ErrorCode.none)
            except KafkaError as e:
                errors = dict.fromkeys(wanted, e.code)
    return [{"name": t, "results_by_partition": [{"partition_index": p, "partition_error_code": errors[(t, p)]}
                                                 for p in ps]} for t, ps in topics]


async def handle_add_partitions_to_txn(ctx: RequestContext, req) -> dict:
    if ctx.api_version <= 3:
        topics = [(t.name, list(t.partitions)) for t in req.v3_and_below_topics]
        results = await _add_partitions(ctx, req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                                        req.v3_and_below_producer_epoch, topics, verify_only=False)
        return {"throttle_time": 0, "results_by_topic_v3_and_below": results}
    # v4+ (KIP-890): batched, sent by brokers to verify a partition is in the transaction; Kafka requires
    # CLUSTER_ACTION, the check WriteTxnMarkers (27) has in the table.
    if code := authz.request_error(ctx, 27):
        return {"throttle_time": 0, "error_code": code, "results_by_transaction": []}
    out = []
    for txn in req.transactions:
        topics = [(t.name, list(t.partitions)) for t in txn.topics]
        results = await _add_partitions(ctx, txn.transactional_id, txn.producer_id, txn.producer_epoch, topics,
                                        txn.verify_only)
        out.append({"transactional_id": txn.transactional_id, "topic_results": results})
    return {"throttle_time": 0, "error_code": ErrorCode.none, "results_by_transaction": out}


async def handle_add_offsets_to_txn(ctx: RequestContext, req) -> dict:
    """The group's `__consumer_offsets` partition joins the transaction (its marker ends the offsets)."""
    code = _txn_denied(ctx, 25, req.transactional_id) or \
        authz.request_error(ctx, 25, names={authz.GROUP: req.group_id})
    if not code:
        partition = ctx.broker.group_coordinator.partition_for(req.group_id)
        try:
            await ctx.broker.txn_coordinator.add_partitions(req.transactional_id, req.producer_id,
                                                            req.producer_epoch, {(OFFSETS_TOPIC, partition)})
        except KafkaError as e:
            code = e.code
    return {"throttle_time": 0, "error_code": code}


async def handle_end_txn(ctx: RequestContext, req) -> dict:
    code = _txn_denied(ctx, 26, req.transactional_id)
    if not code:
        try:
            await ctx.broker.txn_coordinator.end_txn(req.transactional_id, req.producer_id, req.producer_epoch,
                                                     bool(req.committed))
        except KafkaError as e:
            code = e.code
    return {"throttle_time": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1}


async def handle_write_txn_markers(ctx: RequestContext, req) -> dict:
    """Markers from a transaction coordinator to the partitions this broker leads."""
    denied = authz.request_error(ctx, 27)
    markers = []
    for m in req.markers:
        topics = []
        for t in m.topics:
            parts = []
            for p in t.partition_indexes:
                code = denied or await write_local_marker(ctx.broker, t.name, p, m.producer_id, m.producer_epoch,
                                                          m.coordinator_epoch, bool(m.transaction_result))
                parts.append({"partition_index": p, "error_code": code})
            topics.append({"name": t.name, "partitions": parts})
        markers.append({"producer_id": m.producer_id, "topics": topics})
    return {"markers": markers}


async def handle_txn_offset_commit(ctx: RequestContext, req) -> dict:
    """Offsets written as transactional records of the producer, visible once its COMMIT marker is written."""
    broker = ctx.broker
    topics = [(t.name, [p.partition_index for p in t.partitions]) for t in req.topics]
    code = _txn_denied(ctx, 28, req.transactional_id) or \
        authz.request_error(ctx, 28, names={authz.GROUP: req.group_id})
    if not code:
        code = broker.group_coordinator.txn_offset_commit_error(
            req.group_id, getattr(req, "generation_id", -1), getattr(req, "member_id", ""),
            getattr(req, "group_instance_id", None)) or ErrorCode.none
    errors = {} if code else _partition_errors(ctx, 28, topics)
    if not code:
        ok = [(t.name, p.partition_index, p.committed_offset, getattr(p, "committed_leader_epoch", -1),
               p.committed_metadata) for t in req.topics for p in t.partitions
              if (t.name, p.partition_index) not in errors]
        for t_, p_, _, _, meta in ok:
            if len((meta or "").encode()) > OFFSET_METADATA_MAX_BYTES:
                errors[(t_, p_)] = ErrorCode.offset_metadata_too_large
        ok = [o for o in ok if (o[0], o[1]) not in errors]
        if ok:
            code = await write_txn_offsets(broker, req.group_id, req.producer_id, req.producer_epoch, ok)
    return {"throttle_time": 0, "topics": [
        {"name": t, "partitions": [{"partition_index": p, "error_code": code or errors.get((t, p), ErrorCode.none)}
                                   for p in ps]} for t, ps in topics]}


def _describe(ctx: RequestContext, tid: str, denied: dict[str, ErrorCode]) -> dict:
    entry = {"error_code": ErrorCode.none, "transactional_id": tid, "transaction_state": "",
             "transaction_timeout": 0, "transaction_start_time": -1, "producer_id": -1, "producer_epoch": -1,
             "topics": []}
    if tid in denied:
        return {**entry, "error_code": denied[tid]}
    try:
        md = ctx.broker.txn_coordinator.describe(tid)
    except KafkaError as e:
        return {**entry, "error_code": e.code}
    by_topic: dict[str, list[int]] = {}
    for t, p in sorted(md.partitions):
        by_topic.setdefault(t, []).append(p)
    return {**entry, "transaction_state": md.state.kafka_name, "transaction_timeout": md.timeout_ms,
            "transaction_start_time": md.start_ms, "producer_id": md.producer_id,
            "producer_epoch": md.producer_epoch,
            "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]}


async def handle_describe_transactions(ctx: RequestContext, req) -> dict:
    ids = list(req.transactional_ids)
    denied = authz.resource_errors(ctx, 65, authz.TRANSACTIONAL_ID, ids)
    return {"throttle_time": 0, "transaction_states": [_describe(ctx, tid, denied) for tid in ids]}


async def handle_list_transactions(ctx: RequestContext, req) -> dict:
    known = {"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
             "PrepareEpochFence"}
    states = set(req.state_filters)
    found = ctx.broker.txn_coordinator.list_transactions(states & known, set(req.producer_id_filters),
                                                         ms(getattr(req, "duration_filter", -1)))
    if states and not states & known:
        found = []
    names = set(authz.visible(ctx, 66, authz.TRANSACTIONAL_ID, (md.transactional_id for md in found)))
    return {"throttle_time": 0, "error_code": ErrorCode.none, "unknown_state_filters": sorted(states - known),
            "transaction_states": [{"transactional_id": md.transactional_id, "producer_id": md.producer_id,
                                    "transaction_state": md.state.kafka_name}
                                   for md in found if md.transactional_id in names]}


async def handle_describe_producers(ctx: RequestContext, req) -> dict:
    """The producers with state on each partition this broker leads (Kafka's ReplicaManager.activeProducerState;
    kafka-transactions.sh describe-producers and find-hanging read it)."""
    denied = authz.resource_errors(ctx, 61, authz.TOPIC, (t.name for t in req.topics))
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partition_indexes:
            entry: dict = {"partition_index": p, "error_code": ErrorCode.none, "error_message": None,
                           "active_producers": []}
            try:
                authz.raise_if_denied(denied, t.name)
                plog = ctx.broker.replicas.leader_log(t.name, p)
                with plog.lock:
                    entry["active_producers"] = [
                        {"producer_id": e.producer_id, "producer_epoch": e.epoch, "last_sequence": e.last_seq,
                         "last_timestamp": e.last_timestamp, "coordinator_epoch": e.coordinator_epoch,
                         "current_txn_start_offset": e.current_txn_first_offset}
                        for e in plog.producer_state.producers.values()]
            except KafkaError as e:
                entry.update(error_code=e.code, error_message=e.message)
            parts.append(entry)
        topics.append({"name": t.name, "partitions": parts})
    return {"throttle_time": 0, "topics": topics}


APIS = (
    ApiSpec(24, 0, 5, handle_add_partitions_to_txn),
    ApiSpec(25, 0, 4, handle_add_offsets_to_txn),
    ApiSpec(26, 0, 4, handle_end_txn),  # v5 is transaction version 2 (KIP-890 part 2): not offered
    ApiSpec(27, 1, 1, handle_write_txn_markers),
    ApiSpec(28, 0, 4, handle_txn_offset_commit),  # v5: transaction version 2
    ApiSpec(61, 0, 0, handle_describe_producers),
    ApiSpec(65, 0, 0, handle_describe_transactions),
    ApiSpec(66, 0, 1, handle_list_transactions),  # v2's transactional id pattern (Kafka 4.1) not offered
)
