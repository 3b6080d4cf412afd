"""The consumer group protocol of KIP-848 (group.protocol=consumer): pure logic, no I/O.

`assignors` (Kafka's UniformAssignor and RangeAssignor), `reconcile` (Kafka's CurrentAssignmentBuilder),
`group` (Kafka's ConsumerGroup: epochs, members, target assignment, partition owners) and `coordinator` (the
consumer-group part of Kafka's GroupMetadataManager: ConsumerGroupHeartbeat, sessions, describe). Time comes in
as milliseconds from the caller's clock.
"""
