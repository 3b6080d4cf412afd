"""Offset tombstones: ignored as Burrow does (the group stays until expire-group), or, with the explicit
`storage.drop-on-offset-tombstone` / `--drop-on-offset-tombstone`, the partition's window is dropped."""

from __future__ import annotations

import argparse

import pytest

from broker.coordinator.offsets_schema import (
    OffsetCommitKey,
    OffsetCommitValue,
    encode_key,
    encode_offset_commit_value,
)
from kafkascope.cli import lag as lag_cli
from kafkascope.cli import slo as slo_cli
from lagmonitor import history
from lagmonitor.config import ConfigError, LagConfig, load_config
from lagmonitor.evaluator import EvaluatorConfig
from lagmonitor.monitor import LagMonitor
from lagmonitor.replay import apply_event
from lagmonitor.rules import Status
from lagmonitor.storage import LagStorage, StorageConfig

NOW = 1_700_000_000_000


def monitor(drop: bool) -> LagMonitor:
    m = LagMonitor(LagConfig(storage=StorageConfig(intervals=3, drop_on_offset_tombstone=drop),
                             evaluator=EvaluatorConfig(expire_cache_s=60)))
    m.broker_offsets({("t", 0): 100, ("t", 1): 100}, {"t": 2}, NOW)
    return m


def feed(m: LagMonitor, position: int, partition: int, offset: int | None) -> None:
    """One __consumer_offsets record of group g as our broker writes it (offset None: its tombstone)."""
    value = None if offset is None else encode_offset_commit_value(OffsetCommitValue(offset, "", NOW - 1000))
    m.apply_record(0, position, encode_key(OffsetCommitKey("g", "t", partition)), value, NOW)


def test_burrow_default_keeps_the_window_and_the_group():
    m = monitor(drop=False)
    feed(m, 0, 0, 60)
    before = m.evaluator.group("g", NOW)
    feed(m, 1, 0, None)
    assert m.storage.fetch_group("g", NOW)[0].offsets[-1].offset == 60
    after = m.evaluator.group("g", NOW + 61_000)     # past the cache: a fresh evaluation
    assert after.status is before.status is not Status.NOTFOUND and after.totallag == 40
    assert "g" in m.storage.groups


def test_drop_on_offset_tombstone_drops_the_window_then_the_group():
    m = monitor(drop=True)
    feed(m, 0, 0, 60)
    feed(m, 1, 1, 70)
    assert m.evaluator.group("g", NOW).totallag == 70
    feed(m, 2, 0, None)
    assert [v.offsets for v in m.storage.fetch_group("g", NOW)][0] == []
    assert m.evaluator.group("g", NOW).totallag == 30    # the cached evaluation was invalidated
    feed(m, 3, 1, None)
    assert "g" not in m.storage.groups and m.evaluator.group("g", NOW).status is Status.NOTFOUND


@pytest.mark.parametrize("drop", [False, True])
def test_history_replay_applies_the_same_option(drop):
    storage = LagStorage(StorageConfig(intervals=3, drop_on_offset_tombstone=drop))
    apply_event(storage, "g", NOW, history.BROKER_OFFSET, "t", 0, 100, None, None, 1)
    apply_event(storage, "g", NOW, history.COMMIT, "t", 0, 60, 1, NOW, None)
    apply_event(storage, "g", NOW, history.OFFSET_DELETE, "t", 0, None, None, None, None)
    assert ("g" in storage.groups) is not drop


def test_config_key_is_a_boolean_off_by_default():
    assert load_config({}).storage.drop_on_offset_tombstone is False
    assert load_config({"storage": {"drop-on-offset-tombstone": True}}).storage.drop_on_offset_tombstone is True
    with pytest.raises(ConfigError, match="drop-on-offset-tombstone: expected true or false"):
        load_config({"storage": {"drop-on-offset-tombstone": "yes"}})


@pytest.mark.parametrize("argv", [["lag"], ["slo", "lag-history", "--input", "i", "--out", "o"]])
def test_cli_flag_sets_the_storage_option(tmp_path, argv):
    p = argparse.ArgumentParser()
    sub = p.add_subparsers()
    lag_cli.register(sub)
    slo_cli.register(sub)
    assert lag_cli.lag_config(p.parse_args(argv)).storage.drop_on_offset_tombstone is False
    assert lag_cli.lag_config(p.parse_args([*argv, "--drop-on-offset-tombstone"])).storage.drop_on_offset_tombstone
    yaml_file = tmp_path / "lag.yaml"
    yaml_file.write_text("storage:\n  intervals: 4\n")
    config = lag_cli.lag_config(p.parse_args([*argv, "--config", str(yaml_file), "--drop-on-offset-tombstone"]))
    assert (config.storage.intervals, config.storage.drop_on_offset_tombstone) == (4, True)
