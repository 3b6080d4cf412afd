"""Shared fixture: one small report directory written by the report job (2 days, a broker-down incident)."""

import pytest


@pytest.fixture(scope="session")
def report_dir(tmp_path_factory):
    """Built once for the Streamlit page tests and the screenshots (a Spark run each would be the same report)."""
    from slo.generate import GenConfig, Incident, generate
    from slo.jobs.slo_report import slo_report
    from slo.spark import session
    from slo.specs import load_specs

    data, out = tmp_path_factory.mktemp("sli"), tmp_path_factory.mktemp("report")
    cfg = GenConfig(days=2, clusters=1, partitions=3, interval_s=60,
                    incidents=(Incident.parse("broker-down@1d+3h:broker=2"),))
    generate(cfg, data)
    spark = session("test-slo-page", shuffle_partitions=2)
    try:
        slo_report(spark, data, load_specs(), out, window_s=2 * 86400)
    finally:
        spark.stop()
    return out
