"""The ZooKeeper runner: a real ZooKeeper from Debian's package on a free loopback port."""

from __future__ import annotations

import pytest

from common.polling import wait_until
from kafkascope.local import process
from kafkascope.local import zookeeper as zkmod
from kafkascope.local.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.skipif(not zkmod.available(), reason="java or Debian's zookeeper package missing")


def test_starts_answers_ruok_mntr_and_stops(tmp_path):
    zk = ZooKeeperServer(tmp_path / "zk").start()
    try:
        assert zk.ruok()
        m = zk.mntr()
        assert m["zk_server_state"] == "standalone"
        assert isinstance(m["zk_znode_count"], int)
        assert "Mode: standalone" in zk.four_letter("srvr")
        cfg = (tmp_path / "zk" / "zoo.cfg").read_text()
        assert f"clientPort={zk.port}" in cfg and "4lw.commands.whitelist=mntr,ruok,srvr,stat" in cfg
        assert "admin.enableServer=false" in cfg
        assert zk.connect("/kafkascope") == f"127.0.0.1:{zk.port}/kafkascope"
        assert zk.four_letter("conf") != "" and "not in the whitelist" in zk.four_letter("conf")
    finally:
        zk.stop()
    assert not zk.is_alive()
    assert not zk.ruok(0.5)


def test_pause_resume_kill(tmp_path):
    with ZooKeeperServer(tmp_path / "zk") as zk:
        zk.pause()
        wait_until(lambda: process.os_state(zk.pid) == process.PAUSED, 5)
        assert not zk.ruok(0.3)  # a stopped JVM answers nothing
        zk.resume()
        wait_until(lambda: zk.ruok(0.5), 10)
        zk.kill()
        assert not zk.is_alive()


def test_data_survives_restart(tmp_path):
    kazoo_client = pytest.importorskip("kazoo.client")
    zk = ZooKeeperServer(tmp_path / "zk").start()
    try:
        c = kazoo_client.KazooClient(zk.connect(), timeout=5)
        c.start(10)
        c.create("/kafkascope/x", b"1", makepath=True)
        c.stop()
        c.close()
        zk.stop()
        zk.start()
        c = kazoo_client.KazooClient(zk.connect("/kafkascope"), timeout=5)
        c.start(10)
        assert c.get("/x")[0] == b"1"
        c.stop()
        c.close()
    finally:
        zk.stop()
