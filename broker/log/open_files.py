"""The share of the process's open-file limit a kind of kept descriptor may use (segment `.log` files, index
files being written): read when first needed, after the broker raised its soft limit to the hard one."""

from __future__ import annotations

import resource


def share_of_open_files(divisor: int, minimum: int, maximum: int) -> int:
    """1/`divisor` of the soft RLIMIT_NOFILE, within [`minimum`, `maximum`] (`maximum` when unlimited)."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return maximum
    return max(minimum, min(maximum, soft // divisor))
