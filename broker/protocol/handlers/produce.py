"""Produce (0) and InitProducerId (22), with a transactional id through the transaction coordinator."""

import logging
from time import perf_counter

from broker.coordinator.transaction.broker_io import verify_txn_partition
from broker.errors import ErrorCode, KafkaError
from broker.log.records import HEADER_SIZE, read_header
from broker.metadata import INTERNAL_TOPICS
from broker.protocol import authz
from broker.protocol.api import ApiSpec, Completion, RequestContext
from broker.protocol.codec import ms
from broker.replication.replica_manager import ProducePartitionStatus
from broker.security.operations import IDEMPOTENT, TRANSACTIONAL

log = logging.getLogger(__name__)

# Kafka's AdminUtils.ADMIN_CLIENT_ID: the one client id allowed to append to the internal topics
# (ReplicaManager's internalTopicsAllowed).
ADMIN_CLIENT_ID = "__admin_client"


async def handle_produce(ctx: RequestContext, req) -> dict | None:
    broker = ctx.broker
    metrics = broker.metrics
    acks = req.acks
    topics = []
    replicating = []  # (response entry, its ProducePartitionStatus) for acks=all
    denied = authz.resource_errors(ctx, 0, authz.TOPIC, (t.name for t in req.topic_data))
    tid = req.transactional_id
    txn_denied = authz.request_error(ctx, 0, {TRANSACTIONAL}, {authz.TRANSACTIONAL_ID: tid}) \
        if tid is not None else ErrorCode.none
    accepted = []   # (topic, partition data, response entry): checked, to be appended
    for t in req.topic_data:
        parts = []
        for p in t.partition_data:
            entry = {"index": p.index, "error_code": ErrorCode.none, "base_offset": -1,
                     "log_append_time": -1, "log_start_offset": -1}
            parts.append(entry)
            try:
                if txn_denied:
                    raise KafkaError(txn_denied)
                authz.raise_if_denied(denied, t.name)
                if acks not in (-1, 0, 1):
                    raise KafkaError(ErrorCode.invalid_required_acks)
                if not p.records:
                    raise KafkaError(ErrorCode.invalid_record)
                if tid is not None:
                    await _verify_transactional(broker, tid, t.name, p.index, p.records)
                if t.name in INTERNAL_TOPICS and ctx.client_id != ADMIN_CLIENT_ID:
                    # Else any client could forge offset commits or transaction states that the coordinators load.
                    raise KafkaError(ErrorCode.invalid_topic_exception, f"Cannot append to internal topic {t.name}")
                accepted.append((t.name, p, entry))
            except KafkaError as e:
                _failed(metrics, entry, t.name, p, e)
        topics.append({"name": t.name, "partition_responses": parts})
    # Appended together: a follower's parked fetch is completed once, with every partition appended.
    with broker.replicas.appending_together():
        for topic, p, entry in accepted:
            try:
                part, result = broker.replicas.append(topic, p.index, p.records, acks)
                entry.update(base_offset=result.base_offset, log_append_time=result.log_append_time_ms,
                             log_start_offset=result.log_start_offset)
                if acks == -1:
                    replicating.append((entry, ProducePartitionStatus(part, result.last_offset, part.leadership)))
                if metrics is not None:
                    metrics.produced(topic, len(p.records), 0 if result.duplicate else result.record_count,
                                     result.converted)
            except KafkaError as e:
                _failed(metrics, entry, topic, p, e)
    answer = {"responses": topics, "throttle_time": 0}
    if broker.quotas.enabled:   # the request's bytes against the client's producer_byte_rate (Kafka: after append)
        answer["throttle_time"] = broker.quotas.produce_bandwidth(ctx)
    if replicating and await _await_replication(ctx, replicating, ms(req.timeout) / 1000, answer):
        return None   # answered inside the notify that decided it
    if acks == 0:
        return None
    return answer


async def _await_replication(ctx: RequestContext, replicating: list, timeout_s: float, answer: dict) -> bool:
    """acks=all: what is replicated already (an ISR of one) is decided at once, without a trip through the event
    loop behind other requests' work, as Kafka's DelayedProduce completes before it watches; the rest park in the
    produce purgatory, up to the request's timeout. The acknowledgement is then built inside the notify that
    decides the last partition, in the same batch as the consumers' answers completed by the same move (True).
    False: the entries hold the outcomes, for the handler to return."""
    replicas, completion = ctx.broker.replicas, Completion(ctx)
    statuses = [status for _, status in replicating]
    parked = 0.0   # when the request first parked; 0: it never did (no purgatory, no remote time)

    def park() -> None:
        nonlocal parked
        parked = perf_counter()

    def outcomes() -> dict:
        for entry, status in replicating:
            entry["error_code"] = status.outcome
        return answer

    def acknowledge() -> None:
        ctx.remote_s += perf_counter() - parked
        completion.give(outcomes)

    if await replicas.await_replication(statuses, ctx.broker.clock.monotonic() + timeout_s,
                                        acknowledge if completion.possible else None, park):
        return completion.settled()
    if parked:
        ctx.remote_s += perf_counter() - parked
    outcomes()
    return False


def _failed(metrics, entry: dict, topic: str, p, e: KafkaError) -> None:
    entry["error_code"] = e.code
    entry["error_message"] = e.message
    if metrics is not None:
        metrics.produce_failed(topic, e.code, len(p.records or b""))


async def _verify_transactional(broker, tid: str, topic: str, partition: int, records) -> None:
    """KIP-890 part 1: the first transactional batch of a producer on a partition must belong to a transaction
    that added this partition, else INVALID_TXN_STATE (a late or hanging write). Asked of the transaction
    coordinator, here or on another broker (AddPartitionsToTxn v4 verifyOnly)."""
    if len(records) < HEADER_SIZE:
        return
    h = read_header(bytes(records[:HEADER_SIZE]))
    if not h.is_transactional or h.producer_id < 0:
        return
    if broker.replicas.leader_log(topic, partition).producer_state.in_transaction(h.producer_id):
        return  # already in this transaction here
    error = await verify_txn_partition(broker, tid, h.producer_id, h.producer_epoch, topic, partition)
    if error in (ErrorCode.not_coordinator, ErrorCode.coordinator_load_in_progress,
                 ErrorCode.coordinator_not_available, ErrorCode.not_enough_replicas):
        raise KafkaError(ErrorCode.not_enough_replicas, f"could not verify the transaction of {tid}: "
                         f"{error.name}")  # retriable, as Kafka's AddPartitionsToTxnManager answers
    if error != ErrorCode.none:
        # Kafka's AddPartitionsToTxnManager answers a fenced producer INVALID_PRODUCER_EPOCH, the rest
        # INVALID_TXN_STATE.
        fenced = error in (ErrorCode.producer_fenced, ErrorCode.invalid_producer_epoch)
        raise KafkaError(ErrorCode.invalid_producer_epoch if fenced else ErrorCode.invalid_txn_state,
                         f"{topic}-{partition} is not in an ongoing transaction of {tid}")


async def handle_init_producer_id(ctx: RequestContext, req) -> dict:
    denied = authz.request_error(ctx, 22, {IDEMPOTENT if req.transactional_id is None else TRANSACTIONAL},
                                 {authz.TRANSACTIONAL_ID: req.transactional_id})
    if denied:
        return {"throttle_time": 0, "error_code": denied, "producer_id": -1, "producer_epoch": -1}
    pid, epoch = getattr(req, "producer_id", -1), getattr(req, "producer_epoch", -1)
    if req.transactional_id is not None:
        try:
            pid, epoch = await ctx.broker.txn_coordinator.init_producer_id(
                req.transactional_id, ms(req.transaction_timeout), pid, epoch)
        except KafkaError as e:
            return {"throttle_time": 0, "error_code": e.code, "producer_id": -1, "producer_epoch": -1}
        return {"throttle_time": 0, "error_code": ErrorCode.none, "producer_id": pid, "producer_epoch": epoch}
    if pid >= 0 and epoch >= 0:
        # KIP-360 epoch bump for an existing idempotent producer.
        if epoch >= 32767:
            pid, epoch = ctx.broker.producer_ids.allocate(), 0
        else:
            epoch += 1
    else:
        pid, epoch = ctx.broker.producer_ids.allocate(), 0
    return {"throttle_time": 0, "error_code": ErrorCode.none, "producer_id": pid, "producer_epoch": epoch}


APIS = (
    # Served from v3 (KIP-896); ApiVersions still advertises v0, as Kafka 4.0 (api_versions.py).
    ApiSpec(0, 3, 10, handle_produce),
    ApiSpec(22, 0, 4, handle_init_producer_id),
)
