"""One module per command; each has `register(subparsers)` and sets `run` as the parser default."""

from kafkascope.tools import (
    configs,
    console_consumer,
    console_producer,
    consumer_groups,
    consumer_perf,
    demo,
    e2e_latency,
    producer_perf,
    server,
    topics,
)

TOOLS = (server, topics, console_producer, console_consumer, consumer_groups, configs,
         producer_perf, consumer_perf, e2e_latency, demo)
