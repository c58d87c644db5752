// The Java client's side of benchmarks/consumer.py: a DefaultMQPushConsumer (fresh group, from
// the first offset, 20 consume threads, a listener that only counts) drains a pre-filled topic.
// Prints one JSON line: the rate from start() and from the first message received, and the
// process's CPU seconds (every thread) from the first message to the last. Run with the
// RocketMQ jars the launcher caches:
//   java -cp "$HOME/.cache/rocketmq-actors/rocketmq-5.3.3/lib/*" ConsumeBench.java \
//        NAMESRV TOPIC GROUP COUNT [HANDLER_MS SECONDS]
// With HANDLER_MS and SECONDS it is the slow-handler memory run instead: each message sleeps
// HANDLER_MS in the listener, for SECONDS; RSS is sampled every 250 ms.
//   java ... ConsumeBench.java --serve NAMESRV
// keeps one JVM for many drains (so that its JIT warms as a long-running consumer's does): it
// prints {"ready": true}, then per line "drain TOPIC GROUP COUNT" runs one drain as above and
// prints its JSON line; "quit" (or the end of input) ends it.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.lang.management.ManagementFactory;
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

    // this process's CPU time, every thread (the JIT and GC included)
    static long cpuNs() {
        return ((com.sun.management.OperatingSystemMXBean)
            ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    // a fresh group from the first offset, 20 consume threads: both runs use the same setup
    static DefaultMQPushConsumer consumer(String namesrv, String topic, String group)
            throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setConsumeThreadMin(20);
        consumer.setConsumeThreadMax(20);
        consumer.subscribe(topic, "*");
        return consumer;
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("--serve")) {
            serve(args[1]);
            System.exit(0);
        }
        String namesrv = args[0], topic = args[1], group = args[2];
        long count = Long.parseLong(args[3]);
        if (args.length > 4) {
            slow(namesrv, topic, group, Long.parseLong(args[4]), Double.parseDouble(args[5]));
            return;
        }
        System.out.println(drain(namesrv, topic, group, count));
        System.exit(0);
    }

    static void serve(String namesrv) throws Exception {
        System.out.println("{\"ready\": true}");
        System.out.flush();
        BufferedReader in =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.trim().equals("quit")) {
            String[] words = line.trim().split(" ");
            if (words.length == 4 && words[0].equals("drain")) {
                System.out.println(drain(namesrv, words[1], words[2], Long.parseLong(words[3])));
            } else {
                System.out.println("{\"error\": \"unknown command: " + line.trim() + "\"}");
            }
            System.out.flush();
        }
    }

    static String drain(String namesrv, String topic, String group, long count) throws Exception {
        AtomicLong seen = new AtomicLong(), firstAt = new AtomicLong(), firstCpu = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        DefaultMQPushConsumer consumer = consumer(namesrv, topic, group);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            if (firstAt.compareAndSet(0, System.nanoTime())) {
                firstCpu.set(cpuNs());
            }
            if (seen.addAndGet(msgs.size()) >= count) {
                done.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        long began = System.nanoTime();
        consumer.start();
        boolean finished = done.await(600, TimeUnit.SECONDS);
        long end = System.nanoTime(), endCpu = cpuNs();
        double seconds = (end - began) / 1e9, firstS = (firstAt.get() - began) / 1e9;
        long rss = rssKb();
        consumer.shutdown();
        return String.format(
            "{\"finished\": %b, \"messages\": %d, \"seconds\": %.2f, \"msgs_per_s\": %d, "
                + "\"first_message_s\": %.2f, \"msgs_per_s_from_first\": %d, \"rss_mb\": %.1f, "
                + "\"cpu_s_from_first\": %.3f}",
            finished, seen.get(), seconds, Math.round(seen.get() / seconds), firstS,
            Math.round(seen.get() / (seconds - firstS)), rss / 1024.0,
            (endCpu - firstCpu.get()) / 1e9);
    }

    static void slow(String namesrv, String topic, String group, long handlerMs, double seconds)
            throws Exception {
        AtomicLong seen = new AtomicLong();
        DefaultMQPushConsumer consumer = consumer(namesrv, topic, group);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            try {
                Thread.sleep(handlerMs * msgs.size());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            seen.addAndGet(msgs.size());
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        long before = rssKb();
        consumer.start();
        long stop = System.nanoTime() + (long) (seconds * 1e9), max = 0, last = 0;
        while (System.nanoTime() < stop) {
            Thread.sleep(250);
            last = rssKb();
            max = Math.max(max, last);
        }
        consumer.shutdown();
        System.out.printf(
            "{\"handler_ms\": %d, \"concurrency\": 20, \"seconds\": %.1f, \"consumed\": %d, "
                + "\"rss_before_mb\": %.1f, \"rss_max_mb\": %.1f, \"rss_last_mb\": %.1f}%n",
            handlerMs, seconds, seen.get(), before / 1024.0, max / 1024.0, last / 1024.0);
        System.exit(0);
    }
}
