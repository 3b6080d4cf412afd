"""One module per command; each has `register(subparsers)` and sets `run` as the parser default."""

from kafkascope.tools import console_consumer, console_producer, server, topics

TOOLS = (server, topics, console_producer, console_consumer)
