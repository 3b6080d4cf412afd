"""Every broker metric, with Kafka's MBean names (Kafka's "Monitoring" documentation), one module per concern:
``requests`` (RequestMetrics), ``topics`` (BrokerTopicMetrics), ``replicas`` (ReplicaManager, KafkaController,
ReplicaFetcherManager, Partition), ``cluster`` (controller elections, ZooKeeper client), ``runtime`` (idle share,
GC, disk) and ``core`` (BrokerMetrics, which composes them and serves /metrics).

How each value is computed (the asyncio analogues are marked *analogue*):

Request path (``kafka.network:type=RequestMetrics,request=R``; R = Kafka's ApiKeys name, plus FetchConsumer /
FetchFollower, which a Fetch updates *in addition to* Fetch, as Kafka does). Per request, from perf_counter stamps
taken in ``broker/server.py``: t0 the frame is fully read, t1 the handler starts, t2 the handler returns, t3 the
response is encoded, t4 the last byte is handed to the kernel.
* RequestQueueTimeMs = t1 - t0 (*analogue*: no handler pool queue; header parse + context, i.e. time before the
  handler runs). LocalTimeMs = t2 - t1 - remote. RemoteTimeMs = time parked in the purgatory (Fetch long-poll;
  acks=all waits once replication exists). ResponseQueueTimeMs = t3 - t2 (*analogue*: response encoding).
  ResponseSendTimeMs = t4 - t3. TotalTimeMs = t4 - t0. ThrottleTimeMs = 0 for every request (no quotas). All
  HDR timers (exporter.timer): 60 s window quantiles, cumulative count, and a ``..._seconds`` classic histogram.
  They are registered at start for every API ApiVersions advertises and FetchConsumer/FetchFollower, as Kafka's
  RequestChannel.Metrics does for its APIs (not RequestBytes, MessageConversionsTimeMs, TemporaryMemoryBytes).
* RequestsPerSec{request,version}: meter marked once per request; it and ErrorsPerSec appear on first use, as
  Kafka's. ErrorsPerSec{request,error}: every
  ``error_code`` field in the response body (top level and per topic/partition, as Kafka's ``errorCounts``),
  marked by its count, error = the Errors enum name (NONE included); requests the broker cannot parse or serve
  (the connection is closed) count once under their error: UNSUPPORTED_VERSION, INVALID_REQUEST for a frame
  that does not match its schema or breaks a rule of its version, UNKNOWN_SERVER_ERROR for a handler failure.
* RequestChannel RequestQueueSize (*analogue*): requests read and not yet answered (being handled, incl. parked
  in the purgatory); ResponseQueueSize: encoded responses still being written to a slow socket.
* NetworkProcessorAvgIdlePercent / RequestHandlerAvgIdlePercent (*analogue*): one event loop is both the network
  processor and the handler pool, so both measure the share of wall time the loop spends blocked in
  ``selector.select()`` (idle), timed by the selector of ``broker/event_loop.py``'s loop (``python -m broker``
  runs on it; on any other loop they read 0). RequestHandlerAvgIdlePercent is a meter marked with idle nanoseconds and a
  nanosecond rate unit (as Kafka), so MeanRate/OneMinuteRate read as a 0..1 fraction;
  NetworkProcessorAvgIdlePercent is a gauge of the same meter's OneMinuteRate.
* socket-server-metrics{listener,networkProcessor="0"}: connection-count (live), connection-creation/close-rate
  (Kafka's Rate: 2 × 30 s samples) and -total; ``connections{clientSoftwareName,clientSoftwareVersion,listener,
  networkProcessor}`` (KIP-511): live connections per client software, every connection "unknown"/"unknown" until a
  valid ApiVersions v3+ names it; a gauge that falls to 0 stays until a new one needs room (at most 100, Kafka's
  IntGaugeSuite).
* DeprecatedRequestsPerSec{request,version,clientSoftwareName,clientSoftwareVersion} (KIP-724): marked, on first
  use, for requests of the versions Kafka 3.9's schemas deprecate (``clients.DEPRECATED_UP_TO``: e.g. Metadata
  v0-3, Produce v3-6 of those we serve); modern clients send none, so it usually does not exist, as on Kafka.
* Acceptor AcceptorBlockedPercent{listener}: at max.connections the accept loop holds the new connection until one
  closes (Kafka's ConnectionQuotas.waitForConnectionSlot; max.connections.per.ip still refuses) and marks the wait
  in nanoseconds on a meter whose rate unit is ns, so its rates read as the 0..1 share of time blocked (0 when
  never blocked).

Topic throughput (``kafka.server:type=BrokerTopicMetrics[,topic=T]``; per topic created on first event, topics that
exist only): MessagesInPerSec (record count from the batch header of each appended batch, duplicates excluded),
BytesInPerSec (appended batch bytes); every leader append counts, the group coordinator's to ``__consumer_offsets``
too (offset commits, group metadata: Kafka's go through ReplicaManager.appendRecords), except the tombstones of
offset expiry, OffsetDelete and DeleteGroups, which Kafka writes to the partition directly (uncounted);
BytesOutPerSec (consumer-fetch record bytes returned; follower fetches go to ReplicationBytesOutPerSec),
BytesRejectedPerSec (batch bytes refused as too large or corrupt), ProduceMessageConversionsPerSec (records of
batches rebuilt to the topic's compression.type, Kafka's non-in-place LogValidator path; per topic from the first
one), FetchMessageConversionsPerSec (all topics only, 0: stored batches are magic 2 and Fetch below v4 is not
served, so nothing is down-converted), Total/FailedProduceRequestsPerSec and Total/FailedFetchRequestsPerSec (per partition in the request, as
ReplicaManager; "failed" excludes the errors Kafka does not count as failures: unknown partition, not leader,
too large, corrupt, storage).

Purgatory (``DelayedOperationPurgatory,delayedOperation=Produce|Fetch``): PurgatorySize = watch entries (an
operation watched on N partitions counts N), NumDelayedOperations = operations waiting.

Replication and controller: gauges over a :class:`ReplicaView`; standalone the ISR is this broker alone, the
broker is the active controller, no elections or ISR changes happen. The cluster implementation replaces the view
(``set_replica_view``) and marks ``isr_shrinks``/``isr_expands``/``unclean_elections``/``leader_election``.
Partition/leader counts; ReplicaManager UnderReplicatedPartitions, UnderMinIsrPartitionCount and
AtMinIsrPartitionCount count the partitions this broker leads that are under-replicated (isr < replicas), under or
at the effective min ISR (min(min.insync.replicas, RF), Kafka's Partition.effectiveMinIsr; with RF 1 and min ISR 1
that is every partition, as in Kafka); OfflinePartitionsCount (no leader), PreferredReplicaImbalanceCount (leader is
not the preferred replica) on the active controller. ``kafka.cluster:type=Partition,topic,partition`` gauges
exist only on the brokers hosting a replica of the partition (Kafka's Partition object); UnderReplicated,
UnderMinIsr, AtMinIsr, ReplicasCount and InSyncReplicasCount are the leader's (0 on followers), so a sum over
brokers counts each partition once; LastStableOffsetLag is 0 (no transactions: the LSO is the high watermark).
ReplicaFetcherManager (clientId=Replica): MaxLag = the largest max(0, leader high watermark - our log end offset)
over followed partitions, 0 with none (never negative); MinFetchRate = the smallest one-minute rate of the
per-leader ``FetcherStats`` RequestsPerSec meters (every Fetch a fetcher sends) over fetchers following
something, 0 with none.

Cluster mode (the ZooKeeper beans are not defined standalone, where they have no honest values; the two election
beans are, and stay at 0: a standalone broker, its own controller, never elects):
* LeaderElectionRateAndTimeMs (timer, ms) and UncleanLeaderElectionsPerSec (meter): the controller thread calls
  the hook set by ``MetadataStore.set_leader_election_hook`` with (ms, unclean) for every leader it elects (a dead or shutting-down leader
  replaced, a new partition's first leader, preferred-leader and reassignment moves); ms = from the start of
  that partition's decision to its fenced ZooKeeper write. The call is handed to the event loop
  (``call_soon_threadsafe``), so only the active controller's counts move, as in Kafka. (Kafka's ZK
  controller times whole BrokerChange events under this name; ours times each partition's election.)
* ReplicationBytesInPerSec: bytes of every batch a replica fetcher appends as follower
  (``ReplicaFetcherManager.on_bytes_in``); ReplicationBytesOutPerSec is the leader side (follower fetches).
* ZooKeeper client (``kafka.server:type=SessionExpireListener``): Kafka's six ZooKeeper<event>PerSec meters, marked
  from kazoo's connection-state listener as the KeeperState event Kafka's watcher would get (``cluster.zk_event``):
  CONNECTED is SyncConnects (ReadOnlyConnects if read-only), SUSPENDED Disconnects, LOST Expires or AuthFailures
  (our own close is none); SaslAuthentications stays 0 (no SASL to ZooKeeper). SessionState is Kafka's string
  gauge made numeric as a state set, ``SessionState{state=S}`` = 1 for kazoo's current client state S (CONNECTED, CONNECTING, CONNECTED_RO,
  EXPIRED_SESSION, AUTH_FAILED, CLOSED), 0 for the others. ``ZooKeeperClientMetrics`` ZooKeeperRequestLatencyMs
  (timer, ms): every request kazoo queues, from queueing to its result (the request listener of
  ``broker/controller/zk_client.TimedKazooClient``).

Fetch sessions (``kafka.server:type=FetchSessionCache``, KIP-227; ``broker/fetch_session.py``):
NumIncrementalFetchSessions and NumIncrementalFetchPartitionsCached read the cache at scrape;
IncrementalFetchSessionEvictionsPerSec is marked per session evicted to make room for a new one.

Logs (``kafka.log:type=Log,topic,partition``): Size, LogEndOffset, LogStartOffset, NumLogSegments read at scrape.
Group coordinator: NumGroups and NumGroups<State>. Process: linux-disk-read/write-bytes (/proc/self/io),
free bytes per log dir, OfflineLogDirectoryCount (dirs not writable), BrokerState (3 = RUNNING),
``process_*`` (CPU, open fds, memory; prometheus-client's process collector), Python GC collections and pause time
per generation (``gc.callbacks``) as ``python_gc_pause_seconds{generation}``. The JVM panels' series, mapped onto
this process (``jvm`` module, docs/metrics-jvm-mapping.md): ``jvm_memory_used_bytes{area}`` (heap = resident
anonymous memory, nonheap = resident file-backed), ``jvm_memory_max_bytes{area}`` (the tightest of RLIMIT_AS,
RLIMIT_DATA and the cgroup limit, -1 for none), the same under 0.x's ``jvm_memory_bytes_used/max``,
``jvm_threads_current`` (OS threads) and ``jvm_gc_collection_seconds{gc="python-gen<N>"}``.
There is no ControlPlaneRequestHandlerAvgIdlePercent: Kafka 3.9 has it only with control.plane.listener.name set.
"""

from broker.metrics.core import BrokerMetrics
from broker.metrics.replicas import BrokerReplicaView, PartitionStats, ReplicaView
from broker.metrics.requests import API_NAMES, count_errors, error_name

__all__ = ["API_NAMES", "BrokerMetrics", "BrokerReplicaView", "PartitionStats", "ReplicaView", "count_errors",
           "error_name"]
