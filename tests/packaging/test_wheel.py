"""The wheel built from this tree, installed (not editable) into a fresh virtualenv and run from a directory outside
the repository with no PYTHONPATH: it carries every data file the code reads, `kafkascope slo report` writes its
report and `kafkascope up` comes up (brokers serving /metrics, Prometheus on the shipped rules) and stops on
Ctrl-C. The dependencies are this interpreter's, reached through a .pth file: no network, and the checkout is never
on the installed package's path."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import site
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest

from kafkascope.local import process as proc

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("broker", "common", "dashboards", "exporter", "kafkascope", "lagmonitor", "slo", "xmonitor")
# Not part of the build: what setuptools would only read (or write) when building from the checkout itself.
NOT_COPIED = {".git", ".venv", "build", "tests", "benchmarks", "docs", "data", ".mypy_cache", ".ruff_cache",
              ".pytest_cache"}


def _copy_ignore(root: Path):
    def ignore(directory: str, names: list[str]) -> set[str]:
        skip = {n for n in names if n == "__pycache__" or n.endswith((".egg-info", ".pyc"))}
        return skip | (NOT_COPIED & set(names) if Path(directory) == root else set())
    return ignore


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of a copy of the tree (so a stale build/ or egg-info of the checkout cannot leak into it)."""
    src, out = tmp_path_factory.mktemp("src") / "kafkascope", tmp_path_factory.mktemp("dist")
    shutil.copytree(REPO, src, ignore=_copy_ignore(REPO))
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index", str(src),
          "-w", str(out)])
    (whl,) = out.glob("kafkascope-*.whl")
    return whl


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh virtualenv with the wheel installed; its dependencies are this interpreter's site-packages."""
    venv = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    py = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index", str(wheel)])
    purelib = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).strip())
    # A plain path line: the .pth files of these dirs (the checkout's editable install) are not processed.
    (purelib / "_kafkascope_test_deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return venv


@pytest.fixture
def outside(tmp_path) -> Path:
    """A working directory outside the repository."""
    d = tmp_path / "cwd"
    d.mkdir()
    assert REPO not in d.resolve().parents
    return d


def _run(cmd: list[str], **kw) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=kw.pop("timeout", 300), **kw)
    assert r.returncode == 0, f"{cmd}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def _env(venv: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", "PYTHONUNBUFFERED": "1"}


def _data_files() -> set[str]:
    """Every non-Python file under our packages in the tree (what the code may read at run time)."""
    out = set()
    for pkg in PACKAGES:
        for f in (REPO / pkg).rglob("*"):
            if f.is_file() and f.suffix not in (".py", ".pyc") and "__pycache__" not in f.parts:
                out.add(f.relative_to(REPO).as_posix())
    return out


def test_the_wheel_carries_every_data_file_of_the_packages(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    data = _data_files()
    assert {"slo/specs/default.yaml", "exporter/rules/kafkascope.yaml", "dashboards/grafana/dashboards/slo.json",
            "dashboards/prometheus/kafkascope-alerts.rules.yml", "kafkascope/local/apache_kafka_artifacts.txt",
            } <= data
    assert not data - names, sorted(data - names)
    assert "dashboards/streamlit_app.py" in names
    assert not [n for n in names if n.startswith(("tests/", "benchmarks/"))]


def test_the_installed_package_is_the_wheel_not_the_checkout(venv, outside):
    code = "import broker, dashboards, kafkascope, slo; print(kafkascope.__file__, slo.__file__)"
    files = _run([str(venv / "bin" / "python"), "-c", code], cwd=outside, env=_env(venv)).split()
    assert all(Path(f).resolve().is_relative_to(venv.resolve()) for f in files), files


@pytest.mark.timeout(300)
def test_slo_generate_and_report_from_the_wheel(venv, outside):
    ks, env = str(venv / "bin" / "kafkascope"), _env(venv)
    _run([ks, "slo", "generate", "--out", "sli", "--days", "1", "--clusters", "1", "--partitions", "2",
          "--interval", "10m", "--incident", "broker-down@10h+30m"], cwd=outside, env=env)
    _run([ks, "slo", "report", "--sli-dir", "sli", "--out", "report", "--window", "1d", "--master", "local[1]"],
         cwd=outside, env=env)
    report = json.loads((outside / "report" / "report.json").read_text())
    names = {s["name"] for s in report["slos"]}
    assert {"write-availability", "no-loss"} <= names   # the shipped specs were found and read
    assert not (REPO / "report").exists()


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200, url
        return r.read().decode()


def _rows(out: str) -> dict[str, str]:
    """The 'kafkascope is up' table: label -> value."""
    table = out.split("kafkascope is up:", 1)[1]
    return {m[1].strip(): m[2] for m in re.finditer(r"^  (\S.*?)  +(\S+)$", table, re.M)}


@pytest.mark.timeout(240)
def test_up_from_the_wheel_serves_metrics_loads_the_rules_and_stops(venv, outside):
    data = outside / "state"
    cmd = [str(venv / "bin" / "kafkascope"), "up", "--data-dir", str(data)]
    for part in ("xmonitor", "lag", "workload", "node-exporter", "slo-report", "streamlit"):
        cmd += ["--no", part]
    p = subprocess.Popen(cmd, cwd=outside, env=_env(venv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    lines: list[str] = []
    try:
        for line in p.stdout:
            lines.append(line)
            if "Ctrl-C stops everything" in line:
                break
        out = "".join(lines)
        assert "kafkascope is up" in out, out
        rows = _rows(out)
        brokers = [v for k, v in rows.items() if re.fullmatch(r"broker \d+ /metrics", k)]
        assert len(brokers) == 3, rows
        for url in brokers:
            assert "kafka_server_" in _get(url), url
        assert "zookeeper" in _get(rows["ZooKeeper exporter"]).lower()
        groups = json.loads(_get(rows["Prometheus"] + "/api/v1/rules"))["data"]["groups"]
        files = {Path(g["file"]).name for g in groups}
        assert {"kafkascope-recording.rules.yml", "kafkascope-alerts.rules.yml"} <= files, files
        assert sum(len(g["rules"]) for g in groups) > 10
        grafana = Path(rows["Grafana dashboards (import)"])
        assert grafana.resolve().is_relative_to(venv.resolve()) and list(grafana.glob("dashboards/*.json"))
        pids = [(m["pid"], m["started"]) for m in
                json.loads((data / "cluster" / "cluster.json").read_text())["members"].values()]
        p.send_signal(signal.SIGINT)
        rest = p.communicate(timeout=90)[0]
        assert p.returncode == 0 and "stopped" in rest, rest
        assert not [pid for pid, started in pids if proc.alive(pid, started)]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)
