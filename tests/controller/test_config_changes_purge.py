"""/config/changes is purged of notifications older than 15 minutes after each round of changes, as Kafka's
ZkNodeChangeNotificationListener does, so a cluster whose configs change often (replication throttles set and
cleared by every reassignment) does not grow the node without end. A fake ZooKeeper: the listener's logic only."""

from __future__ import annotations

from types import SimpleNamespace as NS

from kazoo.exceptions import NoNodeError

from broker.config_entity import CHANGES, ConfigChangeListener, change_notification


class FakeZk:
    def __init__(self) -> None:
        self.nodes: dict[str, tuple[bytes, float]] = {}    # path -> (data, ctime ms)
        self.gone_meanwhile: set[str] = set()              # deleted by "another broker" between exists and delete

    def add(self, n: int, entity_path: str, ctime: float) -> str:
        name = f"config_change_{n:010d}"
        self.nodes[f"{CHANGES}/{name}"] = (change_notification(entity_path), ctime)
        return name

    def get(self, path: str):
        return self.nodes[path][0], NS(ctime=self.nodes[path][1])

    def exists(self, path: str):
        return NS(ctime=self.nodes[path][1]) if path in self.nodes else None

    def delete(self, path: str) -> None:
        if path in self.gone_meanwhile or path not in self.nodes:
            self.nodes.pop(path, None)
            raise NoNodeError(path)
        del self.nodes[path]


def test_notifications_older_than_15_minutes_are_purged_after_a_round_of_changes():
    zk, now = FakeZk(), 10_000_000.0
    listener = ConfigChangeListener(zk, now_ms=lambda: now)
    seen: list[str] = []
    listener.subscribe("brokers", seen.append)
    old = [zk.add(i, "brokers/1", now - 16 * 60_000) for i in range(3)]
    zk.gone_meanwhile.add(f"{CHANGES}/{old[1]}")
    recent = zk.add(3, "brokers/<default>", now - 60_000)
    new = zk.add(4, "brokers/2", now)
    listener._on_changes([*old, recent, new])
    assert seen == ["1", "1", "1", "<default>", "2"]
    assert sorted(zk.nodes) == [f"{CHANGES}/{recent}", f"{CHANGES}/{new}"]
