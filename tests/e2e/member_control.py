"""What a group-member subprocess (group_member.py, consumer_protocol_member.py) shares: the test closes it by
writing "close" to its stdin (or stdin ending), which sets `stop`."""

from __future__ import annotations

import sys
import threading

stop = threading.Event()


def _watch_stdin() -> None:
    for line in sys.stdin:
        if line.strip() == "close":
            break
    stop.set()


def watch_stdin() -> None:
    """Start the thread that sets `stop` on "close"."""
    threading.Thread(target=_watch_stdin, daemon=True).start()
