// A share group on a real broker (KIP-932, Kafka 4.1+): what the tests need of it, one mode per run, one
// JSON line out. Run as a single-file program against a release's client jars:
//   java -cp '<lib>/*' SharePartitionProbe.java consume <bootstrap> <group> <topic> <records>
//       finalizes the newest share.version, sets share.auto.offset.reset=earliest for the group, and reads
//       and accepts records until <records> were delivered;
//   java ... SharePartitionProbe.java start <bootstrap> <group> <topic>
//       the share-partition start offset of partition 0 (Admin listShareGroupOffsets);
//   java ... SharePartitionProbe.java next <bootstrap> <group> <topic>
//       the first offset delivered to a new member of the group within 15 s (null: none), released again.

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.admin.SupportedVersionRange;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class SharePartitionProbe {
    public static void main(String[] args) throws Exception {
        String mode = args[0], bootstrap = args[1], group = args[2], topic = args[3];
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        switch (mode) {
            case "consume": consume(common, group, topic, Integer.parseInt(args[4])); break;
            case "start": start(common, group, topic); break;
            case "next": next(common, group, topic); break;
            default: throw new IllegalArgumentException(mode);
        }
    }

    static KafkaShareConsumer<byte[], byte[]> consumer(Properties common, String group) {
        Properties c = new Properties();
        c.putAll(common);
        c.put("group.id", group);
        c.put("share.acknowledgement.mode", "explicit");
        c.put("key.deserializer", ByteArrayDeserializer.class.getName());
        c.put("value.deserializer", ByteArrayDeserializer.class.getName());
        return new KafkaShareConsumer<>(c);
    }

    static void consume(Properties common, String group, String topic, int records) throws Exception {
        try (Admin admin = Admin.create(common)) {
            FeatureMetadata meta = admin.describeFeatures().featureMetadata().get();
            SupportedVersionRange supported = meta.supportedFeatures().get("share.version");
            FinalizedVersionRange finalized = meta.finalizedFeatures().get("share.version");
            short current = finalized == null ? 0 : finalized.maxVersionLevel();
            if (supported != null && supported.maxVersion() > current) {
                admin.updateFeatures(Map.of("share.version", new FeatureUpdate(supported.maxVersion(),
                    FeatureUpdate.UpgradeType.UPGRADE)), new UpdateFeaturesOptions()).all().get();
            }
            admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group),
                List.of(new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"),
                    AlterConfigOp.OpType.SET)))).all().get();
        }
        int seen = 0;
        try (KafkaShareConsumer<byte[], byte[]> consumer = consumer(common, group)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 90000;
            while (seen < records && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                    seen++;
                }
                consumer.commitSync();
            }
        }
        System.out.println("{\"seen\":" + seen + "}");
    }

    static void start(Properties common, String group, String topic) throws Exception {
        try (Admin admin = Admin.create(common)) {
            Map<TopicPartition, SharePartitionOffsetInfo> offsets = admin
                .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
                .partitionsToOffsetInfo(group).get();
            SharePartitionOffsetInfo info = offsets.get(new TopicPartition(topic, 0));
            System.out.println("{\"start\":" + (info == null ? "null" : Long.toString(info.startOffset())) + "}");
        }
    }

    static void next(Properties common, String group, String topic) {
        Long first = null;
        try (KafkaShareConsumer<byte[], byte[]> consumer = consumer(common, group)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 15000;
            while (first == null && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    if (first == null || r.offset() < first) first = r.offset();
                    consumer.acknowledge(r, AcknowledgeType.RELEASE);
                }
            }
            consumer.commitSync();
        }
        System.out.println("{\"first\":" + (first == null ? "null" : first.toString()) + "}");
    }
}
