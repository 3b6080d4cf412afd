"""Record what the real jmx_exporter (1.0.1 agent) exposes for each bean set under each rule file, and our broker's
bean set, as the fast tests' reference (tests/exporter/data/jmx/). Needs java, javac and the agent jar.

    python -m tests.exporter.record_jmx_reference
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from tests.exporter.jmx_beans import BEAN_SETS, DATA, RULE_FILES, beans, record_broker_beans, rules_text
from tests.exporter.jmx_compare import reference_path
from tests.exporter.jmx_regex_cases import record_regex_cases
from tests.support.jmx_reference import AGENT_OWN_PREFIXES, AGENT_VERSION, scrape_agent


def strip_agent_own(text: str) -> str:
    """The page without the agent's JVM/self families (they vary from run to run and are not under test)."""
    keep = []
    for line in text.splitlines():
        name = line.split(" ")[2] if line.startswith(("# HELP ", "# TYPE ")) else line
        if not name.startswith(AGENT_OWN_PREFIXES):
            keep.append(line)
    return "\n".join(keep) + "\n"


def record(rules: str, bean_set: str, workdir: Path) -> Path:
    text = scrape_agent(beans(bean_set), rules_text(rules), workdir / f"{rules}-{bean_set}")
    out = reference_path(rules, bean_set)
    out.parent.mkdir(parents=True, exist_ok=True)
    header = (f"# Recorded output of jmx_prometheus_javaagent {AGENT_VERSION} (not hand-written): rules "
              f"{RULE_FILES[rules].name}, MBeans data/jmx/beans-{bean_set}.tsv.\n"
              "# Regenerate with: python -m tests.exporter.record_jmx_reference\n")
    out.write_text(header + strip_agent_own(text))
    return out


def main() -> None:
    print("wrote", record_broker_beans())
    with tempfile.TemporaryDirectory(prefix="jmx-record-") as d:
        for rules in RULE_FILES:
            for bean_set in BEAN_SETS:
                print("wrote", record(rules, bean_set, Path(d)))
        print("wrote", record_regex_cases(Path(d)))
    print("in", DATA)


if __name__ == "__main__":
    main()
