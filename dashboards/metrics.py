"""Metric names and label selectors, one place: every PromQL expression of the rules (dashboards/build.py) and of
the dashboards (dashboards/grafana.py) names its metrics through M, so a renamed metric breaks the build and the
live-scrape tests (tests/dashboards), not a dashboard at 3 a.m.

The names are the ones our components export (broker: strimzi naming of broker/metrics/; xmonitor:
xmonitor/metrics.py; lag monitor: lagmonitor/api.py; ZooKeeper: exporter/zk.py; host: the Prometheus node exporter and
kafkascope/local/node_exporter.py's log-dir textfile).
"""

from __future__ import annotations

from dashboards.catalog import JOB_NODE


class M:
    """Metric names, one place."""

    # broker (strimzi naming)
    under_replicated = "kafka_server_replicamanager_underreplicatedpartitions"
    under_min_isr = "kafka_server_replicamanager_underminisrpartitioncount"
    at_min_isr = "kafka_server_replicamanager_atminisrpartitioncount"
    partition_count = "kafka_server_replicamanager_partitioncount"
    leader_count = "kafka_server_replicamanager_leadercount"
    offline_partitions = "kafka_controller_kafkacontroller_offlinepartitionscount"
    active_controller = "kafka_controller_kafkacontroller_activecontrollercount"
    global_partitions = "kafka_controller_kafkacontroller_globalpartitioncount"
    global_topics = "kafka_controller_kafkacontroller_globaltopiccount"
    preferred_imbalance = "kafka_controller_kafkacontroller_preferredreplicaimbalancecount"
    unclean_elections = "kafka_controller_controllerstats_uncleanleaderelections_total"
    leader_elections = "kafka_controller_controllerstats_leaderelectionrateandtime_seconds_count"
    isr_shrinks = "kafka_server_replicamanager_isrshrinks_total"
    isr_expands = "kafka_server_replicamanager_isrexpands_total"
    max_lag = "kafka_server_replicafetchermanager_maxlag"
    total_time_ms = "kafka_network_requestmetrics_totaltimems"  # HDR quantile gauges (60 s window)
    request_time_ms = "kafka_network_requestmetrics_{part}ms"
    total_time_bucket = "kafka_network_requestmetrics_totaltime_seconds_bucket"
    requests = "kafka_network_requestmetrics_requests_total"
    errors = "kafka_network_requestmetrics_errors_total"
    request_queue = "kafka_network_requestchannel_requestqueuesize"
    response_queue = "kafka_network_requestchannel_responsequeuesize"
    purgatory_size = "kafka_server_delayedoperationpurgatory_purgatorysize"
    delayed_ops = "kafka_server_delayedoperationpurgatory_numdelayedoperations"
    handler_idle_ns = "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count_total"
    network_idle = "kafka_network_socketserver_networkprocessoravgidle_percent"
    bytes_in = "kafka_server_brokertopicmetrics_bytesin_total"
    bytes_out = "kafka_server_brokertopicmetrics_bytesout_total"
    messages_in = "kafka_server_brokertopicmetrics_messagesin_total"
    bytes_rejected = "kafka_server_brokertopicmetrics_bytesrejected_total"
    failed_produce = "kafka_server_brokertopicmetrics_failedproducerequests_total"
    failed_fetch = "kafka_server_brokertopicmetrics_failedfetchrequests_total"
    replication_bytes_in = "kafka_server_brokertopicmetrics_replicationbytesin_total"
    replication_bytes_out = "kafka_server_brokertopicmetrics_replicationbytesout_total"
    connections = "kafka_server_socket_server_metrics_connection_count"
    # security: per listener (and, on Kafka, per network processor); the first two only on SASL/SSL listeners
    auth_failed = "kafka_server_socket_server_metrics_failed_authentication_total"
    auth_succeeded = "kafka_server_socket_server_metrics_successful_authentication_total"
    cert_not_after = "kafkascope_network_tlscertificate_notafterseconds"  # kafkascope only: Kafka has no such MBean
    log_size = "kafka_log_log_size"
    log_end_offset = "kafka_log_log_logendoffset"
    log_segments = "kafka_log_log_numlogsegments"
    partition_isr = "kafka_cluster_partition_insyncreplicascount"
    partition_replicas = "kafka_cluster_partition_replicascount"
    partition_under_replicated = "kafka_cluster_partition_underreplicated"
    partition_lso_lag = "kafka_cluster_partition_laststableoffsetlag"   # leader's HW - LSO (KIP-98)
    free_bytes = "kafkascope_log_logdir_freebytes"
    offline_log_dirs = "kafka_log_logmanager_offlinelogdirectorycount"
    zk_session_state = "kafka_server_sessionexpirelistener_sessionstate"
    zk_expires = "kafka_server_sessionexpirelistener_zookeeperexpires_total"
    zk_disconnects = "kafka_server_sessionexpirelistener_zookeeperdisconnects_total"
    zk_request_latency_bucket = "kafka_server_zookeeperclientmetrics_zookeeperrequestlatency_seconds_bucket"
    cpu = "process_cpu_seconds_total"
    rss = "process_resident_memory_bytes"
    gc_pause = "jvm_gc_collection_seconds_sum"
    gc_count = "jvm_gc_collection_seconds_count"
    # KRaft (Kafka 4) nodes only: the Raft quorum (kafka.server:type=raft-metrics), metadata propagation
    # (type=broker-metadata-metrics), KafkaController's KRaft gauges and the new group coordinator
    # (type=group-coordinator-metrics, named by exporter/rules/kafkascope-kraft-additions.yaml). Strimzi's rules
    # type raft-metrics' *-max attributes as counters, hence commit_latency_max_total.
    raft_state = "kafka_server_raftmetrics_current_state"   # 1, label current_state (leader, follower, ...)
    raft_leader = "kafka_server_raftmetrics_current_leader"   # node id, -1 without a leader
    raft_epoch = "kafka_server_raftmetrics_current_epoch"
    raft_high_watermark = "kafka_server_raftmetrics_high_watermark"
    raft_log_end_offset = "kafka_server_raftmetrics_log_end_offset"
    raft_commit_latency_avg = "kafka_server_raftmetrics_commit_latency_avg"
    raft_commit_latency_max = "kafka_server_raftmetrics_commit_latency_max_total"
    raft_append_rate = "kafka_server_raftmetrics_append_records_rate"
    raft_fetch_rate = "kafka_server_raftmetrics_fetch_records_rate"
    raft_voters = "kafka_server_raftmetrics_number_of_voters"
    metadata_lag_ms = "kafka_server_brokermetadatametrics_last_applied_record_lag_ms"
    metadata_load_errors = "kafka_server_brokermetadatametrics_metadata_load_error_count"
    metadata_apply_errors = "kafka_server_brokermetadatametrics_metadata_apply_error_count"
    controller_metadata_errors = "kafka_controller_kafkacontroller_metadataerrorcount"
    fenced_brokers = "kafka_controller_kafkacontroller_fencedbrokercount"
    active_brokers = "kafka_controller_kafkacontroller_activebrokercount"
    groups_by_protocol = "kafka_server_groupcoordinatormetrics_group_count"   # label protocol
    consumer_groups_by_state = "kafka_server_groupcoordinatormetrics_consumer_group_count"   # label state
    consumer_rebalance_rate = "kafka_server_groupcoordinatormetrics_consumer_group_rebalance_rate"
    classic_rebalance_rate = "kafka_server_groupcoordinatormetrics_group_completed_rebalance_rate"
    # xmonitor
    x_attempts = "xmonitor_produce_attempts_total"
    x_successes = "xmonitor_produce_successes_total"
    x_produce_errors = "xmonitor_produce_errors_total"
    x_consumed = "xmonitor_records_consumed_total"
    x_lost = "xmonitor_records_lost_total"
    x_duplicated = "xmonitor_records_duplicated_total"
    x_late = "xmonitor_records_late_total"
    x_e2e_bucket = "xmonitor_e2e_latency_seconds_bucket"
    x_e2e_count = "xmonitor_e2e_latency_seconds_count"
    x_produce_bucket = "xmonitor_produce_latency_seconds_bucket"
    x_service_up = "xmonitor_service_up"
    kmf_produce_availability = "kmf_services_produce_service_single_cluster_monitor_produce_availability_avg"
    kmf_consume_availability = "kmf_services_consume_service_single_cluster_monitor_consume_availability_avg"
    kmf_lost_total = "kmf_services_consume_service_single_cluster_monitor_records_lost_total"
    kmf_duplicated_total = "kmf_services_consume_service_single_cluster_monitor_records_duplicated_total"
    kmf_delay_99th = "kmf_services_consume_service_single_cluster_monitor_records_delay_ms_99th"
    # lag monitor (Burrow + kafka_exporter names)
    burrow_status = "burrow_kafka_consumer_status"
    burrow_lag_total = "burrow_kafka_consumer_lag_total"
    burrow_partition_lag = "burrow_kafka_consumer_partition_lag"
    burrow_partition_status = "burrow_kafka_topic_partition_status"
    lag_seconds = "kafkascope_consumer_lag_seconds"
    partition_lag_seconds = "kafkascope_consumer_partition_lag_seconds"
    lso_lag_total = "kafkascope_consumer_lso_lag_total"   # lag to the Last Stable Offset (docs/lag-monitor.md §6)
    consumergroup_lag_sum = "kafka_consumergroup_lag_sum"   # per topic; kafka_consumergroup_lag has -1 entries
    # ZooKeeper ensemble exporter
    zk_up = "zk_up"
    zk_leader = "zk_server_leader"
    zk_state = "zk_server_state"
    zk_avg_latency = "zk_avg_latency"
    zk_max_latency = "zk_max_latency"
    zk_outstanding = "zk_outstanding_requests"
    zk_alive_connections = "zk_num_alive_connections"
    zk_znodes = "zk_znode_count"
    zk_watches = "zk_watch_count"
    zk_fsync = "zk_avg_fsynctime"
    zk_ephemerals = "zk_ephemerals_count"
    zk_packets_received = "zk_packets_received"
    # host (node exporter; the info metric is kafkascope/local/node_exporter.py's textfile)
    node_cpu = "node_cpu_seconds_total"
    node_load1 = "node_load1"
    node_mem_total = "node_memory_MemTotal_bytes"
    node_mem_available = "node_memory_MemAvailable_bytes"
    node_mem_cached = "node_memory_Cached_bytes"
    node_mem_buffers = "node_memory_Buffers_bytes"
    node_major_faults = "node_vmstat_pgmajfault"
    node_net_rx = "node_network_receive_bytes_total"
    node_net_tx = "node_network_transmit_bytes_total"
    node_net_rx_errs = "node_network_receive_errs_total"
    node_net_tx_errs = "node_network_transmit_errs_total"
    node_net_rx_drop = "node_network_receive_drop_total"
    node_net_tx_drop = "node_network_transmit_drop_total"
    node_tcp_retrans = "node_netstat_Tcp_RetransSegs"
    node_disk_reads = "node_disk_reads_completed_total"
    node_disk_writes = "node_disk_writes_completed_total"
    node_disk_read_time = "node_disk_read_time_seconds_total"
    node_disk_write_time = "node_disk_write_time_seconds_total"
    node_disk_read_bytes = "node_disk_read_bytes_total"
    node_disk_written_bytes = "node_disk_written_bytes_total"
    node_disk_io_time = "node_disk_io_time_seconds_total"
    node_disk_io_weighted = "node_disk_io_time_weighted_seconds_total"
    node_fs_avail = "node_filesystem_avail_bytes"
    node_fs_size = "node_filesystem_size_bytes"
    node_fs_readonly = "node_filesystem_readonly"
    logdir_mount_info = "kafkascope_logdir_mount_info"


# Host selectors. Pseudo and in-memory filesystems are left out except where a log dir lives (the textfile says
# so); disks are node-mixin's real block devices (no loop, ram or zram).
PSEUDO_FS = "tmpfs|ramfs|rootfs|overlay|squashfs|iso9660|autofs|nsfs|devtmpfs|fuse.lxcfs"
NODE = f'job="{JOB_NODE}"'
REAL_FS = f'{NODE},fstype!="",fstype!~"{PSEUDO_FS}",mountpoint!=""'
DISKS = f'{NODE},device=~"(/dev/)?(mmcblk.p.+|nvme.+|rbd.+|sd.+|vd.+|xvd.+|dm-.+|md.+|dasd.+)"'


def fs_free_ratio(sel: str = NODE) -> str:
    """Available / size of writable filesystems matching `sel` (labels: instance, device, fstype, mountpoint)."""
    return (f"({M.node_fs_avail}{{{sel}}} / {M.node_fs_size}{{{sel}}} "
            f"and on(instance, device, mountpoint) {M.node_fs_readonly}{{{sel}}} == 0)")


def logdir_fs_free_ratio() -> str:
    """fs_free_ratio of the filesystems that hold a broker log dir (any fstype: a log dir on tmpfs counts)."""
    return f"({fs_free_ratio()} and on(instance, mountpoint) {M.logdir_mount_info})"


# Names only KRaft nodes export (the kraft dashboard and the kafkascope-kraft alerts): a ZooKeeper-mode cluster,
# ours included, has none of them, so the stack's live check skips them and tests/interop/test_kraft_dashboards.py
# checks them on Apache Kafka 4.1.
KRAFT_ONLY = frozenset({
    M.raft_state, M.raft_leader, M.raft_epoch, M.raft_high_watermark, M.raft_log_end_offset,
    M.raft_commit_latency_avg, M.raft_commit_latency_max, M.raft_append_rate, M.raft_fetch_rate, M.raft_voters,
    M.metadata_lag_ms, M.metadata_load_errors, M.metadata_apply_errors, M.controller_metadata_errors,
    M.fenced_brokers, M.active_brokers, M.groups_by_protocol, M.consumer_groups_by_state, M.consumer_rebalance_rate,
    M.classic_rebalance_rate,
})
