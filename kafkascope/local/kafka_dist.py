"""The Apache Kafka distribution for the local reference peer: Java and Maven, and Kafka's jars from Maven Central.

Split out of apache_kafka.py (which builds the JVM command lines and runs the broker): this module only makes
sure ``java`` (>= 17) and ``mvn`` exist (apt-get when root or passwordless sudo) and resolves the artifacts pinned
per version in ``apache_kafka_artifacts.txt`` into ``~/.cache/kafkascope/apache-kafka-VERSION/`` (``libs/`` on the
class path, ``agent/`` for the Prometheus JMX exporter java agent).  Everything here is re-exported by
apache_kafka, the module callers import.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any

DEFAULT_VERSION = "4.1.1"
# The newest 3.9.x on Maven Central: the last Apache Kafka line with ZooKeeper mode.
ZK_VERSION = "3.9.2"
ARTIFACTS_FILE = Path(__file__).with_name("apache_kafka_artifacts.txt")
MAVEN_CENTRAL = "repo1.maven.org"
SCALA_VERSION = "2.13"
# log4j2 binding for slf4j 1.7.x (which is what kafka_2.13 4.x depends on); without a binding
# the broker logs nothing.  Same log4j2 line the Apache Kafka 4.x distribution ships.
LOG4J2_VERSION = "2.24.3"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
MIN_JAVA = 17


class ApacheKafkaError(RuntimeError):
    """Fetching, formatting or starting the reference Apache Kafka failed."""


# --------------------------------------------------------------------------- tools


def _run(cmd: list[str], *, timeout: float | None = None, **kw: Any) -> subprocess.CompletedProcess:
    return subprocess.run(
        cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, **kw
    )


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _java_bin() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


def _java_major(java: str) -> int:
    out = _run([java, "-version"], timeout=60)
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        raise ApacheKafkaError(f"cannot parse `{java} -version` output:\n{out.stderr}{out.stdout}")
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major  # "1.8.0_x" -> 8


def _apt_install(packages: list[str]) -> None:
    if os.geteuid() == 0:
        prefix: list[str] = []
    elif shutil.which("sudo") and _run(["sudo", "-n", "true"], timeout=30).returncode == 0:
        prefix = ["sudo", "-n"]
    else:
        raise ApacheKafkaError(
            f"missing {' '.join(packages)} and not root: run `apt-get install -y {' '.join(packages)}`"
        )
    if not shutil.which("apt-get"):
        raise ApacheKafkaError(f"missing {' '.join(packages)} and apt-get is not available")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages],
    ):
        res = _run(prefix + cmd, timeout=1800, env=env)
        if res.returncode != 0:
            raise ApacheKafkaError(f"`{' '.join(cmd)}` failed:\n{_tail(res.stdout + res.stderr)}")


def ensure_java_and_maven(*, need_maven: bool = True) -> tuple[str, str | None]:
    """Return (java, mvn) executables, apt-installing default-jre-headless/maven if missing."""
    missing = []
    if not _java_bin():
        missing.append("default-jre-headless")
    if need_maven and not shutil.which("mvn"):
        missing.append("maven")
    if missing:
        _apt_install(missing)
    java = _java_bin()
    mvn = shutil.which("mvn") if need_maven else None
    if not java or (need_maven and not mvn):
        raise ApacheKafkaError(f"java/mvn still not found on PATH after installing {missing}")
    major = _java_major(java)
    if major < MIN_JAVA:
        raise ApacheKafkaError(f"Apache Kafka 4.x needs Java >= {MIN_JAVA}; {java} is Java {major}")
    return java, mvn


# --------------------------------------------------------------------------- jars


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kafkascope"


def _kafka_home(version: str) -> Path:
    return cache_root() / f"apache-kafka-{version}"


def artifacts(version: str) -> list[tuple[str, str, str, str]]:
    """(dest, groupId, artifactId, version) fetched for Apache Kafka VERSION, from apache_kafka_artifacts.txt;
    versions not listed there get the 4.x default (kafka_2.13 + the log4j2 binding)."""
    out = []
    for line in ARTIFACTS_FILE.read_text().splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) == 3 and fields[0] == version:
            g, a, v = fields[2].split(":")
            out.append((fields[1], g, a, v))
    if not out:
        out = [
            ("libs", "org.apache.kafka", f"kafka_{SCALA_VERSION}", version),
            ("libs", "org.apache.logging.log4j", "log4j-slf4j-impl", LOG4J2_VERSION),
            ("libs", "org.apache.logging.log4j", "log4j-core", LOG4J2_VERSION),
        ]
    return out


def _is_complete(libs: Path, version: str) -> bool:
    home = libs.parent
    return (home / ".complete").is_file() and all(
        (home / dest / f"{a}-{v}.jar").is_file() for dest, _, a, v in artifacts(version)
    )


def _pom(version: str) -> str:
    deps = [(g, a, v) for dest, g, a, v in artifacts(version) if dest == "libs"]
    dep_xml = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in deps
    )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafkascope</groupId>
  <artifactId>apache-kafka-reference</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
{dep_xml}
  </dependencies>
</project>
"""


def maven_central_reachable(timeout: float = 5.0) -> bool:
    """True when Maven Central answers a TCP connect (tests skip with a reason when it does not)."""
    try:
        with socket.create_connection((MAVEN_CENTRAL, 443), timeout=timeout):
            return True
    except OSError:
        return False


def ensure_kafka(version: str = DEFAULT_VERSION) -> Path:
    """Resolve Apache Kafka VERSION's jars (apache_kafka_artifacts.txt) from Maven Central; return the libs dir.

    Idempotent and cheap when already cached (stats, no JVM).  Safe against concurrent callers (file lock) and
    interrupted downloads (libs/ and agent/ are renamed into place when complete).
    """
    home = _kafka_home(version)
    libs = home / "libs"
    if _is_complete(libs, version):
        return libs
    home.mkdir(parents=True, exist_ok=True)
    with open(home.parent / f".apache-kafka-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_complete(libs, version):
            return libs
        _, mvn = ensure_java_and_maven()
        assert mvn is not None
        staging = Path(tempfile.mkdtemp(prefix=".fetch-", dir=home))
        try:
            pom = staging / "pom.xml"
            pom.write_text(_pom(version))
            cmds = [[
                mvn, "-B", "-q", "-f", str(pom),
                f"{DEPENDENCY_PLUGIN}:copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={staging / 'libs'}",
            ]]  # fmt: skip
            for dest, g, a, v in artifacts(version):
                if dest != "libs":
                    cmds.append([mvn, "-B", "-q", "-f", str(pom), f"{DEPENDENCY_PLUGIN}:copy",
                                 f"-Dartifact={g}:{a}:{v}", f"-DoutputDirectory={staging / dest}"])
            for cmd in cmds:
                res = _run(cmd, timeout=1800, cwd=staging)
                if res.returncode != 0:
                    raise ApacheKafkaError(
                        f"resolving Apache Kafka {version} artifacts from Maven Central failed "
                        f"(`{' '.join(cmd[4:])}`, exit {res.returncode}):\n{_tail(res.stdout + res.stderr)}"
                    )
            missing = [f"{dest}/{a}-{v}.jar" for dest, _, a, v in artifacts(version)
                       if not (staging / dest / f"{a}-{v}.jar").is_file()]
            if missing:
                raise ApacheKafkaError(f"Maven did not produce {', '.join(missing)}")
            (home / ".complete").unlink(missing_ok=True)
            for dest in sorted({d for d, *_ in artifacts(version)}):
                if (home / dest).exists():
                    shutil.rmtree(home / dest)
                (staging / dest).rename(home / dest)
            (home / ".complete").write_text(
                "\n".join(sorted(str(p.relative_to(home)) for p in home.glob("*/*.jar"))) + "\n"
            )
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return libs


def jmx_agent_jar(version: str = ZK_VERSION) -> Path | None:
    """The Prometheus JMX exporter java agent fetched with VERSION (None if that version has none)."""
    home = _kafka_home(version)
    for dest, _, a, v in artifacts(version):
        if dest == "agent" and a == "jmx_prometheus_javaagent":
            return home / dest / f"{a}-{v}.jar"
    return None
