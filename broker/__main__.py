"""`python -m broker CONFIG.properties [--override key=value ...]`"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import resource
import signal
import sys

from broker.config import BrokerConfig, ConfigError
from broker.event_loop import new_event_loop

log = logging.getLogger("broker")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="broker", description="kafkascope Kafka-protocol broker")
    p.add_argument("config", help="server.properties file (Kafka's keys)")
    p.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                   help="override a property from the file (repeatable)")
    return p


def raise_open_file_limit() -> int:
    """Raise the soft open-file limit to the hard one, as Kafka's operators raise `ulimit -n`: each partition in
    use holds a segment file open, and each client a socket. Returns the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard:
        log.info("open-file limit already at the hard limit (%d)", hard)
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as e:  # e.g. an unlimited hard limit the kernel will not grant as a soft one
        log.warning("could not raise the open-file limit from %d to %d: %s", soft, hard, e)
        return soft
    log.info("raised open-file limit from %d to %d", soft, hard)
    return hard


# Python's cyclic collector for a broker's heap (issue 20). With CPython's default (700, 10, 10) an object alive for
# a few hundred ms (a long-polling fetch's watch entries, one per partition) outlives two young collections and
# reaches the old generation; in a 3-broker cluster at 10,000 partitions that set off a full collection every 5-6 s
# (0.6-0.9 s each, the event loop stopped: a fifth of the broker's time). With a young generation of 100,000 the
# short-lived entries die before any collection sees them (one young collection per broker in 89 s, no full one);
# what reaches the old generation has really stayed, so full collections come with growth of the heap.
GC_THRESHOLDS = (100_000, 10, 10)


def tune_gc() -> None:
    gc.set_threshold(*GC_THRESHOLDS)


async def serve(config: BrokerConfig) -> None:
    from broker.broker import Broker

    broker = Broker(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await broker.start()
    await stop.wait()
    log.info("shutting down")
    await broker.stop()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(levelname)s %(name)s: %(message)s")
    try:
        config = BrokerConfig.load(args.config, args.override)
        from broker.network.listeners import listener_specs

        listener_specs(config)  # protocols, SASL and TLS settings: refused before anything starts
    except ConfigError as e:
        print(f"broker: {e}", file=sys.stderr)
        return 2
    raise_open_file_limit()
    tune_gc()
    try:
        with asyncio.Runner(loop_factory=new_event_loop) as runner:  # its selector times the idle share
            runner.run(serve(config))
    except OSError as e:  # e.g. the port is taken
        print(f"broker: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
