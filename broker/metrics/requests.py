"""Request metrics (``kafka.network:type=RequestMetrics,request=R``): per-API timers, request and error meters.

R is Kafka's ApiKeys name, plus FetchConsumer / FetchFollower, which a Fetch updates *in addition to* Fetch, as
Kafka's ``RequestChannel.updateRequestMetrics`` does.
"""

from __future__ import annotations

from typing import Any

from broker.errors import ErrorCode
from exporter.registry import Meter, Registry

API_NAMES = {
    0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 4: "LeaderAndIsr", 5: "StopReplica",
    6: "UpdateMetadata", 7: "ControlledShutdown", 8: "OffsetCommit", 9: "OffsetFetch", 10: "FindCoordinator",
    11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup", 15: "DescribeGroups", 16: "ListGroups",
    17: "SaslHandshake", 18: "ApiVersions", 19: "CreateTopics", 20: "DeleteTopics", 21: "DeleteRecords",
    22: "InitProducerId", 23: "OffsetForLeaderEpoch", 24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn",
    26: "EndTxn", 27: "WriteTxnMarkers", 28: "TxnOffsetCommit", 29: "DescribeAcls", 30: "CreateAcls",
    31: "DeleteAcls", 32: "DescribeConfigs", 33: "AlterConfigs", 34: "AlterReplicaLogDirs", 35: "DescribeLogDirs",
    36: "SaslAuthenticate", 37: "CreatePartitions", 38: "CreateDelegationToken", 39: "RenewDelegationToken",
    40: "ExpireDelegationToken", 41: "DescribeDelegationToken", 42: "DeleteGroups", 43: "ElectLeaders",
    44: "IncrementalAlterConfigs", 45: "AlterPartitionReassignments", 46: "ListPartitionReassignments",
    47: "OffsetDelete", 48: "DescribeClientQuotas", 49: "AlterClientQuotas", 50: "DescribeUserScramCredentials",
    51: "AlterUserScramCredentials", 52: "Vote", 53: "BeginQuorumEpoch", 54: "EndQuorumEpoch", 55: "DescribeQuorum",
    56: "AlterPartition", 57: "UpdateFeatures", 58: "Envelope", 59: "FetchSnapshot", 60: "DescribeCluster",
    61: "DescribeProducers", 62: "BrokerRegistration", 63: "BrokerHeartbeat", 64: "UnregisterBroker",
    65: "DescribeTransactions", 66: "ListTransactions", 67: "AllocateProducerIds", 68: "ConsumerGroupHeartbeat",
    69: "ConsumerGroupDescribe", 70: "ControllerRegistration", 71: "GetTelemetrySubscriptions", 72: "PushTelemetry",
    73: "AssignReplicasToDirs", 74: "ListClientMetricsResources", 75: "DescribeTopicPartitions",
}
FETCH = 1
REQUEST_TIMERS = ("RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ResponseQueueTimeMs",
                  "ResponseSendTimeMs", "TotalTimeMs")


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return f"UNKNOWN_{code}"


def count_errors(body: Any, out: dict[int, int]) -> None:
    """Add every ``error_code`` in a response body (dicts and lists of dicts) to `out`."""
    if type(body) is not dict:
        return
    ec = body.get("error_code")
    if ec is not None:
        out[ec] = out.get(ec, 0) + 1
    for v in body.values():
        if type(v) is list:
            for item in v:
                if type(item) is dict:
                    count_errors(item, out)


class RequestGroup:
    """The RequestMetrics of one request name: timers registered at once, meters on first use (as Kafka)."""

    __slots__ = ("name", "timers", "throttle", "requests", "errors", "_deprecated", "_reg")

    def __init__(self, reg: Registry, name: str) -> None:
        self._reg = reg
        self.name = name
        # Histograms in Kafka (RequestMetrics newHistogram), not Timers: no rate attributes
        self.timers = tuple(reg.histogram("kafka.network", "RequestMetrics", t, request=name) for t in REQUEST_TIMERS)
        # Kafka updates it for every request: the client-quota throttle of its answer, mostly 0.
        self.throttle = reg.histogram("kafka.network", "RequestMetrics", "ThrottleTimeMs", request=name)
        self.requests: dict[int, Meter] = {}
        self.errors: dict[int, Meter] = {}
        self._deprecated: dict[tuple[int, tuple[str, str]], Meter] = {}

    def deprecated(self, version: int, client: tuple[str, str]) -> None:
        """A request of a version Kafka 3.9 deprecates (KIP-724), by the client software that sent it."""
        m = self._deprecated.get((version, client))
        if m is None:
            m = self._deprecated[(version, client)] = self._reg.meter(
                "kafka.network", "RequestMetrics", "DeprecatedRequestsPerSec", request=self.name, version=version,
                clientSoftwareName=client[0], clientSoftwareVersion=client[1])
        m.mark()

    def record(self, version: int, queue: float, local: float, remote: float, respq: float, send: float,
               total: float, throttle: float = 0.0) -> None:
        tq, tl, tr, trq, ts, tt = self.timers
        tq.update(queue)
        tl.update(local)
        tr.update(remote)
        trq.update(respq)
        ts.update(send)
        tt.update(total)
        self.throttle.update(throttle)
        m = self.requests.get(version)
        if m is None:
            m = self.requests[version] = self._reg.meter("kafka.network", "RequestMetrics", "RequestsPerSec",
                                                         request=self.name, version=version)
        m.mark()

    def error(self, code: int, n: int = 1) -> None:
        m = self.errors.get(code)
        if m is None:
            m = self.errors[code] = self._reg.meter("kafka.network", "RequestMetrics", "ErrorsPerSec",
                                                    request=self.name, error=error_name(code))
        m.mark(n)
