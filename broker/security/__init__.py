"""Security logic as Kafka implements it, free of I/O: SASL (PLAIN, SCRAM), JAAS config, ACLs, API permissions.

The server and handlers drive these objects; nothing here opens a socket, reads a file or talks to ZooKeeper.
See docs/security.md.
"""
