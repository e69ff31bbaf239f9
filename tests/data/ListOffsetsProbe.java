// Asks a broker's ListOffsets through the Admin client, one spec at a time, and prints each answer as a JSON
// line: the offset, timestamp and leader epoch exactly as the broker returned them (the tiered corpus keeps
// these as seek-by-time's oracle). Run as a single-file program against a Kafka release's client jars:
//   java -cp '<lib>/*' ListOffsetsProbe.java <bootstrap> <topic>:<partition>:<spec> ...
// where <spec> is earliest, latest, max-timestamp, earliest-local, latest-tiered, earliest-pending-upload or a
// timestamp in epoch milliseconds.

import java.util.Map;
import java.util.Optional;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;

public class ListOffsetsProbe {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        try (Admin admin = Admin.create(props)) {
            for (int i = 1; i < args.length; i++) {
                String[] parts = args[i].split(":");
                TopicPartition tp = new TopicPartition(parts[0], Integer.parseInt(parts[1]));
                String spec = parts[2];
                String answer;
                try {
                    ListOffsetsResultInfo info = admin.listOffsets(Map.of(tp, offsetSpec(spec))).partitionResult(tp).get();
                    Optional<Integer> epoch = info.leaderEpoch();
                    answer = "\"offset\":" + info.offset() + ",\"timestamp\":" + info.timestamp()
                        + ",\"leaderEpoch\":" + (epoch.isPresent() ? epoch.get().toString() : "null");
                } catch (Exception e) {
                    Throwable cause = e.getCause() != null ? e.getCause() : e;
                    answer = "\"error\":\"" + cause.getClass().getSimpleName() + ": "
                        + String.valueOf(cause.getMessage()).replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
                }
                System.out.println("{\"topic\":\"" + tp.topic() + "\",\"partition\":" + tp.partition()
                    + ",\"spec\":\"" + spec + "\"," + answer + "}");
            }
        }
    }

    static OffsetSpec offsetSpec(String spec) throws Exception {
        switch (spec) {
            case "earliest": return OffsetSpec.earliest();
            case "latest": return OffsetSpec.latest();
            case "max-timestamp": return OffsetSpec.maxTimestamp();
            case "earliest-local": return OffsetSpec.earliestLocal();
            case "latest-tiered": return OffsetSpec.latestTiered();
            case "earliest-pending-upload":
                // Only in releases that have it (4.2+); looked up by name so older clients still compile this.
                return (OffsetSpec) OffsetSpec.class.getMethod("earliestPendingUpload").invoke(null);
            default: return OffsetSpec.forTimestamp(Long.parseLong(spec));
        }
    }
}
