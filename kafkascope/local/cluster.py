"""A local cluster as a context manager (tests, benchmarks): the same ClusterLauncher as `kafkascope cluster up`.

    with Cluster(tmp_path, brokers=3) as c:
        c.bootstrap                          # "127.0.0.1:P0,127.0.0.1:P1,127.0.0.1:P2"
        c.broker(1).kill(); c.broker(1).start()
        c.zookeeper.connect                  # "127.0.0.1:PORT/kafkascope" (what brokers get)
        c.zookeeper.host_port                # "127.0.0.1:PORT"
        c.wait_for(lambda: c.registered_broker_ids() == [0, 1, 2], timeout=15)

or, as a fixture: `from tests.support.cluster_fixture import cluster_factory` in a conftest, then
`cluster_factory(brokers=3, racks=["a", "b", "c"], **{"min.insync.replicas": 2})` in a test; every cluster
made through the factory is shut down when the test ends.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from common.polling import wait_until
from kafkascope.local import kraft
from kafkascope.local import zookeeper as zkmod
from kafkascope.local.launcher import CHROOT, ZK_ID, ClusterLauncher


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.05,
             what: str | None = None) -> Any:
    """The cluster tests' spelling of common.polling.wait_until: the predicate's exceptions count as "not yet"."""
    return wait_until(predicate, timeout, interval, what, retry_on=(Exception,))


class _Handle:
    def __init__(self, launcher: ClusterLauncher, member_id: str) -> None:
        self._launcher = launcher
        self.id = member_id

    @property
    def pid(self) -> int | None:
        return self._launcher.pid(self.id)

    @property
    def state(self) -> str:
        """running / paused / stopped / dead (checked against the real process)."""
        return self._launcher.state_of(self.id)

    def kill(self) -> None:
        self._launcher.kill(self.id)

    def stop(self, timeout: float = 30.0) -> str:
        return self._launcher.stop(self.id, timeout_s=timeout)

    def start(self, timeout: float = 60.0) -> None:
        self._launcher.start(self.id, timeout_s=timeout)

    def restart(self, timeout: float = 60.0) -> None:
        self.stop()
        self.start(timeout)

    def pause(self) -> None:
        self._launcher.pause(self.id)

    def resume(self) -> None:
        self._launcher.resume(self.id)


class BrokerHandle(_Handle):
    @property
    def broker_id(self) -> int:
        return int(self.id)

    @property
    def port(self) -> int:
        return self._launcher.broker_port(int(self.id))

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def data_dir(self) -> Path:
        return self._launcher.data_dir / f"broker-{self.id}"

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join((self.data_dir / "broker.log").read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def __repr__(self) -> str:
        return f"<broker {self.id} port={self.port} state={self.state}>"


class ZooKeeperHandle(_Handle):
    @property
    def host_port(self) -> str:
        return self._launcher.zookeeper_host_port

    @property
    def port(self) -> int:
        return int(self.host_port.rsplit(":", 1)[1])

    @property
    def connect(self) -> str:
        """With the chroot, as brokers get it in zookeeper.connect."""
        return self._launcher.zookeeper_connect

    def ruok(self, timeout: float = 2.0) -> bool:
        return zkmod.four_letter_word("127.0.0.1", self.port, "ruok", timeout) == "imok"

    def mntr(self, timeout: float = 2.0) -> dict:
        return zkmod.parse_mntr(zkmod.four_letter_word("127.0.0.1", self.port, "mntr", timeout))


class Cluster:
    """ZooKeeper + N brokers under data_dir; extra keyword props go into every server.properties
    (underscores in names become dots: min_insync_replicas=2). impl="apache-kafka": Apache Kafka 3.9 brokers.
    security="sasl_ssl": SASL_SSL only, with ACLs (kafkascope.local.security; `c.launcher.kit()` has the files).
    version="4.1.1" with impl="apache-kafka": a KRaft cluster of combined nodes, no ZooKeeper (kafkascope.local.kraft)."""

    def __init__(self, data_dir: Path | str, brokers: int = 3, racks: list[str] | None = None,
                 standalone: bool = False, zookeeper: bool = True, impl: str = "kafkascope",
                 security: str | None = None, version: str | None = None, log_dirs: int = 1, **props: object) -> None:
        broker_props = {k.replace("_", "."): v for k, v in props.items()}
        self.launcher: ClusterLauncher
        if impl == "apache-kafka" and kraft.is_kraft_version(version):
            assert version is not None
            self.launcher = kraft.KRaftLauncher(data_dir, brokers=brokers, racks=racks, broker_props=broker_props,
                                                version=version, security=security)
        else:
            self.launcher = ClusterLauncher(data_dir, brokers=brokers, racks=racks, broker_props=broker_props,
                                            standalone=standalone, zookeeper=zookeeper, impl=impl, security=security,
                                            log_dirs=log_dirs)
        self._kazoo: list[Any] = []
        self._raw_kazoo: Any = None

    def start(self, timeout: float = 60.0) -> Cluster:
        self.launcher.start_all(timeout_s=timeout)
        return self

    def shutdown(self) -> None:
        for client in self._kazoo:
            try:
                client.stop()
                client.close()
            except Exception:  # best effort on teardown
                pass
        self._kazoo.clear()
        self._raw_kazoo = None
        self.launcher.shutdown()

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    @property
    def data_dir(self) -> Path:
        return self.launcher.data_dir

    @property
    def bootstrap(self) -> str:
        return self.launcher.bootstrap

    @property
    def broker_ids(self) -> list[int]:
        return self.launcher.broker_ids

    def broker(self, broker_id: int) -> BrokerHandle:
        if broker_id not in self.launcher.broker_ids:
            raise KeyError(f"no broker {broker_id} (have {self.launcher.broker_ids})")
        return BrokerHandle(self.launcher, str(broker_id))

    @property
    def brokers(self) -> list[BrokerHandle]:
        return [self.broker(b) for b in self.broker_ids]

    @property
    def zookeeper(self) -> ZooKeeperHandle:
        return ZooKeeperHandle(self.launcher, ZK_ID)

    def status(self) -> dict[str, str]:
        return {s.id: s.state for s in self.launcher.status()}

    wait_for = staticmethod(wait_for)

    def kazoo(self, chroot: bool = True, timeout: float = 10.0) -> Any:
        """A started KazooClient on the cluster's ZooKeeper (inside the chroot by default); closed on shutdown."""
        from kazoo.client import KazooClient

        client = KazooClient(hosts=self.zookeeper.connect if chroot else self.zookeeper.host_port, timeout=timeout)
        client.start(timeout)
        self._kazoo.append(client)
        return client

    def registered_broker_ids(self) -> list[int]:
        """Children of /brokers/ids under the chroot ([] if the node does not exist)."""
        from kazoo.exceptions import NoNodeError

        if self._raw_kazoo is None:
            self._raw_kazoo = self.kazoo(chroot=False)
        try:
            return sorted(int(x) for x in self._raw_kazoo.get_children(CHROOT + "/brokers/ids"))
        except NoNodeError:
            return []
