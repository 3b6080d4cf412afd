"""Java .properties text as java.util.Properties reads it: server.properties for the broker, client.properties
for the tools (common/client_properties.py)."""

from __future__ import annotations

import re


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java .properties text: `#`/`!` comments, `=`/`:`/space separators, backslash continuations."""
    props: dict[str, str] = {}
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.lstrip() if pending else raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = line[:-1]
            continue
        pending = ""
        logical.append(line)
    if pending:
        logical.append(pending)
    for line in logical:
        m = re.match(r"((?:\\.|[^=:\s\\])*)\s*[=:\s]?\s*(.*)$", line)
        if not m:
            continue
        key, value = _unescape(m.group(1)), _unescape(m.group(2))
        if key:
            props[key] = value
    return props


def _unescape(s: str) -> str:
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(n, n))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)
