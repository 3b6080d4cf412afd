"""`cluster_factory`: local clusters (kafkascope.local.cluster) a test makes, all shut down when it ends."""

from __future__ import annotations

import pytest

from kafkascope.local.cluster import Cluster


@pytest.fixture
def cluster_factory(tmp_path):
    """cluster_factory(brokers=3, racks=None, standalone=False, **props) -> a started Cluster; all are shut
    down at the end of the test."""
    made: list[Cluster] = []

    def make(brokers: int = 3, racks: list[str] | None = None, standalone: bool = False, timeout: float = 60.0,
             **props: object) -> Cluster:
        c = Cluster(tmp_path / f"cluster-{len(made)}", brokers=brokers, racks=racks, standalone=standalone, **props)
        made.append(c)
        return c.start(timeout)

    yield make
    for c in made:
        c.shutdown()
