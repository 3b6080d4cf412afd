"""The handler table: every API this broker serves, built in one place from each handler module's ``APIS``."""

from __future__ import annotations

from broker.protocol.api import ApiSpec
from broker.protocol.handlers import acls, admin, cluster_admin, fetch, groups, metadata, produce
from broker.protocol.handlers.api_versions import api_versions_spec

HANDLER_MODULES = (produce, fetch, metadata, groups, admin, cluster_admin, acls)


def handler_table() -> dict[int, ApiSpec]:
    """api_key -> ApiSpec for every served API, ApiVersions included; an API key listed twice is a bug."""
    table: dict[int, ApiSpec] = {}
    for spec in (*(s for m in HANDLER_MODULES for s in m.APIS), api_versions_spec(table)):
        if spec.api_key in table:
            raise RuntimeError(f"api key {spec.api_key} has two handlers")
        table[spec.api_key] = spec
    return table
