// The Java client's side of benchmarks/consumer.py: a DefaultMQPushConsumer (fresh group, from
// the first offset, 20 consume threads, a listener that only counts) drains a pre-filled topic.
// Prints one JSON line. Run with the RocketMQ jars the launcher caches:
//   java -cp "$HOME/.cache/rocketmq-actors/rocketmq-5.3.3/lib/*" ConsumeBench.java \
//        NAMESRV TOPIC GROUP COUNT
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;

public class ConsumeBench {
    static long rssKb() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        return 0;
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0], topic = args[1], group = args[2];
        long count = Long.parseLong(args[3]);
        AtomicLong seen = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setConsumeThreadMin(20);
        consumer.setConsumeThreadMax(20);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            if (seen.addAndGet(msgs.size()) >= count) {
                done.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        long began = System.nanoTime();
        consumer.start();
        boolean finished = done.await(600, TimeUnit.SECONDS);
        double seconds = (System.nanoTime() - began) / 1e9;
        long rss = rssKb();
        consumer.shutdown();
        System.out.printf(
            "{\"finished\": %b, \"messages\": %d, \"seconds\": %.2f, \"msgs_per_s\": %d, \"rss_mb\": %.1f}%n",
            finished, seen.get(), seconds, Math.round(seen.get() / seconds), rss / 1024.0);
        System.exit(0);
    }
}
