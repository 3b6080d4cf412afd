"""The only SparkSession builder: local mode by default, quiet, UTC, workers on this interpreter."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession


def session(app: str, master: str | None = None, shuffle_partitions: int = 8) -> SparkSession:
    """Build (or reuse) a session; `master` defaults to local[*]."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # Spark binds its driver (block manager, RPC) to the host's first interface address unless told: keep it on
    # loopback, as everything of ours (SPARK_LOCAL_IP covers what the JVM binds before the conf is read).
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (SparkSession.builder.appName(app).master(master or "local[*]")
             .config("spark.sql.shuffle.partitions", shuffle_partitions)
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "2g")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark
