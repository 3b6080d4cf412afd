"""Client quotas (KIP-13, KIP-55, KIP-124, KIP-546): the entities and keys, the per-client rate sensors and
throttle times of Kafka's ClientQuotaManager, and where the quota configs are kept."""
