"""The standalone broker's state files (topics, ACLs, SCRAM credentials, producer ids) on a full disk. The metadata file: a change the file cannot take is undone and answered
KAFKA_STORAGE_ERROR, a topic deletion frees the topic's logs first (that is how an operator makes room), and a
broker restarted on a full disk starts. Before, the OSError escaped the handler (the connection closed) with the
change kept in memory only, and DeleteTopics could not free a full disk."""

from __future__ import annotations

import errno
import json

import pytest

import common.atomic_file
from broker.errors import ErrorCode, KafkaError
from broker.metadata import BrokerInfo, LocalMetadata
from broker.security import scram
from broker.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
)


class Disk:
    """os.fsync of the state files' writer: fails with ENOSPC while `full`."""

    def __init__(self) -> None:
        self.full = False

    def fsync(self, fd: int) -> None:
        if self.full:
            raise OSError(errno.ENOSPC, "No space left on device")


class Listener:
    """Deleting a topic's logs makes room."""

    def __init__(self, disk: Disk, frees_room: bool) -> None:
        self.disk, self.frees_room, self.deleted = disk, frees_room, []

    def on_topic_deleted(self, name: str) -> None:
        self.deleted.append(name)
        if self.frees_room:
            self.disk.full = False

    def on_topic_config_changed(self, name: str) -> None:
        pass

    def on_partition_state(self, topic: str, partition: int, state: object) -> None:
        pass


@pytest.fixture
def disk(monkeypatch):
    d = Disk()
    monkeypatch.setattr(common.atomic_file.os, "fsync", d.fsync)
    return d


def _listed(tmp_path) -> list[str]:
    return [t["name"] for t in json.loads((tmp_path / LocalMetadata.FILE).read_text())["topics"]]


def _store(tmp_path) -> LocalMetadata:
    return LocalMetadata(tmp_path, BrokerInfo(0, "127.0.0.1", 9092))


def test_changes_the_file_cannot_take_are_undone_and_answered(tmp_path, disk):
    md = _store(tmp_path)
    md.create_topic("kept", 1, 1, {"retention.ms": "1000"})
    disk.full = True
    with pytest.raises(KafkaError) as e:
        md.create_topic("new", 1, 1, {})
    assert e.value.code == ErrorCode.kafka_storage_error and "No space left" in e.value.message
    with pytest.raises(KafkaError):
        md.add_partitions("kept", 3)
    with pytest.raises(KafkaError):
        md.set_topic_configs("kept", {"retention.ms": "5"})
    kept = md.topic("kept")
    assert md.topic("new") is None and kept is not None and (kept.partitions, kept.configs) == (1, {"retention.ms": "1000"})
    assert not (tmp_path / "__cluster_metadata.tmp").exists()   # no part-written copy left holding room
    disk.full = False
    md.create_topic("new", 1, 1, {})
    assert _listed(tmp_path) == ["kept", "new"]


def test_a_deletion_on_a_full_disk_frees_the_logs_first(tmp_path, disk):
    md = _store(tmp_path)
    listener = Listener(disk, frees_room=True)
    md._listener = listener   # the broker's ClusterListener; only deletion is watched here
    md.create_topic("filler", 1, 1, {})
    md.create_topic("other", 1, 1, {})
    disk.full = True
    md.delete_topic("filler")
    assert listener.deleted == ["filler"] and md.topic("filler") is None and _listed(tmp_path) == ["other"]


def test_a_deletion_stands_when_the_file_still_cannot_be_written(tmp_path, disk, caplog):
    md = _store(tmp_path)
    md._listener = Listener(disk, frees_room=False)
    md.create_topic("filler", 1, 1, {})
    disk.full = True
    md.delete_topic("filler")
    assert md.topic("filler") is None and "comes back empty" in caplog.text
    disk.full = False
    md.create_topic("next", 1, 1, {})   # the next change writes the file
    assert _listed(tmp_path) == ["next"]


def test_a_broker_restarted_on_a_full_disk_starts(tmp_path, disk):
    _store(tmp_path).create_topic("t", 1, 1, {})
    disk.full = True
    assert _store(tmp_path).topic("t") is not None


def _binding(principal: str) -> AclBinding:
    return AclBinding(ResourcePattern(ResourceType.TOPIC, "t"),
                      AccessControlEntry(principal, "*", AclOperation.READ, AclPermissionType.ALLOW))


def test_acl_and_scram_changes_the_disk_cannot_take_are_undone(tmp_path, disk):
    """CreateAcls, DeleteAcls and AlterUserScramCredentials: KAFKA_STORAGE_ERROR, and the authorizer's store
    (the same object the authorizer reads) and the logins keep what the files hold."""
    md = _store(tmp_path)
    acls = md.acl_storage()
    acls.add([_binding("User:alice")])
    store = acls.store
    disk.full = True
    with pytest.raises(KafkaError) as e:
        acls.add([_binding("User:bob")])
    assert e.value.code == ErrorCode.kafka_storage_error
    with pytest.raises(KafkaError):
        acls.remove(AclBindingFilter())
    assert acls.store is store and store.acls() == [_binding("User:alice")]
    creds = md.scram_credentials()
    credential = scram.credential_from_salted_password(scram.SCRAM_SHA_256, b"salt", b"x" * 32, 4096)
    with pytest.raises(KafkaError):
        creds.set("alice", scram.SCRAM_SHA_256, credential)
    assert creds.lookup("alice", "SCRAM-SHA-256") is None
    disk.full = False
    creds.set("alice", scram.SCRAM_SHA_256, credential)
    assert creds.lookup("alice", "SCRAM-SHA-256") is not None


def test_no_producer_id_block_on_a_full_disk_is_retriable(tmp_path, disk):
    """InitProducerId while the block file cannot be written: COORDINATOR_LOAD_IN_PROGRESS (Kafka's answer while
    no block is ready), and the ids claimed before are never handed out again."""
    md = _store(tmp_path)
    assert md.claim_producer_id_block(1000) == 0
    disk.full = True
    with pytest.raises(KafkaError) as e:
        md.claim_producer_id_block(1000)
    assert e.value.code == ErrorCode.coordinator_load_in_progress
    disk.full = False
    assert md.claim_producer_id_block(1000) == 1000
