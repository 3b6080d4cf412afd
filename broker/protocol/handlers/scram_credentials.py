"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), KIP-554: SCRAM users created the Kafka way.

The credential store is the server's (broker.scram_storage): ZooKeeper `/config/users/<user>` in a cluster,
the local metadata directory standalone. Clients send salt and salted password, never the password.
"""

from __future__ import annotations

from broker.errors import ErrorCode, KafkaError
from broker.protocol import authz
from broker.protocol.api import ApiSpec, RequestContext
from broker.scram_storage import ScramCredentialStore
from broker.security import scram
from broker.security.scram import Alteration

DESCRIBE_USER_SCRAM_CREDENTIALS, ALTER_USER_SCRAM_CREDENTIALS = 50, 51
CLUSTER_DENIED = "Cluster authorization failed."   # Errors.CLUSTER_AUTHORIZATION_FAILED's message


def _store(ctx: RequestContext) -> ScramCredentialStore:
    return ctx.broker.server.security.credentials


async def handle_describe_user_scram_credentials(ctx: RequestContext, req) -> dict:
    if denied := authz.request_error(ctx, DESCRIBE_USER_SCRAM_CREDENTIALS):   # DESCRIBE on the cluster
        return {"throttle_time": 0, "error_code": denied, "error_message": CLUSTER_DENIED, "results": []}
    requested = [u.name for u in req.users] if req.users else None
    results = [{"user": user, "error_code": code, "error_message": message,
                "credential_infos": [{"mechanism": m, "iterations": it} for m, it in infos]}
               for user, code, message, infos in scram.describe_users(requested, _store(ctx).all())]
    return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "results": results}


async def handle_alter_user_scram_credentials(ctx: RequestContext, req) -> dict:
    if denied := authz.request_error(ctx, ALTER_USER_SCRAM_CREDENTIALS):   # ALTER on the cluster
        users = dict.fromkeys([d.name for d in req.deletions] + [u.name for u in req.upsertions])
        return {"throttle_time": 0, "results": [{"user": u, "error_code": denied, "error_message": CLUSTER_DENIED}
                                                for u in users]}
    store = _store(ctx)
    existing = store.all()
    alterations = [Alteration(d.name, d.mechanism) for d in req.deletions] + [
        Alteration(u.name, u.mechanism, u.iterations, bytes(u.salt), bytes(u.salted_password))
        for u in req.upsertions]
    outcome = scram.validate_alterations(
        alterations, lambda user, mech: mech.mechanism_name in existing.get(user, {}))
    for a in alterations:
        if outcome[a.user][0] != 0:
            continue
        mechanism = scram.mechanism_for_type(a.mechanism_type)
        assert mechanism is not None   # validated
        credential = None if a.salted_password is None else scram.credential_from_salted_password(
            mechanism, a.salt, a.salted_password, a.iterations)
        try:
            store.set(a.user, mechanism, credential)
        except KafkaError as e:   # the file could not be written (a full disk): this user's change is not made
            outcome[a.user] = (e.code, e.message)
    return {"throttle_time": 0, "results": [
        {"user": user, "error_code": code, "error_message": message} for user, (code, message) in outcome.items()]}


APIS = [
    ApiSpec(DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, handle_describe_user_scram_credentials),
    ApiSpec(ALTER_USER_SCRAM_CREDENTIALS, 0, 0, handle_alter_user_scram_credentials),
]
