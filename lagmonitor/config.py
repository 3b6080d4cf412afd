"""`lag.yaml`: Burrow's knobs (same names and defaults) plus our state, history and HTTP settings."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

import yaml

from lagmonitor.evaluator import EvaluatorConfig
from lagmonitor.storage import StorageConfig


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class CollectorConfig:
    offset_refresh_s: float = 10.0
    topic_refresh_s: float = 60.0
    offsets_topic: str = "__consumer_offsets"
    group_allowlist: str | None = None
    group_denylist: str | None = None
    # Ours: a commit up to this many offsets below the LSO is checked by reading the gap (markers only = caught up,
    # docs/lag-monitor.md §6.2); 0 = never.
    marker_check_max: int = 100


@dataclass(frozen=True)
class LagConfig:
    cluster: str = "local"
    storage: StorageConfig = field(default_factory=StorageConfig)
    evaluator: EvaluatorConfig = field(default_factory=EvaluatorConfig)
    collector: CollectorConfig = field(default_factory=CollectorConfig)
    http_port: int = 8000
    web_config_file: str | None = None    # exporter-toolkit web config (TLS, basic auth) for the HTTP API
    state_dir: str | None = None          # snapshot directory; None = no persistence
    snapshot_interval_s: float = 30.0
    history_dir: str | None = None        # Parquet offset history; None = off
    history_flush_s: float = 60.0


# yaml section → (dataclass, {yaml key: field name})
_SECTIONS = {
    "storage": (StorageConfig, {"intervals": "intervals", "min-distance": "min_distance_s",
                                "expire-group": "expire_group_s", "group-allowlist": "group_allowlist",
                                "group-denylist": "group_denylist",
                                "drop-on-offset-tombstone": "drop_on_offset_tombstone"}),
    "evaluator": (EvaluatorConfig, {"allowed-lag": "allowed_lag", "minimum-complete": "minimum_complete",
                                    "expire-cache": "expire_cache_s", "status-lag": "status_lag"}),
    "collector": (CollectorConfig, {"offset-refresh": "offset_refresh_s", "topic-refresh": "topic_refresh_s",
                                    "offsets-topic": "offsets_topic", "group-allowlist": "group_allowlist",
                                    "group-denylist": "group_denylist", "marker-check-max": "marker_check_max"}),
}
_TOP = {"cluster": "cluster", "http-port": "http_port", "web-config-file": "web_config_file", "state-dir": "state_dir",
        "snapshot-interval": "snapshot_interval_s", "history-dir": "history_dir", "history-flush": "history_flush_s"}


def _typed(cls, name: str, value, where: str):
    ftype = {f.name: f.type for f in fields(cls)}[name]
    if value is None and "None" in str(ftype):
        return None
    if str(ftype) == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    want = float if "float" in str(ftype) else int if "int" in str(ftype) else str
    if isinstance(value, bool) or not isinstance(value, (int, float) if want is float else want):
        raise ConfigError(f"{where}: expected {want.__name__}, got {value!r}")
    return want(value)


def load_config(data: dict | None) -> LagConfig:
    """Build a LagConfig from parsed YAML; unknown or Burrow-retired keys are errors."""
    data = data or {}
    kwargs = {}
    for key, value in data.items():
        if key in _SECTIONS:
            cls, names = _SECTIONS[key]
            sub = {}
            for k, v in (value or {}).items():
                if k.endswith(("-whitelist", "-blacklist")):
                    raise ConfigError(f"{key}.{k}: renamed to {k.replace('white', 'allow').replace('black', 'deny')}")
                if k not in names:
                    raise ConfigError(f"{key}.{k}: unknown key (known: {', '.join(names)})")
                sub[names[k]] = _typed(cls, names[k], v, f"{key}.{k}")
            try:
                kwargs[key] = cls(**sub)
            except ValueError as e:   # a value the section refuses (evaluator.status-lag)
                raise ConfigError(f"{key}.{e}") from e
        elif key in _TOP:
            kwargs[_TOP[key]] = _typed(LagConfig, _TOP[key], value, key)
        else:
            raise ConfigError(f"{key}: unknown key (known: {', '.join([*_SECTIONS, *_TOP])})")
    return LagConfig(**kwargs)


def read_config(path: str | Path | None) -> LagConfig:
    if path is None:
        return LagConfig()
    try:
        return load_config(yaml.safe_load(Path(path).read_text()))
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: {e}") from e
