"""Kafka error codes as exceptions: raise `KafkaError(ErrorCode.x)` anywhere below a handler."""

from kio.schema.errors import ErrorCode

__all__ = ["ErrorCode", "KafkaError"]


class KafkaError(Exception):
    """A failure that maps onto one Kafka protocol error code."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message
