"""max.incremental.fetch.session.cache.slots (Kafka's key, default 1000, at least 0)."""

import pytest

from broker.config import BrokerConfig, ConfigError


def test_cache_slots_key_default_and_parse():
    assert BrokerConfig.from_properties({}).max_incremental_fetch_session_cache_slots == 1000
    cfg = BrokerConfig.from_properties({"max.incremental.fetch.session.cache.slots": "16"})
    assert cfg.max_incremental_fetch_session_cache_slots == 16
    assert BrokerConfig.from_properties({"max.incremental.fetch.session.cache.slots": "0"}
                                        ).max_incremental_fetch_session_cache_slots == 0


def test_cache_slots_negative_names_the_key():
    with pytest.raises(ConfigError, match=r"max\.incremental\.fetch\.session\.cache\.slots"):
        BrokerConfig.from_properties({"max.incremental.fetch.session.cache.slots": "-1"})
