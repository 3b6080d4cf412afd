"""Client quotas on the request path: what a request records, the throttle it earns, and the mute that follows.

As Kafka (KIP-219): the response goes out at once carrying `throttle_time_ms`, and the broker then stops reading
from the connection until the throttle time has passed (Kafka mutes the channel; this server does not read the
next request). A Produce records its request size (bandwidth), a consumer's Fetch the response it would answer
(over quota: nothing, and the bytes taken back), every other client request its handler time as a share of one
thread (request_percentage), and a CreateTopics, CreatePartitions or DeleteTopics its partitions against
controller_mutation_rate (broker/quota/controller_mutation.py). Follower fetches and inter-broker APIs are exempt,
as Kafka's cluster actions. The largest throttle wins and is the one counted in its type's throttle-time.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from broker.quota.connection import ConnectionRateQuotas
from broker.quota.controller_mutation import MutationQuota
from broker.quota.entity import CONNECTION_CREATION_RATE, QuotaEntity
from broker.quota.manager import NANOS_TO_PERCENTAGE, ClientQuotaManager, QuotaSettings
from broker.quota.managers import QuotaManagers
from broker.quota.store import ClientQuotaStore
from common.clock import Clock

if TYPE_CHECKING:
    from broker.protocol.api import RequestContext

PRODUCE_KEY = 0
# Kafka's cluster actions (LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown, WriteTxnMarkers):
# answered without a request-quota throttle.
EXEMPT_APIS = frozenset({4, 5, 6, 7, 27})
# A follower's Fetch, and its OffsetForLeaderEpoch: our followers truncate by asking the leader's epoch end offset,
# where Kafka 3.9's truncate on the (exempt) Fetch itself, so neither counts against a client's request quota.
FOLLOWER_APIS = frozenset({1, 23})


class Throttle:
    """A request's throttle: which manager's quota won, for how long, and when the mute ends."""

    __slots__ = ("manager", "ms", "until")

    def __init__(self, manager: ClientQuotaManager, ms: int, until: float) -> None:
        self.manager, self.ms, self.until = manager, ms, until


def _client(ctx: RequestContext) -> tuple[str, str]:
    return ctx.principal.name, ctx.client_id or ""


class ClientQuotas:
    """The broker's quota managers and what the request path asks of them. `enabled` stays False (and the request
    path untouched) until a quota entity is configured."""

    def __init__(self, settings: QuotaSettings, clock: Clock) -> None:
        self.managers = QuotaManagers(settings, clock)
        self.connections = ConnectionRateQuotas(settings, clock)   # IP entities (KIP-612), apart from clients
        self._clock = clock
        self.enabled = False

    def apply(self, entity: QuotaEntity, values: dict[str, float]) -> None:
        if entity.ip is not None:   # Kafka's IpConfigHandler: the client quota managers never see IP entities
            self.connections.update(entity.ip, values.get(CONNECTION_CREATION_RATE))
            return
        self.managers.apply(entity, values)
        self.enabled = True

    def subscribe_to(self, store: ClientQuotaStore) -> None:
        """Take every entity `store` has, then each change. A change is applied on the loop's next turn: the
        AlterClientQuotas that made it is finished (recorded) first, as Kafka applies a quota once its change
        notification is processed, after answering."""
        for entity, values in store.all().items():
            self.apply(entity, values)
        loop = asyncio.get_running_loop()

        def later(entity: QuotaEntity, values: dict[str, float]) -> None:
            loop.call_soon(self.apply, entity, values)

        store.subscribe(later)

    def expire(self) -> None:
        """Drop sensors idle for an hour (the broker calls it every 30 s, as Kafka's Metrics expiration thread)."""
        for manager in self.managers.all():
            manager.expire()
        self.connections.expire()

    def produce_bandwidth(self, ctx: RequestContext) -> int:
        """Record a Produce request's size; its bandwidth throttle (ms, 0: none), kept on the context."""
        return self._bandwidth(self.managers.produce, ctx, ctx.request_size)

    def fetch_max_bytes(self, ctx: RequestContext, max_bytes: int) -> int:
        """A consumer's fetch size, bounded by what its quota window can take (getMaxValueInQuotaWindow)."""
        user, client_id = _client(ctx)
        return int(min(max_bytes, self.managers.fetch.max_value_in_window(user, client_id)))

    def fetch_bandwidth(self, ctx: RequestContext, nbytes: int) -> int:
        """Record what a consumer's Fetch would answer; when that throttles, the bytes are taken back (the answer
        will be empty) and the throttle time returned."""
        throttle = self._bandwidth(self.managers.fetch, ctx, nbytes)
        if throttle:
            self.managers.fetch.unrecord(*_client(ctx), nbytes)
        return throttle

    def _bandwidth(self, manager: ClientQuotaManager, ctx: RequestContext, value: float) -> int:
        ms = manager.record(*_client(ctx), value)
        if ms > ctx.throttle_ms:
            ctx.throttle_ms, ctx.throttled_by = ms, manager
        return ms

    def mutation_quota(self, ctx: RequestContext) -> MutationQuota | None:
        """A CreateTopics, CreatePartitions or DeleteTopics request's controller mutation quota (KIP-599); None
        while no quota was ever set."""
        if not self.enabled:
            return None
        return self.managers.controller_mutation.quota_for(*_client(ctx), ctx.api_key, ctx.api_version)

    def mutation_done(self, ctx: RequestContext, quota: MutationQuota | None) -> None:
        """The request's mutations are done: its controller-mutation throttle competes with the others."""
        ms = quota.throttle_time() if quota is not None else 0
        if ms > ctx.throttle_ms:
            ctx.throttle_ms, ctx.throttled_by = ms, self.managers.controller_mutation

    def finish(self, ctx: RequestContext, handler_ns: int, result: dict | None, exempt: bool) -> Throttle | None:
        """After the handler: record its time against the request quota (unless `exempt`), pick the larger
        throttle, count it, and write it into the response not yet encoded. None: no throttle."""
        request_ms = 0
        if not exempt:
            thread_ns = max(0, handler_ns - int(ctx.remote_s * 1e9))
            request_ms = self.managers.request.record(*_client(ctx), thread_ns * NANOS_TO_PERCENTAGE)
        if request_ms > ctx.throttle_ms:
            ctx.throttle_ms, ctx.throttled_by = request_ms, self.managers.request
        if ctx.throttle_ms <= 0 or ctx.throttled_by is None:
            return None
        manager: ClientQuotaManager = ctx.throttled_by
        manager.throttled(*_client(ctx), ctx.throttle_ms)
        if result is not None and "throttle_time" in result:
            result["throttle_time"] = ctx.throttle_ms
        return Throttle(manager, ctx.throttle_ms, self._clock.monotonic() + ctx.throttle_ms / 1000)


def skips_request_quota(api_key: int, body: Any) -> bool:
    """Whether a request is free of the request quota: a cluster action (a follower's Fetch is one), or a Produce
    with acks=0, which Kafka does not record either."""
    return (api_key in EXEMPT_APIS or (api_key in FOLLOWER_APIS and getattr(body, "replica_id", -1) >= 0)
            or (api_key == PRODUCE_KEY and getattr(body, "acks", -1) == 0))
