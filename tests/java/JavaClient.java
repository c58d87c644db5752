// The Java client (rocketmq-client 5.3.3, from the jars the launcher caches) as the tests' peer:
// what a Java producer stores and what a Java consumer reads, beside ours. Source-file mode:
//   java -cp "<cache>/rocketmq-5.3.3/lib/*" tests/java/JavaClient.java MODE ARGS...
// Modes (each prints JSON lines on stdout):
//   produce NAMESRV TOPIC GROUP COMPRESS_TYPES COUNT SIZE
//       for each of the comma-separated COMPRESS_TYPES (ZLIB, LZ4, ZSTD), a producer with that
//       compressType sends COUNT messages, keys <TYPE>-k0..., bodies body(i, SIZE) below
//       (compressed when 4 KiB or more, as Java decides). One line per send:
//       {"key": ..., "status": ...}
//   consume NAMESRV TOPIC GROUP COUNT SECONDS [FROM]
//       a DefaultMQPushConsumer (ConsumeFromWhere FROM: FIRST, the default, or LAST); one
//       line per message:
//       {"key": ..., "len": ..., "crc": ..., "queue": ..., "broker": ...}; stops after COUNT
//       messages or SECONDS. Prints {"ready": true} once started.
//   member NAMESRV TOPIC GROUP [BROKER]
//       as consume, until stdin closes (a group member a test starts and stops); BROKER:
//       setClientRebalance(false), the broker's assignment and request mode, rebalanced
//       every second (-Drocketmq.client.rebalance.waitInterval is read once per JVM)
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.compression.CompressionType;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class JavaClient {
    /** The body of message i: its key repeated, cut to size (tests/java_client.py: body()). */
    static byte[] body(int i, int size) {
        byte[] unit = ("k" + i + ";").getBytes(StandardCharsets.US_ASCII);
        byte[] out = new byte[size];
        for (int p = 0; p < size; p++) {
            out[p] = unit[p % unit.length];
        }
        return out;
    }

    static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "produce" -> produce(args[1], args[2], args[3], args[4],
                    Integer.parseInt(args[5]), Integer.parseInt(args[6]));
            case "consume" -> consume(args[1], args[2], args[3], Long.parseLong(args[4]),
                    Double.parseDouble(args[5]), false, args.length > 6 ? args[6] : "FIRST", false);
            case "member" -> {
                boolean broker = args.length > 4 && args[4].equals("BROKER");
                if (broker) {
                    System.setProperty("rocketmq.client.rebalance.waitInterval", "1000");
                }
                consume(args[1], args[2], args[3], Long.MAX_VALUE, 0, true, "FIRST", broker);
            }
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    static void produce(String namesrv, String topic, String group, String compressTypes,
            int count, int size) throws Exception {
        for (String compress : compressTypes.split(",")) {
            DefaultMQProducer producer = new DefaultMQProducer(group);
            producer.setNamesrvAddr(namesrv);
            producer.setCompressType(CompressionType.of(compress));
            // make test runs three broker sessions on two cores: the first send (route lookup,
            // connect, store) has been seen to pass the default 3 s sendMsgTimeout there
            producer.setSendMsgTimeout(15_000);
            // and its route lookup (3 s by default) has too: the NameServer answers late there
            producer.setMqClientApiTimeout(15_000);
            producer.start();
            try {
                for (int i = 0; i < count; i++) {
                    String key = compress + "-k" + i;
                    SendResult result = producer.send(new Message(topic, "", key, body(i, size)));
                    emit("{\"key\": \"" + key + "\", \"status\": \"" + result.getSendStatus()
                            + "\"}");
                }
            } finally {
                producer.shutdown();
            }
        }
    }

    static void consume(String namesrv, String topic, String group, long count, double seconds,
            boolean untilStdinCloses, String from, boolean brokerRebalance) throws Exception {
        AtomicLong seen = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(from.equals("LAST")
                ? ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
                : ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.setClientRebalance(!brokerRebalance);
        consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
            for (MessageExt message : messages) {
                CRC32 crc = new CRC32();
                crc.update(message.getBody());
                emit("{\"key\": \"" + message.getKeys() + "\", \"len\": " + message.getBody().length
                        + ", \"crc\": " + crc.getValue() + ", \"queue\": " + message.getQueueId()
                        + ", \"broker\": \"" + message.getBrokerName() + "\"}");
                if (seen.incrementAndGet() >= count) {
                    done.countDown();
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        emit("{\"ready\": true}");
        if (untilStdinCloses) {
            InputStream in = System.in;
            while (in.read() != -1) {
                // a test keeps this member in the group until it closes our stdin
            }
        } else {
            done.await((long) (seconds * 1000), TimeUnit.MILLISECONDS);
        }
        consumer.shutdown();
        emit("{\"done\": " + seen.get() + "}");
    }
}
