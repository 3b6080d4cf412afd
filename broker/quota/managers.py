"""The quota managers of one broker, one per quota type, fed the quota configs of every entity."""

from __future__ import annotations

from broker.quota.controller_mutation import ControllerMutationQuotaManager
from broker.quota.entity import QuotaEntity
from broker.quota.manager import FETCH, KEY_OF, PRODUCE, REQUEST, ClientQuotaManager, QuotaSettings
from common.clock import Clock


class QuotaManagers:
    """Produce, Fetch, Request and ControllerMutation."""

    def __init__(self, settings: QuotaSettings, clock: Clock) -> None:
        self.produce = ClientQuotaManager(PRODUCE, settings, clock)
        self.fetch = ClientQuotaManager(FETCH, settings, clock)
        self.request = ClientQuotaManager(REQUEST, settings, clock)
        self.controller_mutation = ControllerMutationQuotaManager(settings, clock)

    def all(self) -> tuple[ClientQuotaManager, ...]:
        return self.produce, self.fetch, self.request, self.controller_mutation

    def apply(self, entity: QuotaEntity, values: dict[str, float]) -> None:
        """An entity's quota configs changed (or were loaded): every manager takes the entity, with its own key or
        none (ZooKeeper mode's QuotaConfigHandler.updateQuotaConfig)."""
        for manager in self.all():
            manager.update_quota(entity, values.get(KEY_OF[manager.quota_type]))
