"""What a partition directory needs before its segments open: finishing a cleaner swap cut short by a crash,
listing the segments and dropping index files whose segment is gone (Kafka's LogLoader)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from broker.log.records import iter_batches
from broker.log.segment import LOG_SUFFIX, segment_name

CLEANER_TMP_DIR = "cleaner-tmp"
SWAP_SUFFIX = ".swap"
_INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")


def segment_bases(directory: Path, names: list[str]) -> list[int]:
    """Base offsets of the segments in `names` (a listing of `directory`), sorted; orphan indexes are removed."""
    stems = {n[: -len(LOG_SUFFIX)] for n in names if n.endswith(LOG_SUFFIX)}
    bases = []
    for n in names:
        stem, _, suffix = n.partition(".")
        if not stem.isdigit():
            continue
        if suffix == "log":
            bases.append(int(stem))
        elif "." + suffix in _INDEX_SUFFIXES and stem not in stems:
            (directory / n).unlink()  # an index whose segment is gone
    return sorted(bases)


def finish_interrupted_swap(directory: Path) -> None:
    """Complete or discard a cleaner swap cut short by a crash (see cleaner.py for the protocol)."""
    shutil.rmtree(directory / CLEANER_TMP_DIR, ignore_errors=True)
    for swap in sorted(directory.glob("*" + LOG_SUFFIX + SWAP_SUFFIX)):
        base = int(swap.name.split(".")[0])
        data = swap.read_bytes()
        last = [h for _, h in iter_batches(data)]
        end = last[-1].next_offset if last else base
        # The swapped-in segment replaces every old segment whose base offset it covers.
        for p in directory.glob("*" + LOG_SUFFIX):
            if p.stem.isdigit() and base <= int(p.stem) < end:
                for suffix in (LOG_SUFFIX, *_INDEX_SUFFIXES):
                    p.with_suffix(suffix).unlink(missing_ok=True)
        for suffix in (*_INDEX_SUFFIXES, LOG_SUFFIX):
            src = directory / (segment_name(base) + suffix + SWAP_SUFFIX)
            if src.exists():
                os.replace(src, directory / (segment_name(base) + suffix))
    for orphan in directory.glob("*" + SWAP_SUFFIX):
        orphan.unlink()
