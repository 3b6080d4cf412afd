"""The transaction coordinator (KIP-98): Kafka's TransactionCoordinator, TransactionStateManager and
TransactionMetadata, with its state in `__transaction_state`."""
