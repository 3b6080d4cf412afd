from tests.support.cluster_fixture import cluster_factory  # noqa: F401 - fixture
