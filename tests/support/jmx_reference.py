"""The real jmx_exporter (the java agent Apache Kafka 3.9.2 is run with, 1.0.1) as a reference for exporter/jmx_*.

:func:`scrape_agent` registers given MBeans (object name, attribute, value) in a JVM started with the agent and a
rule file, and returns the agent's /metrics page; :func:`java_regex` runs patterns through java.util.regex exactly
as jmx_exporter wraps them. Both compile tests/support/JmxHarness.java once per process (javac, temp dir).
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
import urllib.request
from collections.abc import Iterable
from pathlib import Path

from common.polling import wait_until
from kafkascope.local.apache_kafka import ZK_VERSION, ApacheKafkaError, ensure_kafka, jmx_agent_jar
from kafkascope.local.broker_process import free_port

HARNESS = Path(__file__).with_name("JmxHarness.java")
AGENT_VERSION = "1.0.1"
# Families the agent adds about itself and the JVM, not from the beans under test.
AGENT_OWN_PREFIXES = ("jvm_", "process_", "jmx_config_reload_", "jmx_scrape_", "jmx_exporter_build_info")

Bean = tuple[str, str, object]  # object name, attribute, value (int: long, float: double, bool, str)


class ReferenceUnavailable(RuntimeError):
    """No javac/java or no agent jar (and no way to fetch it): tests skip."""


@functools.cache
def _compiled() -> Path:
    if not shutil.which("javac") or not shutil.which("java"):
        raise ReferenceUnavailable("javac/java not installed")
    out = Path(tempfile.mkdtemp(prefix="jmx-harness-"))
    r = subprocess.run(["javac", "-d", str(out), str(HARNESS)], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"javac failed:\n{r.stderr}")
    return out


@functools.cache
def agent_jar() -> Path:
    try:
        ensure_kafka(ZK_VERSION)
    except ApacheKafkaError as e:
        raise ReferenceUnavailable(str(e)) from None
    jar = jmx_agent_jar()
    if jar is None or not jar.is_file() or AGENT_VERSION not in jar.name:
        raise ReferenceUnavailable(f"no jmx_prometheus_javaagent {AGENT_VERSION} jar")
    return jar


def _esc(s: str) -> str:
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _unesc(s: str) -> str:
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            out.append({"t": "\t", "n": "\n", "r": "\r"}.get(s[i + 1], s[i + 1]))
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def java_type(v: object) -> str:
    return "boolean" if isinstance(v, bool) else "long" if isinstance(v, int) else \
        "double" if isinstance(v, float) else "string"


def write_beans(beans: Iterable[Bean], path: Path) -> Path:
    lines = []
    for name, attr, v in beans:
        text = str(v).lower() if isinstance(v, bool) else str(v)
        if isinstance(v, float):
            text = "NaN" if v != v else "Infinity" if v == float("inf") else "-Infinity" if v == -float("inf") \
                else repr(v)
        lines.append(f"{_esc(name)}\t{_esc(attr)}\t{java_type(v)}\t{_esc(text)}")
    path.write_text("\n".join(lines) + "\n")
    return path


def scrape_agent(beans: Iterable[Bean], rules_yaml: str, workdir: Path, timeout_s: float = 60.0) -> str:
    """The agent's text exposition for these MBeans under this rule file (its own JVM families left in)."""
    classes, jar = _compiled(), agent_jar()
    workdir.mkdir(parents=True, exist_ok=True)
    beans_file = write_beans(beans, workdir / "beans.tsv")
    rules = workdir / "rules.yml"
    rules.write_text(rules_yaml)
    port = free_port()
    cmd = ["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
           f"-javaagent:{jar}=127.0.0.1:{port}:{rules}", "-cp", str(classes), "JmxHarness", "beans", str(beans_file)]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        if not line.startswith("READY"):
            raise RuntimeError(f"harness did not start: {line!r} {proc.stderr.read()}")  # type: ignore[union-attr]
        def scrape() -> str:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
                return r.read().decode()

        return wait_until(scrape, timeout_s, 0.2, f"the agent answering on 127.0.0.1:{port}", retry_on=(OSError,))
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def java_regex(cases: list[tuple[str, str]], workdir: Path) -> list[tuple[str, ...] | None | str]:
    """For each (pattern, input): the groups when ``^.*(?:pattern).*$`` matches (None for a group that did not
    take part), None when it does not, or the exception's class name when Java refuses the pattern."""
    classes = _compiled()
    workdir.mkdir(parents=True, exist_ok=True)
    f = workdir / "regex.tsv"
    f.write_text("".join(f"{_esc(p)}\t{_esc(s)}\n" for p, s in cases))
    r = subprocess.run(["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", str(classes), "JmxHarness",
                        "regex", str(f)], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    out: list[tuple[str, ...] | None | str] = []
    for line in r.stdout.splitlines():
        parts = line.split("\t")
        if parts[0] == "E":
            out.append(parts[1])
        elif parts[0] == "0":
            out.append(None)
        else:
            out.append(tuple(None if p == "\\0" else _unesc(p) for p in parts[1:]))  # type: ignore[misc]
    return out
