"""Real Apache Kafka brokers for the tests: releases fetched from Maven Central, KRaft brokers on 127.0.0.1.

Nothing of Kafka is committed: `releases.fetch(version)` resolves the release's jars with `mvn` into a
cache outside the checkout (``$KDUMP_KAFKA_CACHE``, else ``~/.cache/kdump/kafka``), one directory per
version. `cluster.KafkaCluster` formats storage and starts one or three combined broker+controller
nodes on free ports, and stops them by PID (SIGTERM for a clean shutdown, SIGKILL for a crash).
`tools` runs the release's own command-line classes (DumpLogSegments, the console tools).

Tests reach all of it through the fixtures in `tests/brokers/fixtures.py`; they skip, saying why,
where Java, Maven or the jars are missing.
"""
