"""A port probe on a TLS listener is not a failed authentication, plaintext bytes are (as on Kafka 3.9: the same
body runs against Kafka in tests/interop/test_security_interop.py)."""

from __future__ import annotations

import pytest

from tests.scenarios.security import port_probe_is_no_failed_authentication


@pytest.mark.parametrize("listener", ["SASL_SSL", "SSL"])
def test_port_probe_is_no_failed_authentication(secured, listener):
    port_probe_is_no_failed_authentication(secured.ports[listener],
                                           lambda: secured.metric("failed_authentication_total", listener))
