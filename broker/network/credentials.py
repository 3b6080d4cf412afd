"""Where SCRAM credentials live: a standalone broker's local metadata directory, one JSON file shaped like
Kafka's `/config/users/<user>` znodes ({user: {"SCRAM-SHA-512": "salt=...,stored_key=...,..."}})."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Protocol

from broker.security import scram
from broker.security.scram import ScramCredential, ScramMechanism


class ScramCredentialStore(Protocol):
    """Where the SCRAM server reads credentials and AlterUserScramCredentials writes them."""

    def lookup(self, username: str, mechanism: str) -> ScramCredential | None: ...

    def all(self) -> dict[str, dict[str, ScramCredential]]: ...

    def set(self, user: str, mechanism: ScramMechanism, credential: ScramCredential | None) -> None: ...


class LocalScramCredentials:
    """SCRAM credentials of a standalone broker, kept in `<data dir>/__scram_credentials.json`."""

    FILE = "__scram_credentials.json"

    def __init__(self, data_dir: Path) -> None:
        self._path = data_dir / self.FILE
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
        creds = self._users.setdefault(user, {})
        if credential is None:
            creds.pop(mechanism.mechanism_name, None)
        else:
            creds[mechanism.mechanism_name] = scram.credential_to_string(credential)
        if not creds:
            del self._users[user]
        tmp = self._path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump(self._users, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._path)
