"""`sasl.jaas.config` values as Kafka's JaasConfig reads them, and which key a broker listener uses.

Grammar (JaasConfig on a java.io.StreamTokenizer): `<LoginModule> <flag> (key=value)* ;` repeated, flag one of
required/requisite/sufficient/optional, values bare words or "quoted"/'quoted' with backslash escapes,
`//` and `/* */` comments. A broker takes its SASL config per listener and mechanism:
`listener.name.<listener>.<mechanism>.sasl.jaas.config` (both lower-cased), as JaasContext.loadServerContext.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

CONTROL_FLAGS = ("REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL")
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


class JaasConfigError(ValueError):
    """An invalid JAAS config (Kafka throws IllegalArgumentException with these messages)."""


@dataclass(frozen=True)
class JaasEntry:
    """One AppConfigurationEntry: the login module, its control flag and its options."""

    login_module: str
    control_flag: str
    options: dict[str, str] = field(default_factory=dict)


def _is_word_start(c: str) -> bool:
    # StreamTokenizer's word chars plus JaasConfig's additions (-, _ and $); `-` alone starts a number.
    return c.isascii() and c.isalpha() or c in "_$" or ord(c) >= 0xA0


def _is_word_char(c: str) -> bool:
    return _is_word_start(c) or c.isdigit() or c in ".-"


def _tokens(text: str) -> Iterator[tuple[str, str | None]]:
    """(kind, value): kind "word", "quoted", "number" (value None, as StreamTokenizer leaves sval) or a
    single ordinary character such as "=" and ";"."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c <= " ":
            i += 1
        elif text.startswith("//", i):
            i = text.find("\n", i) if "\n" in text[i:] else n
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c in "\"'":
            value, i = _quoted(text, i)
            yield "quoted", value
        elif _is_word_start(c):
            j = i + 1
            while j < n and _is_word_char(text[j]):
                j += 1
            yield "word", text[i:j]
            i = j
        elif c.isdigit() or c in ".-":
            j = i + 1
            while j < n and (text[j].isdigit() or text[j] == "."):
                j += 1
            yield "number", None
            i = j
        else:
            yield c, None
            i += 1


def _quoted(text: str, i: int) -> tuple[str, int]:
    """A quoted string from text[i] (the quote) with StreamTokenizer's escapes; returns (value, next index)."""
    quote, out, i = text[i], [], i + 1
    while i < len(text) and text[i] != quote and text[i] != "\n":
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in "01234567":
                j = i + 1
                while j < len(text) and j < i + 4 and text[j] in "01234567":
                    j += 1
                out.append(chr(int(text[i + 1:j], 8) & 0xFF))
                i = j
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out), i + 1


def parse_jaas_config(text: str) -> list[JaasEntry]:
    """All entries of a `sasl.jaas.config` value; raises JaasConfigError with Kafka's messages."""
    tokens = list(_tokens(text))
    entries: list[JaasEntry] = []
    pos = 0
    while pos < len(tokens):
        entry, pos = _entry(tokens, pos)
        entries.append(entry)
    if not entries:
        raise JaasConfigError("Login module not specified in JAAS config")
    return entries


def _entry(tokens: list[tuple[str, str | None]], pos: int) -> tuple[JaasEntry, int]:
    module = tokens[pos][1]
    if module is None:
        raise JaasConfigError("Login module not specified in JAAS config")
    if pos + 1 >= len(tokens):
        raise JaasConfigError("Login module control flag not specified in JAAS config")
    flag = tokens[pos + 1][1]
    if flag is None:
        raise JaasConfigError("Login module control flag is not available in the JAAS config")
    if flag.upper() not in CONTROL_FLAGS:
        raise JaasConfigError(f"Invalid login module control flag '{flag}' in JAAS config")
    options: dict[str, str] = {}
    pos += 2
    while pos < len(tokens) and tokens[pos][0] != ";":
        key = tokens[pos][1]
        if pos + 2 >= len(tokens) or tokens[pos + 1][0] != "=" or tokens[pos + 2][1] is None:
            raise JaasConfigError(f"Value not specified for key '{key}' in JAAS config")
        options[str(key)] = str(tokens[pos + 2][1])
        pos += 3
    if pos >= len(tokens):
        raise JaasConfigError("JAAS config entry not terminated by semi-colon")
    return JaasEntry(module, flag.upper(), options), pos + 1


def parse_single_module(text: str) -> JaasEntry:
    """What a `sasl.jaas.config` property must hold: exactly one login module (JaasContext.load)."""
    entries = parse_jaas_config(text)
    if len(entries) != 1:
        raise JaasConfigError(f"JAAS config property contains {len(entries)} login modules, should be 1 module")
    return entries[0]


def listener_jaas_key(listener: str, mechanism: str) -> str:
    """`listener.name.<listener>.<mechanism>.sasl.jaas.config`, both names lower-cased as Kafka does."""
    return f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"


def server_jaas_config(props: Mapping[str, str], listener: str, mechanism: str) -> JaasEntry | None:
    """The JAAS entry a broker listener uses for a mechanism, or None (Kafka would then read the static
    JAAS file's `<listener>.KafkaServer` / `KafkaServer` sections, which we do not support).
    A bare broker-level `sasl.jaas.config` is ignored, as Kafka ignores it (with a warning)."""
    text = props.get(listener_jaas_key(listener, mechanism))
    return None if text is None else parse_single_module(text)


def client_jaas_config(props: Mapping[str, str]) -> JaasEntry | None:
    """A client properties file's `sasl.jaas.config` (e.g. our tools' --command-config)."""
    text = props.get("sasl.jaas.config")
    return None if text is None else parse_single_module(text)


def login_credentials(entry: JaasEntry) -> tuple[str, str]:
    """(username, password) from a Plain/ScramLoginModule entry, what a client (or the broker as an
    inter-broker client) authenticates with."""
    try:
        return entry.options["username"], entry.options["password"]
    except KeyError as e:
        raise JaasConfigError(f"{entry.login_module} needs username and password options") from e
