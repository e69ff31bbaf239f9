// Where a consumer of a group resumes: Kafka's own Java consumer, with the group's committed offset, the
// given auto.offset.reset, and its usual validation of the committed leader epoch (OffsetsForLeaderEpoch).
// Prints one JSON line: the first offset it receives, or, when no record comes, its position; or the
// exception a reset policy of none ends in. Run as a single-file program against a release's client jars:
//   java -cp '<lib>/*' ResumeProbe.java <bootstrap> <group> <topic> <partition> <earliest|latest|none>

import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ResumeProbe {
    public static void main(String[] args) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, args[4]);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        TopicPartition tp = new TopicPartition(args[2], Integer.parseInt(args[3]));
        String answer;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.assign(List.of(tp));
            answer = null;
            for (int i = 0; i < 12 && answer == null; i++) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                if (!records.isEmpty()) {
                    answer = "\"first\":" + records.records(tp).get(0).offset();
                }
            }
            if (answer == null) {
                answer = "\"position\":" + consumer.position(tp, Duration.ofSeconds(10));
            }
        } catch (Exception e) {
            answer = "\"error\":\"" + e.getClass().getSimpleName() + "\"";
        }
        System.out.println("{\"group\":\"" + args[1] + "\",\"reset\":\"" + args[4] + "\"," + answer + "}");
    }
}
