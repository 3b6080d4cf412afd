"""Joining ZooKeeper: the client, the chroot, /cluster/id and this broker's ephemeral registration."""

from __future__ import annotations

import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.retry import KazooRetry

from broker.controller import zk_paths as zp
from broker.controller.zk_client import PollingHandler, TimedKazooClient
from broker.metadata import BrokerInfo, new_cluster_id


def split_connect(connect: str) -> tuple[str, str]:
    """"h1:p1,h2:p2/chroot" -> ("h1:p1,h2:p2", "/chroot")."""
    i = connect.find("/")
    if i < 0:
        return connect, ""
    return connect[:i], connect[i:].rstrip("/")


def new_client(connect: str, session_timeout_ms: int) -> TimedKazooClient:
    """The broker's client for `zookeeper.connect` (chroot included), not yet started: connection attempts
    retry forever (the cache serves meanwhile), a request three times."""
    hosts, chroot = split_connect(connect)
    return TimedKazooClient(hosts=hosts + chroot, timeout=session_timeout_ms / 1000, handler=PollingHandler(),
                            connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
                            command_retry=KazooRetry(max_tries=3, delay=0.1, max_delay=1.0))


def ensure_chroot(connect: str, session_timeout_s: float, connection_timeout_s: float) -> None:
    """Create the chroot of `connect` if missing (a client inside a missing chroot cannot create it)."""
    hosts, chroot = split_connect(connect)
    if not chroot:
        return
    boot = KazooClient(hosts=hosts, timeout=session_timeout_s)
    boot.start(timeout=connection_timeout_s)
    try:
        boot.ensure_path(chroot)
    finally:
        boot.stop()
        boot.close()


def init_cluster_id(zk: KazooClient, wanted: str, connect: str) -> str:
    """/cluster/id: create it (with `wanted`, or a new id) if missing; `wanted` must match an existing one."""
    try:
        data, _ = zk.get(zp.CLUSTER_ID)
    except NoNodeError:
        try:
            zk.create(zp.CLUSTER_ID, zp.encode_cluster_id(wanted or new_cluster_id()), makepath=True)
        except NodeExistsError:
            pass
        data, _ = zk.get(zp.CLUSTER_ID)
    found = zp.decode_cluster_id(data)
    if wanted and found != wanted:
        raise RuntimeError(f"cluster.id {wanted} does not match the cluster id {found} in ZooKeeper ({connect})")
    return found


def register_broker(zk: KazooClient, me: BrokerInfo, deadline_s: float) -> None:
    """Create the ephemeral /brokers/ids/<id>; wait out a previous session's node (restart after kill -9)."""
    path = zp.broker_path(me.node_id)
    data = zp.encode_broker(zp.BrokerRegistration(me.node_id, me.host, me.port, me.rack, me.listeners))
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            zk.create(path, data, ephemeral=True, makepath=True)
            return
        except NodeExistsError:
            try:
                _, stat = zk.get(path)
            except NoNodeError:
                continue
            if stat.ephemeralOwner == zk.client_id[0]:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"broker id {me.node_id} is already registered in ZooKeeper "
                                   f"(session 0x{stat.ephemeralOwner:x})") from None
            ev = threading.Event()
            if zk.exists(path, watch=lambda _e, ev=ev: ev.set()):
                ev.wait(min(1.0, max(0.0, deadline - time.monotonic())))
