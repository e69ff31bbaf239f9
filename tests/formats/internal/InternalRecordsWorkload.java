// Writes real internal records on a running broker, for tests/formats/internal/test_live_internal_records.py:
// metadata (topics, configs, ACLs, client quotas, SCRAM credentials, a deleted topic), a classic and a
// KIP-848 consumer group (one subscribed by a broker-side regular expression) with offset commits, committed and
// aborted transactions, and a share group. Run with the release's jars: java -cp 'lib/*' THIS BOOTSTRAP.
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.acl.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.quota.*;
import org.apache.kafka.common.resource.*;
import org.apache.kafka.common.serialization.*;

public class InternalRecordsWorkload {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(common)) {
            admin.createTopics(List.of(new NewTopic("orders", 2, (short) 1), new NewTopic("old", 1, (short) 1)))
                .all().get();
            admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.TOPIC, "orders"),
                List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "86400000"), AlterConfigOp.OpType.SET))))
                .all().get();
            admin.createAcls(List.of(new AclBinding(new ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL),
                new AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)))).all().get();
            admin.alterClientQuotas(List.of(new ClientQuotaAlteration(
                new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER, "alice")),
                List.of(new ClientQuotaAlteration.Op("producer_byte_rate", 1024.0))))).all().get();
            admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion("alice",
                new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), "secret"))).all().get();
            admin.deleteTopics(List.of("old")).all().get();
        }
        Properties p = new Properties();
        p.putAll(common);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (Producer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < 10; i++) producer.send(new ProducerRecord<>("orders", i % 2, "k" + i, "v" + i)).get();
        }
        Properties tp = new Properties();
        tp.putAll(p);
        tp.put("transactional.id", "tx-live");
        try (Producer<String, String> producer = new KafkaProducer<>(tp)) {
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>("orders", 0, "tx", "committed")).get();
            producer.commitTransaction();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>("orders", 1, "tx", "aborted")).get();
            producer.abortTransaction();
        }
        consume(common, "classic-group", "classic", null);
        consume(common, "consumer-group", "consumer", null);
        consume(common, "regex-group", "consumer", new SubscriptionPattern("ord.*"));
        share(common);
        System.out.println("workload done");
    }

    static void consume(Properties common, String group, String protocol, SubscriptionPattern pattern) {
        Properties c = new Properties();
        c.putAll(common);
        c.put("group.id", group);
        c.put("group.protocol", protocol);
        c.put("auto.offset.reset", "earliest");
        c.put("enable.auto.commit", "false");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        try (Consumer<String, String> consumer = new KafkaConsumer<>(c)) {
            if (pattern != null) consumer.subscribe(pattern); else consumer.subscribe(List.of("orders"));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 30000;
            while (seen < 10 && System.currentTimeMillis() < deadline) seen += consumer.poll(Duration.ofMillis(500)).count();
            consumer.commitSync();
        }
    }

    static void share(Properties common) {
        Properties c = new Properties();
        c.putAll(common);
        c.put("group.id", "share-group");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        try (Admin admin = Admin.create(common)) {
            admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, "share-group"),
                List.of(new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
                .all().get();
        } catch (Exception e) {
            System.out.println("share group config: " + e);
        }
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(c)) {
            consumer.subscribe(List.of("orders"));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 30000;
            while (seen < 5 && System.currentTimeMillis() < deadline) seen += consumer.poll(Duration.ofMillis(500)).count();
            consumer.commitSync();
            System.out.println("share records: " + seen);
        }
    }
}
