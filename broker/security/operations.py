"""Which ACL each Kafka API checks, and the error a denial answers, as data (from KafkaApis / AuthHelper).

A `Check` names the resource type and operation, the error code, and how a denial shows:
- REQUEST: the whole request fails with the error;
- PER_RESOURCE: each denied topic/group/... carries the error, the rest proceeds;
- FILTER: denied items are left out silently (Metadata for all topics, ListGroups, OffsetFetch of all
  partitions): this is how a broker "leaks nothing".
`when` limits a check to a case the handler knows (e.g. FOLLOWER: replica_id >= 0). `otherwise` is tried
when the check is denied (CreateTopics: CREATE on the cluster, else CREATE on each topic); a denial of the
whole chain shows with the last check's error and scope.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from broker.security.acl import CLUSTER_NAME, AclOperation, KafkaPrincipal, ResourceType
from broker.security.authorizer import AclAuthorizer

TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
CLUSTER_AUTHORIZATION_FAILED = 31
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
SECURITY_DISABLED = 54   # DescribeAcls/CreateAcls/DeleteAcls when no authorizer is configured

# Conditions a handler sets from the request (`when`).
FOLLOWER = "follower"                   # Fetch / OffsetForLeaderEpoch from a replica (replica_id >= 0)
CONSUMER = "consumer"                   # the same APIs from a client (replica_id < 0)
TRANSACTIONAL = "transactional"         # Produce with transactional records; InitProducerId with an id
IDEMPOTENT = "idempotent"               # InitProducerId without a transactional id
ALL_TOPICS = "all_topics"               # Metadata with topics null; OffsetFetch with topics null
LISTED_TOPICS = "listed_topics"         # the request names its topics
AUTO_CREATE = "auto_create"             # Metadata allow_auto_topic_creation and the topic is missing
GROUP_KEY = "group_key"                 # FindCoordinator key_type 0
TRANSACTION_KEY = "transaction_key"     # FindCoordinator key_type 1
BROKER_RESOURCE = "broker_resource"     # Describe/(Incremental)AlterConfigs on BROKER or BROKER_LOGGER
TOPIC_RESOURCE = "topic_resource"       # ... on a TOPIC
GROUP_RESOURCE = "group_resource"       # ... on a GROUP (Kafka 3.8+ group configs)


class Scope(Enum):
    REQUEST = "request"
    PER_RESOURCE = "per_resource"
    FILTER = "filter"


@dataclass(frozen=True)
class Check:
    resource_type: ResourceType
    operation: AclOperation
    error: int
    scope: Scope
    when: str | None = None
    otherwise: Check | None = None
    by_resource_type: bool = False   # Authorizer.authorizeByResourceType: "on any resource of the type"


def _c(rt: ResourceType, op: AclOperation, error: int, scope: Scope = Scope.REQUEST, when: str | None = None,
       otherwise: Check | None = None, by_resource_type: bool = False) -> Check:
    return Check(rt, op, error, scope, when, otherwise, by_resource_type)


T, G, C, X = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID
Op = AclOperation
REQ, PER, FILT = Scope.REQUEST, Scope.PER_RESOURCE, Scope.FILTER
TAF, GAF, CAF, XAF = (TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED,
                      TRANSACTIONAL_ID_AUTHORIZATION_FAILED)


@dataclass(frozen=True)
class ApiAuthorization:
    api_key: int
    name: str
    checks: tuple[Check, ...]
    note: str = ""


_CLUSTER_ACTION = (_c(C, Op.CLUSTER_ACTION, CAF),)
_GROUP_READ = (_c(G, Op.READ, GAF),)


def _configs(op: AclOperation) -> tuple[Check, ...]:
    return (_c(C, op, CAF, PER, BROKER_RESOURCE), _c(T, op, TAF, PER, TOPIC_RESOURCE),
            _c(G, op, GAF, PER, GROUP_RESOURCE))


_TABLE: tuple[ApiAuthorization, ...] = (
    ApiAuthorization(0, "Produce", (_c(X, Op.WRITE, XAF, REQ, TRANSACTIONAL), _c(T, Op.WRITE, TAF, PER)),
                     "idempotent produce needs no cluster ACL since KIP-679 (only InitProducerId checks)"),
    ApiAuthorization(1, "Fetch", (_c(C, Op.CLUSTER_ACTION, TAF, PER, FOLLOWER), _c(T, Op.READ, TAF, PER, CONSUMER)),
                     "a follower without CLUSTER_ACTION gets TOPIC_AUTHORIZATION_FAILED on every partition"),
    ApiAuthorization(2, "ListOffsets", (_c(T, Op.DESCRIBE, TAF, PER),)),
    ApiAuthorization(3, "Metadata", (
        _c(T, Op.DESCRIBE, TAF, PER, LISTED_TOPICS), _c(T, Op.DESCRIBE, TAF, FILT, ALL_TOPICS),
        _c(C, Op.CREATE, TAF, REQ, AUTO_CREATE, otherwise=_c(T, Op.CREATE, TAF, PER, AUTO_CREATE))),
        "cluster_authorized_operations only with DESCRIBE on the cluster, else 0"),
    ApiAuthorization(4, "LeaderAndIsr", _CLUSTER_ACTION),
    ApiAuthorization(5, "StopReplica", _CLUSTER_ACTION),
    ApiAuthorization(6, "UpdateMetadata", _CLUSTER_ACTION),
    ApiAuthorization(7, "ControlledShutdown", _CLUSTER_ACTION),
    ApiAuthorization(8, "OffsetCommit", (_c(G, Op.READ, GAF), _c(T, Op.READ, TAF, PER))),
    ApiAuthorization(9, "OffsetFetch", (
        _c(G, Op.DESCRIBE, GAF, PER), _c(T, Op.DESCRIBE, TAF, PER, LISTED_TOPICS),
        _c(T, Op.DESCRIBE, TAF, FILT, ALL_TOPICS)), "per group from v8 (batched groups)"),
    ApiAuthorization(10, "FindCoordinator", (_c(G, Op.DESCRIBE, GAF, PER, GROUP_KEY),
                                             _c(X, Op.DESCRIBE, XAF, PER, TRANSACTION_KEY))),
    ApiAuthorization(11, "JoinGroup", _GROUP_READ),
    ApiAuthorization(12, "Heartbeat", _GROUP_READ),
    ApiAuthorization(13, "LeaveGroup", _GROUP_READ),
    ApiAuthorization(14, "SyncGroup", _GROUP_READ),
    ApiAuthorization(15, "DescribeGroups", (_c(G, Op.DESCRIBE, GAF, PER),),
                     "authorized_operations per group when asked"),
    ApiAuthorization(16, "ListGroups", (_c(C, Op.DESCRIBE, 0, REQ, otherwise=_c(G, Op.DESCRIBE, 0, FILT)),),
                     "never an error: without DESCRIBE on the cluster, only describable groups are listed"),
    ApiAuthorization(17, "SaslHandshake", ()),
    ApiAuthorization(18, "ApiVersions", ()),
    ApiAuthorization(19, "CreateTopics", (
        _c(C, Op.CREATE, TAF, REQ, otherwise=_c(T, Op.CREATE, TAF, PER)),
        _c(T, Op.DESCRIBE_CONFIGS, TAF, PER)),
        "without DESCRIBE_CONFIGS the topic is created but its configs answer topic_config_error_code 29"),
    ApiAuthorization(20, "DeleteTopics", (_c(T, Op.DELETE, TAF, PER),)),
    ApiAuthorization(21, "DeleteRecords", (_c(T, Op.DELETE, TAF, PER),)),
    ApiAuthorization(22, "InitProducerId", (
        _c(X, Op.WRITE, XAF, REQ, TRANSACTIONAL),
        _c(C, Op.IDEMPOTENT_WRITE, CAF, REQ, IDEMPOTENT,
           otherwise=_c(T, Op.WRITE, CAF, REQ, IDEMPOTENT, by_resource_type=True)))),
    ApiAuthorization(23, "OffsetForLeaderEpoch", (_c(C, Op.CLUSTER_ACTION, CAF, REQ, FOLLOWER),
                                                  _c(T, Op.DESCRIBE, TAF, PER, CONSUMER))),
    ApiAuthorization(24, "AddPartitionsToTxn", (_c(X, Op.WRITE, XAF), _c(T, Op.WRITE, TAF, PER)),
                     "the other partitions answer OPERATION_NOT_ATTEMPTED (55)"),
    ApiAuthorization(25, "AddOffsetsToTxn", (_c(X, Op.WRITE, XAF), _c(G, Op.READ, GAF))),
    ApiAuthorization(26, "EndTxn", (_c(X, Op.WRITE, XAF),)),
    ApiAuthorization(27, "WriteTxnMarkers", _CLUSTER_ACTION),
    ApiAuthorization(28, "TxnOffsetCommit", (_c(X, Op.WRITE, XAF), _c(G, Op.READ, GAF), _c(T, Op.READ, TAF, PER))),
    ApiAuthorization(29, "DescribeAcls", (_c(C, Op.DESCRIBE, CAF),), "SECURITY_DISABLED without an authorizer"),
    ApiAuthorization(30, "CreateAcls", (_c(C, Op.ALTER, CAF),), "SECURITY_DISABLED without an authorizer"),
    ApiAuthorization(31, "DeleteAcls", (_c(C, Op.ALTER, CAF),), "SECURITY_DISABLED without an authorizer"),
    ApiAuthorization(32, "DescribeConfigs", _configs(Op.DESCRIBE_CONFIGS)),
    ApiAuthorization(33, "AlterConfigs", _configs(Op.ALTER_CONFIGS)),
    ApiAuthorization(34, "AlterReplicaLogDirs", (_c(C, Op.ALTER, CAF, PER),)),
    ApiAuthorization(35, "DescribeLogDirs", (_c(C, Op.DESCRIBE, CAF),)),
    ApiAuthorization(36, "SaslAuthenticate", ()),
    ApiAuthorization(37, "CreatePartitions", (_c(T, Op.ALTER, TAF, PER),)),
    ApiAuthorization(42, "DeleteGroups", (_c(G, Op.DELETE, GAF, PER),)),
    ApiAuthorization(43, "ElectLeaders", (_c(C, Op.ALTER, CAF),)),
    ApiAuthorization(44, "IncrementalAlterConfigs", _configs(Op.ALTER_CONFIGS)),
    ApiAuthorization(45, "AlterPartitionReassignments", (_c(C, Op.ALTER, CAF),)),
    ApiAuthorization(46, "ListPartitionReassignments", (_c(C, Op.DESCRIBE, CAF),)),
    ApiAuthorization(47, "OffsetDelete", (_c(G, Op.DELETE, GAF), _c(T, Op.READ, TAF, PER))),
    ApiAuthorization(48, "DescribeClientQuotas", (_c(C, Op.DESCRIBE_CONFIGS, CAF),)),
    ApiAuthorization(49, "AlterClientQuotas", (_c(C, Op.ALTER_CONFIGS, CAF),)),
    ApiAuthorization(50, "DescribeUserScramCredentials", (_c(C, Op.DESCRIBE, CAF),)),
    ApiAuthorization(51, "AlterUserScramCredentials", (_c(C, Op.ALTER, CAF),)),
    ApiAuthorization(56, "AlterPartition", _CLUSTER_ACTION),
    ApiAuthorization(60, "DescribeCluster", (),
                     "no check: cluster_authorized_operations only with DESCRIBE on the cluster, else 0"),
    ApiAuthorization(61, "DescribeProducers", (_c(T, Op.READ, TAF, PER),)),
    ApiAuthorization(62, "BrokerRegistration", _CLUSTER_ACTION),
    ApiAuthorization(63, "BrokerHeartbeat", _CLUSTER_ACTION),
    ApiAuthorization(65, "DescribeTransactions", (_c(X, Op.DESCRIBE, XAF, PER),)),
    ApiAuthorization(66, "ListTransactions", (_c(X, Op.DESCRIBE, 0, FILT),)),
    ApiAuthorization(68, "ConsumerGroupHeartbeat", _GROUP_READ),
    ApiAuthorization(69, "ConsumerGroupDescribe", (_c(G, Op.DESCRIBE, GAF, PER),),
                     "authorized_operations per group when asked"),
    ApiAuthorization(74, "ListConfigResources", (_c(C, Op.DESCRIBE_CONFIGS, CAF),)),
)

BY_NAME: dict[str, ApiAuthorization] = {a.name: a for a in _TABLE}
BY_KEY: dict[int, ApiAuthorization] = {a.api_key: a for a in _TABLE}


def checks_for(api: str | int, conditions: frozenset[str] | set[str] = frozenset()) -> list[Check]:
    """The checks an API makes in this case (those without `when`, and those whose `when` holds)."""
    entry = BY_KEY[api] if isinstance(api, int) else BY_NAME[api]
    return [c for c in entry.checks if c.when is None or c.when in conditions]


def allowed(authorizer: AclAuthorizer, principal: KafkaPrincipal, host: str, check: Check,
            name: str | None = None) -> bool:
    """Does the check (or, when denied, its `otherwise`) pass for this resource name?
    CLUSTER checks use `kafka-cluster`; by-resource-type checks ignore the name."""
    current: Check | None = check
    while current is not None:
        if current.by_resource_type:
            ok = authorizer.authorize_by_resource_type(principal, host, current.operation, current.resource_type)
        else:
            resource = CLUSTER_NAME if current.resource_type is ResourceType.CLUSTER else name
            if resource is None:
                raise ValueError(f"a {current.resource_type.name} check needs a resource name")
            ok = authorizer.authorize(principal, host, current.operation, current.resource_type, resource)
        if ok:
            return True
        current = current.otherwise
    return False


def denial_error(authorizer: AclAuthorizer, principal: KafkaPrincipal, host: str, check: Check,
                 name: str | None = None) -> int:
    """0 when allowed, else the error code to answer (the last tried check's, as Kafka's handlers do)."""
    if allowed(authorizer, principal, host, check, name):
        return 0
    last = check
    while last.otherwise is not None:
        last = last.otherwise
    return last.error
