"""The shared SparkSession stays on loopback."""

from __future__ import annotations

from slo.spark import session


def test_the_driver_binds_to_loopback() -> None:
    spark = session("loopback-check")
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"
    assert spark.range(3).count() == 3
