"""Where SCRAM credentials live: a standalone broker's local metadata directory, one JSON file shaped like
Kafka's `/config/users/<user>` znodes ({user: {"SCRAM-SHA-512": "salt=...,stored_key=...,..."}})."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from broker.config_entity import (
    ConfigChangeListener,
    desanitize,
    sanitize,
    write_entity_config,
)
from broker.controller.zk_paths import decode_entity_config
from broker.errors import ErrorCode, KafkaError
from broker.security import scram
from broker.security.scram import ScramCredential, ScramMechanism
from common.atomic_file import write_json


class ScramCredentialStore(Protocol):
    """Where the SCRAM server reads credentials and AlterUserScramCredentials writes them."""

    def lookup(self, username: str, mechanism: str) -> ScramCredential | None: ...

    def all(self) -> dict[str, dict[str, ScramCredential]]: ...

    def set(self, user: str, mechanism: ScramMechanism, credential: ScramCredential | None) -> None: ...


class LocalScramCredentials:
    """SCRAM credentials of a standalone broker, kept in `<data dir>/__scram_credentials.json`."""

    FILE = "__scram_credentials.json"

    def __init__(self, data_dir: Path, on_user_change: Callable[[str], None] | None = None) -> None:
        self._path = data_dir / self.FILE
        self._on_user_change = on_user_change   # the client quotas: a SCRAM user is a quota entity too
        self._users: dict[str, dict[str, str]] = (
            json.loads(self._path.read_text()) if self._path.exists() else {})

    def lookup(self, username: str, mechanism: str) -> ScramCredential | None:
        """The ScramSaslServer's credential source."""
        text = self._users.get(username, {}).get(mechanism)
        return None if text is None else scram.credential_from_string(text)

    def all(self) -> dict[str, dict[str, ScramCredential]]:
        return {u: {m: scram.credential_from_string(t) for m, t in creds.items()} for u, creds in self._users.items()}

    def set(self, user: str, mechanism: ScramMechanism, credential: ScramCredential | None) -> None:
        """Store (or, with None, delete) one mechanism's credential of `user`, durably."""
        before = self._users.get(user)
        creds = dict(before or {})
        if credential is None:
            creds.pop(mechanism.mechanism_name, None)
        else:
            creds[mechanism.mechanism_name] = scram.credential_to_string(credential)
        users = {**self._users, user: creds} if creds else {u: c for u, c in self._users.items() if u != user}
        try:
            write_json(self._path, users)
        except OSError as e:   # nothing changed: logins keep the credentials the file has
            raise KafkaError(ErrorCode.kafka_storage_error, f"The SCRAM file {self._path} could not be written: {e}"
                             ) from None
        self._users = users
        if self._on_user_change is not None:
            self._on_user_change(user)


class ZkScramCredentials:
    """SCRAM credentials of a cluster, in ZooKeeper as Kafka keeps them: `/config/users/<sanitized user>` holds
    {"version":1,"config":{"SCRAM-SHA-512":"salt=..."}}, and every change is announced by a sequential
    `/config/changes/config_change_` node {"version":2,"entity_path":"users/<user>"}.

    As Kafka's CredentialCache: `load` reads every user and `changes` (the metadata's one listener on
    /config/changes) delivers each later change; a login reads the cache, never ZooKeeper, so it neither waits on a
    ZooKeeper round trip on the event loop nor fails (or hangs) while ZooKeeper is away. Change callbacks run on
    kazoo's thread; a dict swap per user is atomic for readers. `zk` is a connected KazooClient (the metadata
    store's)."""

    USERS = "/config/users"

    def __init__(self, zk: object, changes: ConfigChangeListener) -> None:
        self._zk: Any = zk
        self._cache: dict[str, dict[str, ScramCredential]] = {}
        changes.subscribe("users", self._on_user_change)

    def load(self) -> None:
        """Read every user's credentials (blocking; the client is connected)."""
        self._cache = self._read_all()

    def _on_user_change(self, sanitized: str) -> None:
        if "/" not in sanitized:   # users/<user>/clients/<client-id> is a quota entity, not a user
            self._refresh(desanitize(sanitized))

    def _refresh(self, user: str) -> None:
        data = self._read(user)
        creds = scram.credentials_from_user_config(data) if data else {}
        if creds:
            self._cache[user] = creds
        else:
            self._cache.pop(user, None)

    def _read(self, user: str) -> bytes | None:
        from kazoo.exceptions import NoNodeError

        try:
            data, _ = self._zk.get(scram.user_config_path(user))
        except NoNodeError:
            return None
        return data

    def _read_all(self) -> dict[str, dict[str, ScramCredential]]:
        from kazoo.exceptions import NoNodeError

        try:
            names = self._zk.get_children(self.USERS)
        except NoNodeError:
            return {}
        out = {}
        for name in names:
            user = desanitize(name)
            data = self._read(user)
            if data:
                out[user] = scram.credentials_from_user_config(data)
        return out

    def lookup(self, username: str, mechanism: str) -> ScramCredential | None:
        return self._cache.get(username, {}).get(mechanism)

    def all(self) -> dict[str, dict[str, ScramCredential]]:
        return {user: dict(creds) for user, creds in self._cache.items()}

    def set(self, user: str, mechanism: ScramMechanism, credential: ScramCredential | None) -> None:
        config = scram.config_with_credential(decode_entity_config(self._read(user)), mechanism, credential)
        write_entity_config(self._zk, f"users/{sanitize(user)}", config)
        self._refresh(user)   # this broker at once; the others on the notification
