"""`kafkascope up` (kept for imports): the code is in kafkascope/stack/."""

from __future__ import annotations

from kafkascope.stack.cli import add_parser, run
from kafkascope.stack.local import CLUSTER_NAME, PARTS, XMONITOR_TOPIC, MetricsClusterLauncher, Stack
from kafkascope.stack.procs import Child, prometheus_query
from kafkascope.stack.workload import SAMPLE_GROUP, SAMPLE_TOPIC, workload

__all__ = ["CLUSTER_NAME", "PARTS", "SAMPLE_GROUP", "SAMPLE_TOPIC", "XMONITOR_TOPIC", "Child", "MetricsClusterLauncher",
           "Stack", "add_parser", "prometheus_query", "run", "workload"]
