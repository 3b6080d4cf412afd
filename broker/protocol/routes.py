"""The handler table: every API this broker serves, built in one place from each handler module's ``APIS``."""

from __future__ import annotations

from broker.protocol.api import ApiSpec
from broker.protocol.handlers import (
    acls,
    admin,
    client_quotas,
    cluster_admin,
    consumer_groups,
    fetch,
    group_configs,
    groups,
    log_dirs,
    metadata,
    produce,
    sasl_auth,
    scram_credentials,
    transactions,
)
from broker.protocol.handlers.api_versions import api_versions_spec

HANDLER_MODULES = (produce, fetch, metadata, groups, consumer_groups, admin, cluster_admin, acls, scram_credentials,
                   transactions, log_dirs, group_configs, client_quotas)
# Served (and advertised) only when a listener speaks SASL. The SCRAM credential APIs are not among them: Kafka
# serves those on every listener, so users can be created before any listener asks for SCRAM.
SASL_MODULES = (sasl_auth,)


def handler_table(sasl: bool = False) -> dict[int, ApiSpec]:
    """api_key -> ApiSpec for every served API, ApiVersions included (with `sasl`, SaslHandshake and
    SaslAuthenticate too); an API key listed twice is a bug."""
    table: dict[int, ApiSpec] = {}
    modules = HANDLER_MODULES + (SASL_MODULES if sasl else ())
    for spec in (*(s for m in modules for s in m.APIS), api_versions_spec(table)):
        if spec.api_key in table:
            raise RuntimeError(f"api key {spec.api_key} has two handlers")
        table[spec.api_key] = spec
    return table
