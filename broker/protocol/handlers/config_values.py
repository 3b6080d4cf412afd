"""What the config APIs (DescribeConfigs 32, AlterConfigs 33, IncrementalAlterConfigs 44) share across resource
types: Kafka's ConfigSource and AlterConfigOp codes, and how an alter request turns stored configs into new ones."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from broker.errors import ErrorCode, KafkaError

# DescribeConfigsResponse.ConfigSource
DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG, DYNAMIC_GROUP_CONFIG = 4, 5, 8
# AlterConfigOp.OpType
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {OP_APPEND: "append", OP_SUBTRACT: "subtract"}


def altered(current: Mapping[str, str], configs: Sequence[Any], incremental: bool) -> dict[str, str]:
    """The configs after an alter request for a resource whose keys take only SET and DELETE: incrementally from
    `current`, or (AlterConfigs) replacing it whole. APPEND and SUBTRACT are refused as Kafka refuses them on a key
    that is not a LIST (ConfigAdminManager.prepareIncrementalConfigs)."""
    if not incremental:
        return {c.name: c.value for c in configs if c.value is not None}
    new = dict(current)
    for c in configs:
        if c.config_operation == OP_SET:
            new[c.name] = c.value or ""
        elif c.config_operation == OP_DELETE:
            new.pop(c.name, None)
        else:
            raise KafkaError(ErrorCode.invalid_config, f"Config value {_OP_NAMES.get(c.config_operation, '?')} "
                             f"is not allowed for config key: {c.name}")
    return new
