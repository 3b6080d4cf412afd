import json

import pyarrow.dataset as ds

from kafkascope.cli import main


def test_generate_cli(tmp_path, capsys):
    rc = main(["slo", "generate", "--days", "0.05", "--clusters", "2", "--partitions", "2", "--interval", "30s",
               "--incident", "broker-down@10m+5m:broker=1", "--out", str(tmp_path)])
    assert rc == 0
    info = json.loads(capsys.readouterr().out)
    assert info["rows"] == 2 * 2 * 144 == ds.dataset(tmp_path, format="parquet", partitioning="hive").count_rows()


def test_cli_errors(tmp_path, capsys):
    assert main(["slo", "generate", "--out", str(tmp_path), "--incident", "meteor@1h+1h"]) == 2
    assert "unknown kind" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: openslo/v1\nkind: SLO\nmetadata: {name: x}\nspec: {budgetingMethod: Often}\n")
    assert main(["slo", "report", "--sli-dir", str(tmp_path), "--spec", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "spec.budgetingMethod" in capsys.readouterr().err
    assert main(["page", "--help"]) == 0
