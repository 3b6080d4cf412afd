"""The security alerts (dashboards/build.py `_security_alerts`): `promtool test rules` cases that fire and that
stay quiet, and a live scrape of a broker with SASL and SSL listeners that exports every series they use."""

from __future__ import annotations

import shutil
import urllib.request

import pytest

from dashboards import build
from tests.dashboards.test_rules import B0, B1, I0, I1, _run, case, expect, needs_promtool

M = build.M
DAY = 86400


def security_cases() -> dict[str, list[dict]]:
    c: dict[str, list[dict]] = {}
    a = "KafkaAuthenticationFailuresHigh"
    f = M.auth_failed + '{{{},listener="{}",networkProcessor="{}"}}'
    ok = M.auth_succeeded + '{{{},listener="{}",networkProcessor="{}"}}'
    c[a] = [case(a, [
        (f.format(B0, "SASL_SSL", 0), "0+60x30"), (f.format(B0, "SASL_SSL", 1), "0+60x30"),  # 2/s over 2 processors
        (f.format(B1, "SASL_SSL", 0), "0+3x30"),                                           # 0.05/s: quiet
        (f.format(B1, "SSL", 0), "0x30"),
        (ok.format(B1, "SSL", 0), "0+6000x30")],                                           # successes: quiet
        [("3m", []), ("5m", []), ("10m", [expect(a, 2, **I0, listener="SASL_SSL")])])]
    a = "KafkaAuthorizationFailuresHigh"
    e = M.errors + '{{{},request="{}",error="{}"}}'
    c[a] = [case(a, [
        (e.format(B0, "Produce", "TOPIC_AUTHORIZATION_FAILED"), "0+60x30"),   # 1/s for 10m: fires
        (e.format(B0, "Produce", "NOT_ENOUGH_REPLICAS"), "0+600x30"),         # not an authorization error
        (e.format(B1, "SaslAuthenticate", "SASL_AUTHENTICATION_FAILED"), "0+600x30"),  # authentication, not ACLs
        (e.format(B1, "JoinGroup", "GROUP_AUTHORIZATION_FAILED"), "0+3x30")],  # 0.05/s: quiet
        [("5m", []), ("9m", []),
         ("15m", [expect(a, 1, **I0, request="Produce", error="TOPIC_AUTHORIZATION_FAILED")])])]
    a = "KafkaTLSCertificateExpiringSoon"
    n = M.cert_not_after + '{{{},listener="{}"}}'
    at = 15 * 60  # the evaluation time of the firing check (promtool starts at the epoch)
    c[a] = [case(a, [
        (n.format(B0, "SASL_SSL"), f"{at + 10 * DAY}x30"),   # 10 days left: ticket
        (n.format(B0, "SSL"), f"{at + 2 * DAY}x30"),         # 2 days: ticket and page
        (n.format(B1, "SSL"), "0x30"),                       # expired 15m ago: ticket and page
        (n.format(B1, "SASL_SSL"), f"{90 * DAY}x30")],       # 90 days: quiet
        [("5m", []),                                         # pending (for: 10m)
         ("15m", [expect(a, 10 * DAY, severity="ticket", **I0, listener="SASL_SSL"),
                  expect(a, 2 * DAY, severity="ticket", **I0, listener="SSL"),
                  expect(a, -at, severity="ticket", **I1, listener="SSL"),
                  expect(a, 2 * DAY, severity="page", **I0, listener="SSL"),
                  expect(a, -at, severity="page", **I1, listener="SSL")])])]
    return c


SECURITY = security_cases()


def test_security_alerts_are_in_their_own_group():
    groups = {g["name"]: {r["alert"] for r in g["rules"]} for g in build.alerting_rules()["groups"]}
    assert groups["kafkascope-security"] == set(SECURITY)


def test_certificate_alert_says_it_needs_a_kafkascope_broker():
    for sev in ("ticket", "page"):
        desc = expect("KafkaTLSCertificateExpiringSoon", 0, severity=sev)["exp_annotations"]["description"]
        assert "on Apache Kafka this alert never fires" in desc


@needs_promtool
@pytest.mark.parametrize("alert", sorted(SECURITY))
def test_security_alert_fires_and_stays_quiet(tmp_path, alert):
    _run(tmp_path, alert, SECURITY[alert])


@pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl CLI makes the test certificates")
def test_a_secured_broker_exports_the_series_the_rules_use(tmp_path):
    """SASL_SSL and SSL listeners and an authorizer: a wrong password and a denied Metadata show up under the
    names the rules use, and each TLS listener has its certificate gauge."""
    from confluent_kafka import KafkaException, Producer

    from common.polling import wait_for_port
    from kafkascope.local.broker_process import BrokerProcess
    from kafkascope.local.process import free_port
    from kafkascope.local.security import make_certs
    from tests.security_wire.conftest import ADMIN, ALICE, broker_props

    certs = make_certs(tmp_path / "certs")
    ports = {"PLAINTEXT": free_port(), "SASL_SSL": free_port(), "SSL": free_port()}
    metrics_port = free_port()
    proc = BrokerProcess(tmp_path, port=ports["PLAINTEXT"], prometheus_listener=f"127.0.0.1:{metrics_port}")
    proc.props.update(broker_props(ports, certs))
    proc.props.update({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                       "super.users": f"User:{ADMIN}", "allow.everyone.if.no.acl.found": "false"})
    with proc:
        for p in ports.values():
            wait_for_port("127.0.0.1", p, lambda: proc.proc is not None and proc.proc.poll() is None, 10)
        bad = Producer({"bootstrap.servers": f"127.0.0.1:{ports['SASL_SSL']}", "security.protocol": "SASL_SSL",
                        "ssl.ca.location": str(certs["ca"]), "sasl.mechanism": "PLAIN", "sasl.username": ALICE,
                        "sasl.password": "wrong"})
        with pytest.raises(KafkaException):
            bad.list_topics(timeout=5)
        anonymous = Producer({"bootstrap.servers": f"127.0.0.1:{ports['PLAINTEXT']}"})
        md = anonymous.list_topics(topic="secret", timeout=10)
        assert md.topics["secret"].error is not None  # TOPIC_AUTHORIZATION_FAILED: User:ANONYMOUS has no ACL
        text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
    samples = [line for line in text.splitlines() if line and not line.startswith("#")]

    def values(name: str, label: str) -> dict[str, float]:
        out: dict[str, float] = {}
        for s in samples:
            if s.split("{", 1)[0] == name and f'{label}="' in s:
                key = s.split(f'{label}="', 1)[1].split('"', 1)[0]
                out[key] = out.get(key, 0.0) + float(s.rsplit(" ", 1)[1])
        return out

    assert values(M.auth_failed, "listener").get("SASL_SSL", 0) >= 1
    assert set(values(M.auth_succeeded, "listener")) >= {"SASL_SSL", "SSL"}
    assert set(values(M.cert_not_after, "listener")) == {"SASL_SSL", "SSL"}
    assert values(M.errors, "error").get("TOPIC_AUTHORIZATION_FAILED", 0) >= 1
