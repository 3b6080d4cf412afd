"""Small state files replaced whole: written beside the target, flushed to disk, renamed over it. A failed write
(a full disk) leaves the old file as it was, and no part-written copy behind to hold room the disk needs."""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_json(path: Path, doc: object) -> None:
    """Replace `path` with `doc` as indented JSON, durably; OSError if the disk cannot take it."""
    tmp = path.with_suffix(".tmp")
    try:
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
