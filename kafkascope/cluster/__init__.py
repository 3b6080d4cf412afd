"""Local clusters: a real ZooKeeper plus N broker subprocesses, driven by `kafkascope cluster ...` and tests."""
