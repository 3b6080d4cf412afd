"""`kafkascope fuzz`: replay mutated requests at a broker (ours or any Kafka) and report whether it stayed up.

Only point it at a broker you own: the seeds create, alter and delete `fuzz-*` topics and groups.
"""

from __future__ import annotations

import argparse
import asyncio
import random
from pathlib import Path

from kio.serial import entity_reader

from broker.protocol.codec import response_class
from kafkascope.cli.common import CliError
from kafkascope.fuzz.mutate import campaign
from kafkascope.fuzz.runner import probe_answer, replay, save_suspects
from kafkascope.fuzz.seeds import seeds


def advertised_versions(host: str, port: int, timeout_s: float = 5.0) -> dict[int, tuple[int, int]]:
    """{api_key: (min, max)} from the broker's ApiVersions v0 answer."""
    frame = asyncio.run(asyncio.wait_for(probe_answer(host, port), timeout_s))
    cls = response_class(18, 0)
    header, n = entity_reader(cls.__header_schema__)(frame, 0)
    body, _ = entity_reader(cls)(frame, n)
    return {int(a.api_key): (int(a.min_version), int(a.max_version)) for a in body.api_keys}


def run(args: argparse.Namespace) -> int:
    host, _, port_s = args.bootstrap_server.rpartition(":")
    if not host or not port_s.isdigit():
        raise CliError(f"--bootstrap-server must be HOST:PORT, got {args.bootstrap_server!r}")
    try:
        versions = advertised_versions(host, int(port_s))
    except (OSError, TimeoutError, asyncio.IncompleteReadError) as e:
        raise CliError(f"cannot ask {args.bootstrap_server} for its API versions: {e}") from None
    if args.skip_api_keys:
        skip = {int(k) for k in args.skip_api_keys.split(",")}
        versions = {k: v for k, v in versions.items() if k not in skip}
    seed_list = list(seeds(versions))
    covered = {(s.api_key, s.api_version) for s in seed_list}
    missing = [f"{k} v{v}" for k, (lo, hi) in sorted(versions.items()) for v in range(lo, hi + 1)
               if (k, v) not in covered]
    print(f"{len(covered)} API versions of {len(versions)} APIs seeded ({len(seed_list)} seeds), "
          f"{args.frames} frames, seed {args.seed}, {args.connections} connections")
    if missing:
        print(f"advertised without a request schema in kio, not fuzzed: {', '.join(missing)}")
    frames = campaign(seed_list, random.Random(args.seed), args.frames)
    stats = asyncio.run(replay(host, int(port_s), frames, args.connections, args.timeout_ms / 1000))
    print(stats.summary())
    if stats.broker_down:
        paths = save_suspects(stats, Path(args.crash_dir))
        print(f"broker stopped answering; {len(paths)} suspect frames written to {args.crash_dir}")
        return 1
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fuzz", help="replay mutated requests at a broker you own; exit 1 if it goes down")
    p.add_argument("--bootstrap-server", required=True, help="HOST:PORT of one broker")
    p.add_argument("--frames", type=int, default=5000, help="frames to send (5000)")
    p.add_argument("--seed", type=int, default=1, help="random seed; a run is reproduced by it (1)")
    p.add_argument("--connections", type=int, default=16, help="concurrent connections (16)")
    p.add_argument("--timeout-ms", type=int, default=1000,
                   help="wait per frame before a silent connection is dropped (1000)")
    p.add_argument("--skip-api-keys", default="", help="comma-separated API keys not to send, e.g. 19,37")
    p.add_argument("--crash-dir", default="fuzz-crashes", help="where suspect frames go if the broker dies")
    p.set_defaults(run=run)
