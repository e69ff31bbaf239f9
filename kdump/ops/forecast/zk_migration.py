"""A metadata log left over from a ZooKeeper migration (KIP-866) that was never finished.

What a release does with the last ZkMigrationStateRecord (checked against the released jars and, for
4.4, a real broker): Kafka 4.0 to 4.4 replay the record as a no-op (the controller's replay switch
skips it, as it skips NoOpRecord) and activate in KRaft mode, whatever the state says: the node starts.
What the migration left undone is then undone for good: a broker still in ZooKeeper mode cannot register
("Controller does not support registering ZK brokers"), and metadata that ZooKeeper-mode brokers wrote
after the last dual write is not in this log. Kafka 3.x still migrates: with
`zookeeper.metadata.migration.enable=false` its controller completes the migration at activation, with
`true` it stays in migration and needs ZooKeeper; that setting is not in the log dirs.
"""

from __future__ import annotations

from kdump.ops.metadata import MetadataImage

STATES = {0: "NONE", 1: "MIGRATION", 2: "PRE_MIGRATION", 3: "POST_MIGRATION", 4: "ZK"}
FINISHED = (0, 3)


def zk_migration_notes(image: MetadataImage, kafka_version: str) -> list[str]:
    """What cannot be known from the log dirs about an unfinished ZooKeeper migration in the image
    (no refusal: no release refuses to start on it)."""
    state = image.zk_migration_state
    if state is None or state in FINISHED:
        return []
    name = STATES.get(state, str(state))
    where = f"ZkMigrationStateRecord at offset {image.zk_migration_offset} leaves a ZooKeeper migration in state {name}"
    if int(kafka_version.split(".")[0]) >= 4:
        return [
            f"{where}: Kafka {kafka_version} ignores it and starts in KRaft mode; brokers still in ZooKeeper "
            "mode cannot register, and what they wrote to ZooKeeper after the last dual write is not in "
            "this metadata"
        ]
    return [
        f"{where}: Kafka {kafka_version} completes the migration at start if zookeeper.metadata.migration."
        "enable=false, or stays in it and needs ZooKeeper if true; that setting is not in the log dirs"
    ]
