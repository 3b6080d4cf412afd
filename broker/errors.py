"""Kafka error codes as exceptions: raise `KafkaError(ErrorCode.x)` anywhere below a handler."""

from kio.schema.errors import ErrorCode

__all__ = ["ErrorCode", "InvalidRequest", "KafkaError"]


class KafkaError(Exception):
    """A failure that maps onto one Kafka protocol error code."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message


class InvalidRequest(KafkaError):
    """A request that parsed but breaks a rule of its version (Kafka's InvalidRequestException): the broker
    closes the connection, as Kafka does when it cannot build a response for it."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.invalid_request, message)
