"""ApiVersions (18): the ranges of every handler in the table, with Kafka's quirks (KIP-511: an unsupported
ApiVersions version is answered with v0 and UNSUPPORTED_VERSION)."""

from collections.abc import Mapping

from broker.errors import ErrorCode
from broker.protocol.api import ApiSpec, RequestContext

API_VERSIONS_KEY = 18
PRODUCE_KEY = 0
# Kafka 4.0's ApiKeys.PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION (KAFKA-18659): Produce is served from v3 but
# advertised from v0, because librdkafka before 2.12 checks compression support against Produce v0 and sends
# gzip/snappy/lz4 batches uncompressed otherwise (measured: 2.10.0 and 2.11.0 do, 2.12.0 does not). Clients take
# the highest common version, so none picks v0-2 unless it has nothing newer; those requests close the connection.
PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION = 0


def advertised(table: Mapping[int, ApiSpec]) -> list[dict]:
    """Every handler's served range, except Produce's floor (above)."""
    return [
        {"api_key": s.api_key, "max_version": s.max_version,
         "min_version": PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION if s.api_key == PRODUCE_KEY else s.min_version}
        for s in sorted(table.values(), key=lambda s: s.api_key)
    ]


def unsupported_version_body(table: Mapping[int, ApiSpec]) -> dict:
    """The v0-format error body clients decode when their ApiVersions version is too new."""
    return {"error_code": ErrorCode.unsupported_version, "api_keys": advertised(table)}


def api_versions_spec(table: Mapping[int, ApiSpec]) -> ApiSpec:
    """ApiVersions over `table`, which it reads at each request (so it lists itself once added to it)."""

    async def handle_api_versions(ctx: RequestContext, req) -> dict:
        return {"error_code": ErrorCode.none, "api_keys": advertised(table), "throttle_time": 0,
                "finalized_features_epoch": -1}

    return ApiSpec(API_VERSIONS_KEY, 0, 4, handle_api_versions)
