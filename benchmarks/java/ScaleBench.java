// The Java client's side of benchmarks/scale.py: how its cost grows with the work, measured as
// ours is. Run (by benchmarks/scale_java.py) with the RocketMQ jars the launcher caches:
//   java -cp "$HOME/.cache/rocketmq-actors/rocketmq-5.3.3/lib/*" ScaleBench.java \
//        consumer NAMESRV TOPIC GROUP QUEUES SAMPLED IDLE_SECONDS LIMIT_SECONDS
// A DefaultMQPushConsumer (GROUP, from the first offset, TOPIC "*") on a topic of QUEUES queues
// of which SAMPLED hold one message each: start_s from start() until it owns every queue (its
// rebalance's process queue table holds all of TOPIC's), sample_s from then until a message of
// each sampled queue was consumed; then, after the same settling pause as ours, over
// IDLE_SECONDS: the process's CPU seconds per second (every thread: JIT and GC included), its
// RSS, its live Java threads and OS threads, the requests it sent per second by request code
// (an RPCHook, called for every request the client's remoting layer sends: synchronous,
// asynchronous and one-way); then stop_s for shutdown().
//   java ... ScaleBench.java producers NAMESRV COUNT SHARED TOPIC_PREFIX TOPICS IDLE_SECONDS
// COUNT DefaultMQProducers of distinct groups in this JVM, on one instance name (SHARED "true",
// so one MQClientInstance) or an instance name each ("false"), each sending one message to each
// of the TOPICS topics TOPIC_PREFIX0, TOPIC_PREFIX1, ...; then the same idle figures.
// Each mode prints one JSON line of figures ({"error": ...} if it could not finish).
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.impl.consumer.ProcessQueue;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

public class ScaleBench {
    /** Requests the client sends, by request code. */
    static final class Counter implements RPCHook {
        final Map<Integer, LongAdder> counts = new ConcurrentHashMap<>();

        @Override
        public void doBeforeRequest(String remoteAddr, RemotingCommand request) {
            counts.computeIfAbsent(request.getCode(), code -> new LongAdder()).increment();
        }

        @Override
        public void doAfterResponse(
                String remoteAddr, RemotingCommand request, RemotingCommand response) {}
    }

    static long procStatus(String field) throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith(field + ":")) {
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

    static String round(double value, int places) {
        return String.format("%." + places + "f", value);
    }

    /** The idle figures over ``idleS`` seconds, as JSON fields (no braces). */
    static String idle(Counter counter, double idleS) throws Exception {
        counter.counts.clear();
        long cpu0 = cpuNs(), t0 = System.nanoTime();
        Thread.sleep((long) (idleS * 1000));
        double elapsed = (System.nanoTime() - t0) / 1e9;
        double cpu = (cpuNs() - cpu0) / 1e9;
        StringBuilder requests = new StringBuilder("{");
        counter.counts.entrySet().stream()
            .sorted((a, b) -> Long.compare(b.getValue().sum(), a.getValue().sum()))
            .forEach(e -> requests.append(requests.length() > 1 ? ", " : "")
                .append('"').append(e.getKey()).append("\": ")
                .append(round(e.getValue().sum() / elapsed, 2)));
        requests.append('}');
        return "\"idle_cpu_per_s\": " + round(cpu / elapsed, 4)
            + ", \"idle_requests_per_s\": " + requests
            + ", \"rss_mb\": " + round(procStatus("VmRSS") / 1024.0, 1)
            + ", \"threads\": " + ManagementFactory.getThreadMXBean().getThreadCount()
            + ", \"os_threads\": " + procStatus("Threads");
    }

    static long owned(Map<MessageQueue, ProcessQueue> table, String topic) {
        return table.keySet().stream().filter(mq -> mq.getTopic().equals(topic)).count();
    }

    static String consumer(String namesrv, String topic, String group, int queues, int sampled,
            double idleS, double limitS) throws Exception {
        Counter counter = new Counter();
        Set<String> seen = ConcurrentHashMap.newKeySet();
        AtomicLong sampledAt = new AtomicLong();
        CountDownLatch handled = new CountDownLatch(1);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group, counter);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt msg : msgs) {
                seen.add(msg.getBrokerName() + "/" + msg.getQueueId());
            }
            if (seen.size() >= sampled && sampledAt.compareAndSet(0, System.nanoTime())) {
                handled.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        long began = System.nanoTime(), limit = began + (long) (limitS * 1e9);
        consumer.start();
        Map<MessageQueue, ProcessQueue> table =
            consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable();
        // (the size first: counting the topic's queues walks the table)
        while ((table.size() < queues || owned(table, topic) < queues)
                && System.nanoTime() < limit) {
            Thread.sleep(20);
        }
        long ownedAt = System.nanoTime();
        if (owned(table, topic) < queues) {
            consumer.shutdown();
            return "{\"error\": \"owned " + owned(table, topic) + " of " + queues
                + " queues after " + limitS + " s\"}";
        }
        if (!handled.await(Math.max(1, limit - System.nanoTime()), TimeUnit.NANOSECONDS)) {
            consumer.shutdown();
            return "{\"error\": \"consumed " + seen.size() + " of " + sampled
                + " sampled queues\"}";
        }
        double startS = (ownedAt - began) / 1e9;
        // (0 when the sampled messages were in before the last queue was owned)
        double sampleS = Math.max(0, (sampledAt.get() - ownedAt) / 1e9);
        Thread.sleep(5000); // the sampled queues' pulls settle into the broker's hold, as ours
        String idle = idle(counter, idleS);
        long stopping = System.nanoTime();
        consumer.shutdown();
        double stopS = (System.nanoTime() - stopping) / 1e9;
        return "{\"start_s\": " + round(startS, 2) + ", \"sample_s\": " + round(sampleS, 2)
            + ", " + idle + ", \"stop_s\": " + round(stopS, 2) + "}";
    }

    static String producers(String namesrv, int count, boolean shared, String prefix, int topics,
            double idleS) throws Exception {
        Counter counter = new Counter();
        double rssBefore = procStatus("VmRSS") / 1024.0;
        String stamp = Long.toString(System.nanoTime());
        List<DefaultMQProducer> producers = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            DefaultMQProducer producer =
                new DefaultMQProducer("bench_scale_java_p" + i + "_" + stamp, counter);
            producer.setNamesrvAddr(namesrv);
            producer.setInstanceName(
                shared ? "bench_scale_" + stamp : "bench_scale_" + i + "_" + stamp);
            producer.start();
            producers.add(producer);
        }
        byte[] body = "x".getBytes(StandardCharsets.UTF_8);
        for (DefaultMQProducer producer : producers) {
            for (int t = 0; t < topics; t++) {
                producer.send(new Message(prefix + t, body));
            }
        }
        String idle = idle(counter, idleS);
        Map<Object, Boolean> instances = new IdentityHashMap<>();
        for (DefaultMQProducer producer : producers) {
            instances.put(producer.getDefaultMQProducerImpl().getMqClientFactory(), true);
        }
        for (DefaultMQProducer producer : producers) {
            producer.shutdown();
        }
        return "{" + idle + ", \"instances\": " + instances.size() + ", \"rss_before_mb\": "
            + round(rssBefore, 1) + "}";
    }

    public static void main(String[] args) throws Exception {
        String figures;
        try {
            if (args[0].equals("consumer")) {
                figures = consumer(args[1], args[2], args[3], Integer.parseInt(args[4]),
                    Integer.parseInt(args[5]), Double.parseDouble(args[6]),
                    Double.parseDouble(args[7]));
            } else if (args[0].equals("producers")) {
                figures = producers(args[1], Integer.parseInt(args[2]),
                    Boolean.parseBoolean(args[3]), args[4], Integer.parseInt(args[5]),
                    Double.parseDouble(args[6]));
            } else {
                figures = "{\"error\": \"unknown mode: " + args[0] + "\"}";
            }
        } catch (Exception e) {
            figures = "{\"error\": \"" + e.toString().replace("\\", "/").replace("\"", "'")
                .replace("\n", " ") + "\"}";
        }
        System.out.println(figures);
        System.out.flush();
        System.exit(0);
    }
}
