"""Where the generated monitoring files live and the Prometheus job names: what dashboards/build.py writes
(rules, scrape config, Grafana dashboards and provisioning), dashboards/grafana.py queries and the local stack
(kafkascope up) copies and scrapes."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
PROMETHEUS_DIR = HERE / "prometheus"
GRAFANA_DIR = HERE / "grafana"
DASHBOARDS_DIR = GRAFANA_DIR / "dashboards"   # one <name>.json per dashboards.grafana.BOARDS entry
RUNBOOK_DIR = "docs/runbooks"                 # relative to the repository: the alerts' runbook_url
RECORDING_FILE = "kafkascope-recording.rules.yml"
ALERTS_FILE = "kafkascope-alerts.rules.yml"
RULE_FILES = (RECORDING_FILE, ALERTS_FILE)
EXAMPLE_CONFIG_FILE = "prometheus.example.yml"
STREAMLIT_APP = HERE / "streamlit_app.py"     # the SLO page (`streamlit run` takes a file, not a module)

# Prometheus job names (build.scrape_config() and every `up{job=...}` query).
JOB_BROKER, JOB_XMONITOR, JOB_LAG, JOB_ZK = "kafka-broker", "xmonitor", "lag-monitor", "zookeeper"
JOB_NODE = "node"  # the node exporter (node-mixin's job name)
