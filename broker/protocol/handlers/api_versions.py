"""ApiVersions (18): the ranges of every registered handler, with Kafka's quirks (protocol.md §1.6.1)."""

from broker.errors import ErrorCode
from broker.protocol.api import HANDLERS, RequestContext, handler

API_VERSIONS_KEY = 18


def advertised() -> list[dict]:
    return [
        {"api_key": s.api_key, "min_version": s.min_version, "max_version": s.max_version}
        for s in sorted(HANDLERS.values(), key=lambda s: s.api_key)
    ]


def unsupported_version_body() -> dict:
    """The v0-format error body clients decode when their ApiVersions version is too new."""
    return {"error_code": ErrorCode.unsupported_version, "api_keys": advertised()}


@handler(API_VERSIONS_KEY, 0, 4)
async def handle_api_versions(ctx: RequestContext, req) -> dict:
    return {"error_code": ErrorCode.none, "api_keys": advertised(), "throttle_time": 0,
            "finalized_features_epoch": -1}
