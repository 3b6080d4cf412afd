"""DescribeLogDirs (35): every log dir of this broker with its partitions' sizes, what `kafka-log-dirs.sh
--describe` shows (Kafka's ReplicaManager.describeLogDirs).

An offline log dir (a failed write took it offline, log/dir_failure.py) is listed with KAFKA_STORAGE_ERROR and no
partitions; an online one with the volume's total and usable bytes (v4, KIP-827). A partition's offset lag is
max(high watermark - log end offset, 0), 0 on a leader, as Kafka reports it for a current (not future) log.
"""

from __future__ import annotations

import os
import shutil

from broker.errors import ErrorCode
from broker.protocol import authz
from broker.protocol.api import ApiSpec, RequestContext

DESCRIBE_LOG_DIRS = 35


def _volume(log_dir: str) -> tuple[int, int]:
    """(total, usable) bytes of the volume holding `log_dir`; (-1, -1) when it cannot be read."""
    try:
        usage = shutil.disk_usage(log_dir)
    except OSError:
        return -1, -1
    return usage.total, usage.free


async def handle_describe_log_dirs(ctx: RequestContext, req) -> dict:
    if denied := authz.request_error(ctx, DESCRIBE_LOG_DIRS):
        return {"throttle_time": 0, "error_code": denied, "results": []}
    wanted = None if req.topics is None else {(t.topic, int(p)) for t in req.topics for p in t.partitions}
    logs = ctx.broker.logs
    by_dir: dict[str, dict[str, list[dict]]] = {}
    for plog in sorted(logs.online_logs(), key=lambda lg: (lg.topic, lg.partition)):
        if wanted is not None and (plog.topic, plog.partition) not in wanted:
            continue
        topics = by_dir.setdefault(str(logs.log_dir_of(plog)), {})
        topics.setdefault(plog.topic, []).append({
            "partition_index": plog.partition, "partition_size": plog.size_bytes,
            "offset_lag": max(plog.high_watermark - plog.log_end_offset, 0), "is_future_key": False})
    results = []
    for d in logs.log_dirs:
        path = os.path.abspath(d)
        if logs.failures.is_offline(d):
            results.append({"error_code": ErrorCode.kafka_storage_error, "log_dir": path, "topics": [],
                            "total_bytes": -1, "usable_bytes": -1})
            continue
        total, usable = _volume(path)
        topics = by_dir.get(str(d), {})
        results.append({"error_code": ErrorCode.none, "log_dir": path, "total_bytes": total, "usable_bytes": usable,
                        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]})
    return {"throttle_time": 0, "error_code": ErrorCode.none, "results": results}


APIS = (ApiSpec(DESCRIBE_LOG_DIRS, 1, 4, handle_describe_log_dirs),)
