"""The security kit (kafkascope/local/security.py) on an Apache Kafka 4.x KRaft cluster: what `cluster up --impl
apache-kafka --version 4.1.1 --security sasl_ssl` puts in each node's server.properties and storage format.

    props = node_security_props(kit)          # JAAS, key/trust stores, StandardAuthorizer, super.users
    format_args(kit)                          # --add-scram for kafka-storage format (KIP-900)

What differs from the ZooKeeper-mode kit (issue 15's example, SecurityKit.server_properties):
- the authorizer is `org.apache.kafka.metadata.authorizer.StandardAuthorizer` (ACLs in the metadata log, KIP-801);
  same `super.users=User:admin` and `allow.everyone.if.no.acl.found=false`, so the same ACL decisions;
- the CONTROLLER listener is SASL_SSL too, with PLAIN as `sasl.mechanism.controller.protocol` (Kafka's default
  is GSSAPI). PLAIN and not SCRAM, because SCRAM credentials live in the metadata log that the controllers must
  first replicate: Kafka does not take SCRAM on the controller listener (KIP-631's security section);
- the admin's SCRAM-SHA-512 credential is written at format time (`kafka-storage format --add-scram
  'SCRAM-SHA-512=[name=admin,password=...]'`, KIP-900) into the bootstrap checkpoint, instead of an
  AlterUserScramCredentials sent after start-up (a KRaft cluster has no /config/users to write to earlier).
The node's listeners, listener.security.protocol.map and inter-broker listener are kraft.node_props' own.
"""

from __future__ import annotations

from kafkascope.local import security as seckit

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CONTROLLER = "CONTROLLER"
CONTROLLER_MECHANISM = "PLAIN"   # the only one of the kit's mechanisms Kafka's controller listener takes
CLIENT_LISTENER = seckit.LISTENER


def node_security_props(kit: seckit.SecurityKit) -> dict[str, str]:
    """The security entries of every KRaft node (broker, controller or both). A broker-only node also needs the
    CONTROLLER entries: it logs in to the controllers with them (sasl.mechanism.controller.protocol and the
    listener.name.controller JAAS entry), as Kafka's BrokerToControllerChannelManager does."""
    ctl = CONTROLLER.lower()
    return {
        **kit.sasl_ssl_acl_properties(AUTHORIZER),
        "sasl.mechanism.controller.protocol": CONTROLLER_MECHANISM,
        f"listener.name.{ctl}.sasl.enabled.mechanisms": CONTROLLER_MECHANISM,
        f"listener.name.{ctl}.plain.sasl.jaas.config": kit.plain_jaas(),
    }


def format_args(kit: seckit.SecurityKit) -> list[str]:
    """kafka-storage format's --add-scram for the admin (KIP-900). Kafka's ScramParser splits the value on `,`
    and `=`; the kit's passwords are token_urlsafe (letters, digits, `-`, `_`), so no quoting is needed."""
    if not all(c.isalnum() or c in "-_" for c in kit.admin_password):
        raise seckit.SecurityKitError("the admin password has characters kafka-storage --add-scram cannot take")
    return ["--add-scram", f"{seckit.CLIENT_MECHANISM}=[name={seckit.ADMIN},password={kit.admin_password},"
                           f"iterations={seckit.SCRAM_ITERATIONS}]"]


def zk_only_keys(kit: seckit.SecurityKit) -> set[str]:
    """Entries of the ZooKeeper-mode kit a KRaft node must not inherit (its AclAuthorizer, the JAAS entries
    without the controller's): they are replaced by node_security_props and kraft.node_props' listeners."""
    return set(kit.server_properties(1))
