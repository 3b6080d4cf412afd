"""SLI interval files: SLI_SCHEMA rows as Parquet under `<sli.dir>/date=YYYY-MM-DD/`, written atomically.

Each interval's rows go to `<cluster>-<start ms>-<uuid>.parquet`, first written as `.<name>.tmp` in the same
directory (pyarrow datasets skip dot-files) and then renamed, so a reader never sees a partial file.
"""

from __future__ import annotations

import io
import os
import re
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from xmonitor.sli_schema import SLI_SCHEMA


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "cluster"


def warm_up() -> None:
    """Load what pyarrow imports lazily on its first Parquet write (pandas among it: ~0.4 s of CPU), so that
    one-off cost is paid at start rather than in the middle of the first interval."""
    pq.write_table(pa.Table.from_pylist([], schema=SLI_SCHEMA), io.BytesIO())


def write_rows(sli_dir: str | Path, rows: list[dict]) -> Path | None:
    """Write one interval's rows (all with the same interval_start); returns the file, None for no rows."""
    if not rows:
        return None
    table = pa.Table.from_pylist(rows, schema=SLI_SCHEMA)
    start = rows[0]["interval_start"]
    day_dir = Path(sli_dir) / f"date={start:%Y-%m-%d}"
    day_dir.mkdir(parents=True, exist_ok=True)
    name = f"{_safe(rows[0]['cluster'])}-{int(start.timestamp() * 1000)}-{uuid.uuid4().hex[:8]}.parquet"
    tmp = day_dir / f".{name}.tmp"
    try:
        pq.write_table(table, tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, day_dir / name)
    finally:
        tmp.unlink(missing_ok=True)
    return day_dir / name


def read_dir(sli_dir: str | Path) -> pa.Table:
    """All rows under `sli_dir` (the date=... directories become no column: the schema is SLI_SCHEMA)."""
    files = sorted(p for p in Path(sli_dir).glob("date=*/*.parquet"))
    if not files:
        return SLI_SCHEMA.empty_table()
    return pa.concat_tables([pq.read_table(f, schema=SLI_SCHEMA) for f in files])
