from tests.support.cluster import cluster_factory  # noqa: F401 - fixture
