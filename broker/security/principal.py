"""Who a connection is, as Kafka's DefaultKafkaPrincipalBuilder decides it.

- PLAINTEXT, or SSL without a client certificate: `User:ANONYMOUS`;
- SASL_PLAINTEXT / SASL_SSL: `User:<authorization id>` from the SASL server (a client certificate is ignored);
- SSL with a certificate (`ssl.client.auth=required`): the subject as Java's X500Principal.getName() writes it
  (RFC 2253), passed through `ssl.principal.mapping.rules` (KIP-371, SslPrincipalMapper).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from broker.security.acl import KafkaPrincipal

ANONYMOUS = KafkaPrincipal.user("ANONYMOUS")

# The attribute keywords Java's RFC 2253 output knows; Python's ssl module names them as on the left.
_KEYWORDS = {"commonName": "CN", "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
             "organizationName": "O", "organizationalUnitName": "OU", "streetAddress": "STREET",
             "domainComponent": "DC", "userId": "UID"}
# Others Java writes as `<OID>=#<DER hex>`: (OID, DER string tag).
_OIDS = {"emailAddress": ("1.2.840.113549.1.9.1", 0x16), "serialNumber": ("2.5.4.5", 0x13),
         "title": ("2.5.4.12", 0x0C), "surname": ("2.5.4.4", 0x0C), "givenName": ("2.5.4.42", 0x0C),
         "initials": ("2.5.4.43", 0x0C), "generationQualifier": ("2.5.4.44", 0x0C),
         "dnQualifier": ("2.5.4.46", 0x13), "pseudonym": ("2.5.4.65", 0x0C), "postalCode": ("2.5.4.17", 0x0C),
         "businessCategory": ("2.5.4.15", 0x0C)}
_ESCAPEES = ',=+<>#;"\\'   # sun.security.x509.AVA also escapes "=" and "#"


def _der_hex(value: str, tag: int) -> str:
    body = value.encode("utf-8")
    n = len(body)
    length = bytes([n]) if n < 0x80 else bytes([0x80 | ((n.bit_length() + 7) // 8)]) + n.to_bytes(
        (n.bit_length() + 7) // 8, "big")
    return "#" + (bytes([tag]) + length + body).hex()


def _escape(value: str) -> str:
    out = "".join("\\" + c if c in _ESCAPEES else c for c in value)
    if out.startswith(" "):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def _ava(name: str, value: str) -> str:
    if name in _KEYWORDS:
        return f"{_KEYWORDS[name]}={_escape(value)}"
    if name in _OIDS:
        oid, tag = _OIDS[name]
        return f"{oid}={_der_hex(value, tag)}"
    if re.fullmatch(r"[0-9]+(\.[0-9]+)+", name):
        return f"{name}={_der_hex(value, 0x0C)}"
    raise ValueError(f"unknown certificate attribute {name}")


def rfc2253_name(subject: Sequence[Sequence[tuple[str, str]]]) -> str:
    """The subject of `ssl.SSLSocket.getpeercert()["subject"]` (RDNs, most significant first) as
    X500Principal.getName() spells it: RDNs reversed, comma-separated, multi-valued RDNs joined by `+`."""
    return ",".join("+".join(_ava(n, v) for n, v in rdn) for rdn in reversed(subject))


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None   # None: DEFAULT
    replacement: str = ""
    case: str = ""                    # "L", "U" or ""


# SslPrincipalMapper's grammar, as Kafka writes it.
_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_PARSER = re.compile(_RULE)


def _java_replacement(text: str) -> str:
    """A Java Matcher.replaceAll replacement (`$1`, `${name}`, backslashes literal as Kafka escapes
    them) in Python re.sub's spelling."""
    out = re.sub(r"\\", r"\\\\", text)
    return re.sub(r"\$(\d+|\{(\w+)\})", lambda m: f"\\g<{m.group(2) or m.group(1)}>", out)


class SslPrincipalMapper:
    """`ssl.principal.mapping.rules`: the first rule whose pattern matches the whole DN gives the name."""

    def __init__(self, rules: str | None = None) -> None:
        self.rules = self._parse(rules if rules is not None else "DEFAULT")

    @staticmethod
    def _parse(text: str) -> list[_Rule]:
        rules: list[_Rule] = []
        for split in _SPLITTER.finditer(text):
            rule = split.group(1)
            m = _PARSER.match(rule)
            if m is None or m.end() != len(rule):
                rest = rule[m.end():] if m else rule
                raise ValueError(f"Invalid rule: `{rule}`, unmatched substring: `{rest}`")
            if m.group(1) is not None:
                rules.append(_Rule(None))
            elif m.group(2) is not None:
                rules.append(_Rule(re.compile(m.group(2)), _java_replacement(m.group(4)), m.group(6)))
        return rules

    def name(self, distinguished_name: str) -> str:
        """SslPrincipalMapper.getName; raises ValueError "No rules apply to ..." as Kafka's NoMatchingRule."""
        for rule in self.rules:
            if rule.pattern is None:
                return distinguished_name
            if rule.pattern.fullmatch(distinguished_name):
                result = rule.pattern.sub(rule.replacement, distinguished_name)
                return result.lower() if rule.case == "L" else result.upper() if rule.case == "U" else result
        raise ValueError(f"No rules apply to {distinguished_name}")


def build_principal(security_protocol: str, sasl_authorization_id: str | None = None,
                    peer_subject: Sequence[Sequence[tuple[str, str]]] | None = None,
                    mapper: SslPrincipalMapper | None = None) -> KafkaPrincipal:
    """DefaultKafkaPrincipalBuilder.build for a listener's security protocol."""
    protocol = security_protocol.upper()
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        if sasl_authorization_id is None:
            raise ValueError("a SASL listener's principal needs the completed SASL exchange")
        return KafkaPrincipal.user(sasl_authorization_id)
    if protocol == "SSL" and peer_subject:
        return KafkaPrincipal.user((mapper or SslPrincipalMapper()).name(rfc2253_name(peer_subject)))
    return ANONYMOUS
