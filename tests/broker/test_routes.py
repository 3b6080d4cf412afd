"""The handler table (broker/protocol/routes.py): built in one place, one handler per API key, and exactly the APIs
ApiVersions advertises."""

import asyncio
import inspect
from collections import Counter

import pytest

from broker.protocol import routes
from broker.protocol.api import ApiSpec
from broker.protocol.handlers.api_versions import API_VERSIONS_KEY


def test_api_versions_advertises_exactly_the_apis_with_a_handler():
    table = routes.handler_table()
    body = asyncio.run(table[API_VERSIONS_KEY].handle(None, None))
    advertised = Counter(a["api_key"] for a in body["api_keys"])
    assert set(advertised.values()) == {1}            # each API once
    assert set(advertised) == set(table)               # ApiVersions included, nothing without a handler
    assert all(table[k].api_key == k for k in table)


def test_every_handler_module_lists_each_of_its_handlers_once():
    listed = Counter(s.handle for m in routes.HANDLER_MODULES for s in m.APIS)
    assert set(listed.values()) == {1}
    for m in routes.HANDLER_MODULES:
        defined = {fn for name, fn in inspect.getmembers(m, inspect.iscoroutinefunction)
                   if name.startswith("handle_") and fn.__module__ == m.__name__}
        assert defined == {s.handle for s in m.APIS}, m.__name__


def test_an_api_key_with_two_handlers_is_refused(monkeypatch):
    class Twice:
        async def handle(ctx, req):
            return {}

        APIS = (ApiSpec(3, 0, 1, handle),)

    monkeypatch.setattr(routes, "HANDLER_MODULES", (*routes.HANDLER_MODULES, Twice))
    with pytest.raises(RuntimeError, match="api key 3 has two handlers"):
        routes.handler_table()


def test_sasl_apis_are_served_only_with_a_sasl_listener():
    sasl_keys = {17, 36}  # SaslHandshake, SaslAuthenticate
    assert not sasl_keys & set(routes.handler_table())
    assert sasl_keys <= set(routes.handler_table(sasl=True))
    # Describe/AlterUserScramCredentials on every listener, as Kafka: users exist before SCRAM is switched on
    assert {50, 51} <= set(routes.handler_table())
