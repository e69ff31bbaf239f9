// The workload of tests/data/make_kafka4_corpus.py, run against a real Kafka broker (4.x, or 3.9 with fewer
// parts) with the release's own jars: java -cp 'lib/*' Kafka4CorpusWorkload.java BOOTSTRAP PHASE [ARGS].
//
// Phase "main STATE_DIR PARTS": the newest features the broker supports finalized; a topic per codec
// (the producer's compression.type); a compacted topic written in waves (the broker rolls a segment per
// wave and cleans them, keeping the last tombstones); a topic cut by DeleteRecords; committed and aborted
// transactions with offsets sent to the transaction; a classic consumer group; and, as PARTS (comma
// separated) asks: "consumer" a KIP-848 consumer group, "regex" one subscribed by a broker-side regular
// expression, "share" a share group acknowledging what it reads, "streams" a Kafka Streams application on
// the streams group protocol.
// Phase "live SECONDS": a producer writing to topic "live" until killed or SECONDS pass, for the copies
// taken while the broker runs.
import java.nio.file.*;
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.*;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

public class Kafka4CorpusWorkload {
    static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        if (args[1].equals("live")) {
            live(common, Integer.parseInt(args[2]));
            return;
        }
        Path stateDir = Paths.get(args[2]);
        Set<String> parts = new HashSet<>(Arrays.asList(args[3].split(",")));
        try (Admin admin = Admin.create(common)) {
            features(admin);
            List<NewTopic> topics = new ArrayList<>();
            for (String codec : CODECS) topics.add(new NewTopic("codec-" + codec, 1, (short) 1));
            topics.add(new NewTopic("compacted", 1, (short) 1).configs(Map.of(
                "cleanup.policy", "compact", "segment.ms", "1000", "min.cleanable.dirty.ratio", "0.01",
                "min.compaction.lag.ms", "0")));
            topics.add(new NewTopic("deleted-records", 1, (short) 1));
            topics.add(new NewTopic("txn", 1, (short) 1));
            topics.add(new NewTopic("orders", 2, (short) 1));
            topics.add(new NewTopic("streams-input", 1, (short) 1));
            topics.add(new NewTopic("streams-output", 1, (short) 1));
            topics.add(new NewTopic("live", 1, (short) 1));
            admin.createTopics(topics).all().get();
        }
        for (String codec : CODECS) codecs(common, codec);
        compacted(common);
        deletedRecords(common);
        transactions(common);
        consume(common, "classic-group", "classic", null);
        if (parts.contains("consumer")) consume(common, "consumer-group", "consumer", null);
        if (parts.contains("regex")) consume(common, "regex-group", "consumer", "ord.*");
        if (parts.contains("share")) share(common);
        if (parts.contains("streams")) streams(common, stateDir);
        System.out.println("workload done");
    }

    static void features(Admin admin) throws Exception {
        FeatureMetadata meta = admin.describeFeatures().featureMetadata().get();
        Map<String, FeatureUpdate> updates = new TreeMap<>();
        for (String name : List.of("transaction.version", "group.version", "share.version", "streams.version",
                "eligible.leader.replicas.version")) {
            SupportedVersionRange supported = meta.supportedFeatures().get(name);
            if (supported == null) continue;
            FinalizedVersionRange finalized = meta.finalizedFeatures().get(name);
            short current = finalized == null ? 0 : finalized.maxVersionLevel();
            if (supported.maxVersion() > current)
                updates.put(name, new FeatureUpdate(supported.maxVersion(), FeatureUpdate.UpgradeType.UPGRADE));
        }
        if (!updates.isEmpty()) admin.updateFeatures(updates, new UpdateFeaturesOptions()).all().get();
        meta = admin.describeFeatures().featureMetadata().get();
        for (Map.Entry<String, FinalizedVersionRange> e : new TreeMap<>(meta.finalizedFeatures()).entrySet())
            System.out.println("feature " + e.getKey() + "=" + e.getValue().maxVersionLevel());
    }

    static Properties producerProps(Properties common) {
        Properties p = new Properties();
        p.putAll(common);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("linger.ms", "100");
        return p;
    }

    static String value(String topic, int i) {
        return topic + " record " + i + " " + "abcdefghij".repeat(1 + (i * 7) % 5);
    }

    static void codecs(Properties common, String codec) throws Exception {
        Properties p = producerProps(common);
        p.put("compression.type", codec);
        String topic = "codec-" + codec;
        try (Producer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < 24; i++) {
                ProducerRecord<String, String> r = new ProducerRecord<>(topic, 0, "k" + (i % 5), value(topic, i));
                r.headers().add("n", Integer.toString(i).getBytes());
                if (i % 6 == 0) r.headers().add("codec", codec.getBytes());
                producer.send(r);
                if (i % 8 == 7) producer.flush();
            }
        }
    }

    static void compacted(Properties common) throws Exception {
        try (Producer<String, String> producer = new KafkaProducer<>(producerProps(common))) {
            for (int wave = 0; wave < 6; wave++) {
                for (int i = 0; i < 10; i++) {
                    String key = "k" + (i % 4);
                    // Tombstones in waves 3 and 5: the last wave's stays, with its batch's deleteHorizonMs set.
                    String val = ((wave == 3 || wave == 5) && i % 4 == 0) ? null : "wave " + wave + " " + key;
                    producer.send(new ProducerRecord<>("compacted", 0, key, val));
                }
                producer.flush();
                Thread.sleep(1300);
            }
            producer.send(new ProducerRecord<>("compacted", 0, "tail", "rolls the last wave")).get();
        }
    }

    static void deletedRecords(Properties common) throws Exception {
        try (Producer<String, String> producer = new KafkaProducer<>(producerProps(common))) {
            for (int i = 0; i < 30; i++) {
                producer.send(new ProducerRecord<>("deleted-records", 0, "k" + i, value("deleted-records", i)));
                if (i % 10 == 9) producer.flush();
            }
        }
        try (Admin admin = Admin.create(common)) {
            admin.deleteRecords(Map.of(new TopicPartition("deleted-records", 0), RecordsToDelete.beforeOffset(12)))
                .all().get();
        }
    }

    static void transactions(Properties common) throws Exception {
        Properties p = producerProps(common);
        p.put("transactional.id", "tx-corpus");
        try (Producer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            for (int t = 0; t < 5; t++) {
                producer.beginTransaction();
                for (int i = 0; i < 3; i++) producer.send(new ProducerRecord<>("txn", 0, "t" + t, "txn " + t + " record " + i));
                producer.sendOffsetsToTransaction(
                    Map.of(new TopicPartition("orders", 0), new OffsetAndMetadata(t + 1, "txn " + t)),
                    new ConsumerGroupMetadata("txn-group"));
                producer.flush();
                if (t == 1 || t == 3) producer.abortTransaction(); else producer.commitTransaction();
            }
        }
        try (Producer<String, String> producer = new KafkaProducer<>(producerProps(common))) {
            for (int i = 0; i < 10; i++) producer.send(new ProducerRecord<>("orders", i % 2, "k" + i, "order " + i));
            for (int i = 0; i < 6; i++) producer.send(new ProducerRecord<>("streams-input", 0, "w" + (i % 3), "word " + i));
        }
    }

    static Properties consumerProps(Properties common, String group) {
        Properties c = new Properties();
        c.putAll(common);
        c.put("group.id", group);
        c.put("auto.offset.reset", "earliest");
        c.put("enable.auto.commit", "false");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        return c;
    }

    static void consume(Properties common, String group, String protocol, String regex) throws Exception {
        Properties c = consumerProps(common, group);
        c.put("group.protocol", protocol);
        try (Consumer<String, String> consumer = new KafkaConsumer<>(c)) {
            if (regex == null) {
                consumer.subscribe(List.of("orders"));
            } else {
                // SubscriptionPattern (KIP-848's broker-side regular expression) is 4.x only: by reflection,
                // so this file compiles against every release the corpus script runs.
                Class<?> pattern = Class.forName("org.apache.kafka.clients.consumer.SubscriptionPattern");
                consumer.getClass().getMethod("subscribe", pattern)
                    .invoke(consumer, pattern.getConstructor(String.class).newInstance(regex));
            }
            int seen = 0;
            long deadline = System.currentTimeMillis() + 60000;
            while (seen < 10 && System.currentTimeMillis() < deadline) seen += consumer.poll(Duration.ofMillis(500)).count();
            consumer.commitSync();
            System.out.println(group + " records: " + seen);
        }
    }

    static void share(Properties common) throws Exception {
        try (Admin admin = Admin.create(common)) {
            admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.valueOf("GROUP"), "share-group"),
                List.of(new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
                .all().get();
        }
        Properties c = consumerProps(common, "share-group");
        c.remove("auto.offset.reset");
        c.remove("enable.auto.commit");
        c.put("share.acknowledgement.mode", "explicit");
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(c)) {
            consumer.subscribe(List.of("orders"));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 60000;
            while (seen < 10 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    // Most accepted, one in five rejected (archived), so the share state holds both.
                    consumer.acknowledge(r, r.offset() % 5 == 4 ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT);
                    seen++;
                }
                consumer.commitSync();
            }
            System.out.println("share records: " + seen);
        }
    }

    static void streams(Properties common, Path stateDir) throws Exception {
        Properties s = new Properties();
        s.putAll(common);
        s.put("application.id", "wordcount");
        s.put("group.protocol", "streams");
        s.put("state.dir", stateDir.toString());
        s.put("commit.interval.ms", "200");
        s.put("default.key.serde", Serdes.StringSerde.class.getName());
        s.put("default.value.serde", Serdes.StringSerde.class.getName());
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream("streams-input").groupByKey().count(Materialized.as("counts"))
            .toStream().to("streams-output", Produced.with(Serdes.String(), Serdes.Long()));
        Properties c = consumerProps(common, "streams-output-reader");
        c.put("group.protocol", "consumer");
        c.put("value.deserializer", LongDeserializer.class.getName());
        try (KafkaStreams app = new KafkaStreams(builder.build(), s);
             Consumer<String, Long> reader = new KafkaConsumer<>(c)) {
            app.start();
            reader.subscribe(List.of("streams-output"));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 120000;
            while (seen < 3 && System.currentTimeMillis() < deadline) seen += reader.poll(Duration.ofMillis(500)).count();
            reader.commitSync();
            System.out.println("streams output records: " + seen + " state " + app.state());
            if (seen < 3) throw new IllegalStateException("the streams application produced nothing");
            Thread.sleep(1000);
            app.close(Duration.ofSeconds(30));
        }
    }

    static void live(Properties common, int seconds) throws Exception {
        Properties p = producerProps(common);
        p.put("compression.type", "lz4");
        p.put("linger.ms", "20");
        p.put("delivery.timeout.ms", "120000");
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        try (Producer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; System.currentTimeMillis() < deadline; i++) {
                producer.send(new ProducerRecord<>("live", 0, "live-" + (i % 10), value("live", i)));
                if (i % 20 == 19) {
                    producer.flush();
                    System.out.println("live " + (i + 1));
                    System.out.flush();
                }
                Thread.sleep(10);
            }
        }
    }
}
