"""`kafkascope up --security sasl_ssl`: the local stack secured end to end.

The cluster's security kit (kafkascope/local/security.py: CA, server certificate, SASL_SSL listeners, ACLs, the
admin's client.properties) is made first, in the place the cluster launcher looks for it, so the brokers and
every client share it. Every HTTP endpoint (the brokers', xmonitor's, the lag monitor's and the ZooKeeper
exporter's /metrics, the Burrow API, the node exporter) then serves TLS with the kit's server certificate and
basic auth for one user, from one exporter-toolkit web config (docs/web-config.md); Prometheus scrapes them over
https, trusting the kit's CA, with that user's password from a 0600 file. Prometheus' own UI and the Streamlit
page stay plain HTTP on 127.0.0.1: neither has a login of its own, and both only show what the secured endpoints
gave them.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import bcrypt
import yaml

from kafkascope.local.security import SecurityKit

SCRAPE_USER = "prometheus"
WEB_CONFIG = "web-config.yml"
PASSWORD_FILE = "scrape-password"


@dataclass(frozen=True)
class StackSecurity:
    kit: SecurityKit
    directory: Path          # the stack's security/ dir: web config and the scrape password

    @classmethod
    def create(cls, kit_dir: Path, directory: Path) -> StackSecurity:
        """The kit (kept from an earlier run of the same data dir, else new) and the web config for it."""
        kit = SecurityKit.load_or_create(kit_dir)
        directory.mkdir(parents=True, exist_ok=True)
        password_path = directory / PASSWORD_FILE
        if not password_path.is_file():
            _write_private(password_path, secrets.token_urlsafe(16))
        password = password_path.read_text().strip()
        web = {"tls_server_config": {"cert_file": str(kit.certs["server_cert"]),
                                     "key_file": str(kit.certs["server_key"])},
               "basic_auth_users": {SCRAPE_USER: bcrypt.hashpw(password.encode(), bcrypt.gensalt(10)).decode()}}
        _write_private(directory / WEB_CONFIG, yaml.safe_dump(web, sort_keys=False))
        return cls(kit, directory)

    @property
    def web_config(self) -> Path:
        return self.directory / WEB_CONFIG

    @property
    def password_file(self) -> Path:
        return self.directory / PASSWORD_FILE

    @property
    def client_properties(self) -> Path:
        """The admin's client.properties (Kafka's Java names), written by the kit."""
        path = self.kit.client_properties_path
        if not path.is_file():
            self.kit.write_client_properties()
        return path

    def scrape_settings(self) -> dict:
        """What a Prometheus scrape_config needs to reach an endpoint served with web_config."""
        return {"scheme": "https", "tls_config": {"ca_file": str(self.kit.certs["ca"])},
                "basic_auth": {"username": SCRAPE_USER, "password_file": str(self.password_file)}}


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
