// One Kafka 4.x Java consumer with group.protocol=consumer (KIP-848), run with the single-file source launcher:
//   java -cp '<kafka 4.1 libs>/*' ConsumerProtocolMember.java BOOTSTRAP TOPIC GROUP COUNT
// Reads COUNT records, commits them synchronously, prints "assignment <partitions>" on every change and
// "consumed <n>" at the end, then closes (leaving the group with member epoch -1).
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ConsumerProtocolMember {
    public static void main(String[] args) {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", args[2]);
        props.put("group.protocol", "consumer");
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        int wanted = Integer.parseInt(args[3]);
        int consumed = 0;
        String last = "";
        long deadline = System.currentTimeMillis() + 60_000;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(args[1]));
            while (consumed < wanted && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                consumed += records.count();
                if (!records.isEmpty()) {
                    consumer.commitSync();
                }
                TreeSet<Integer> parts = new TreeSet<>();
                for (TopicPartition tp : consumer.assignment()) {
                    parts.add(tp.partition());
                }
                if (!parts.toString().equals(last)) {
                    last = parts.toString();
                    System.out.println("assignment " + last);
                }
            }
        }
        System.out.println("consumed " + consumed);
    }
}
