"""`kafkascope configs --entity-type users`: SCRAM credentials as kafka-configs.sh manages them (KIP-554 APIs).

`--add-config 'SCRAM-SHA-512=[iterations=8192,password=alice-secret]'` upserts, `--delete-config SCRAM-SHA-512`
deletes, `--describe` lists each user's mechanisms and iterations.
"""

from __future__ import annotations

import argparse

from confluent_kafka.admin import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from broker.security import scram
from kafkascope.cli import common as client
from kafkascope.cli.common import UsageError

MECHANISMS = {"SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256, "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512}


def describe(admin, name: str | None) -> None:
    futures = admin.describe_user_scram_credentials([name] if name else None)
    found = client.result(futures) if not isinstance(futures, dict) else {
        user: client.result(f) for user, f in futures.items()}
    for user, desc in sorted(found.items()):
        infos = ", ".join(f"{m.name.replace('_', '-')}=iterations={i.iterations}"
                          for i in desc.scram_credential_infos for m in [ScramMechanism(i.mechanism)])
        print(f"SCRAM credential configs for user-principal '{user}' are {infos}")


def alter(admin, name: str, add: dict[str, str], delete: list[str]) -> None:
    alterations: list = []
    for key, value in add.items():
        if key not in MECHANISMS:
            raise UsageError(f"Invalid config(s): {key} (this command sets SCRAM-SHA-256 / SCRAM-SHA-512 only; "
                             "set client quotas with Kafka's kafka-configs.sh: confluent-kafka has no quota API)")
        iterations, password = scram.parse_scram_config_value(f"[{value}]" if "password=" in value else value)
        info = ScramCredentialInfo(MECHANISMS[key], iterations)
        alterations.append(UserScramCredentialUpsertion(name, info, password.encode("utf-8")))
    for key in delete:
        if key not in MECHANISMS:
            raise UsageError(f"Invalid config(s): {key}")
        alterations.append(UserScramCredentialDeletion(name, MECHANISMS[key]))
    if not alterations:
        raise UsageError("--alter needs --add-config and/or --delete-config")
    client.result(admin.alter_user_scram_credentials(alterations)[name])
    print(f"Completed updating config for user {name}.")


def run(admin, name: str | None, args: argparse.Namespace, add: dict[str, str]) -> int:
    if args.describe:
        describe(admin, name)
        return 0
    if name is None:
        raise UsageError("--alter needs --entity-name")
    alter(admin, name, add, [k.strip() for k in (args.delete_config or "").split(",") if k.strip()])
    return 0
