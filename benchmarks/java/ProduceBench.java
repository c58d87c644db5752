// The Java client's side of benchmarks/producer.py, with the same three workloads, message size
// and durations (rocketmq-example's benchmark tools report rolling TPS only, so the harness runs
// this program instead). Prints one JSON line per mode. Run with the jars the launcher caches:
//   java -cp "$HOME/.cache/rocketmq-actors/rocketmq-5.3.3/lib/*" ProduceBench.java \
//        NAMESRV TOPIC SECONDS WARMUP_SECONDS CONCURRENCY [MODES]
// MODES: a comma-separated subset of sync,pipelined,batch (default: all three, in that order).
// Modes, as in Python:
//   sync_one_in_flight  one thread, synchronous send, one message in flight (latency)
//   pipelined_1k        asynchronous sends, CONCURRENCY in flight (a semaphore), from one thread
//   batch_16x1k         CONCURRENCY/16 threads, each a synchronous send of 16 messages at a time
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

public class ProduceBench {
    static final byte[] BODY = new byte[1024];

    static String figures(String mode, long sent, double seconds, List<Long> latenciesNs) {
        Collections.sort(latenciesNs);
        int n = latenciesNs.size();
        double p50 = n == 0 ? 0 : latenciesNs.get(Math.min(n - 1, n / 2)) / 1e6;
        double p99 = n == 0 ? 0 : latenciesNs.get(Math.min(n - 1, (int) (n * 0.99))) / 1e6;
        return String.format(
            "{\"mode\": \"%s\", \"messages\": %d, \"seconds\": %.2f, \"msgs_per_s\": %d, "
                + "\"p50_ms\": %.3f, \"p99_ms\": %.3f}",
            mode, sent, seconds, Math.round(sent / seconds), p50, p99);
    }

    static String sync(DefaultMQProducer producer, String topic, double seconds) throws Exception {
        List<Long> latencies = new ArrayList<>();
        long stop = System.nanoTime() + (long) (seconds * 1e9);
        long began = System.nanoTime(), sent = 0;
        while (System.nanoTime() < stop) {
            long t = System.nanoTime();
            producer.send(new Message(topic, BODY));
            latencies.add(System.nanoTime() - t);
            sent++;
        }
        return figures("sync_one_in_flight", sent, (System.nanoTime() - began) / 1e9, latencies);
    }

    static String pipelined(DefaultMQProducer producer, String topic, double seconds, int inFlight)
            throws Exception {
        ConcurrentLinkedQueue<Long> latencies = new ConcurrentLinkedQueue<>();
        AtomicLong ok = new AtomicLong(), failed = new AtomicLong();
        Semaphore window = new Semaphore(inFlight);
        long stop = System.nanoTime() + (long) (seconds * 1e9);
        long began = System.nanoTime();
        while (System.nanoTime() < stop) {
            window.acquire();
            long t = System.nanoTime();
            producer.send(new Message(topic, BODY), new SendCallback() {
                public void onSuccess(SendResult result) {
                    latencies.add(System.nanoTime() - t);
                    ok.incrementAndGet();
                    window.release();
                }

                public void onException(Throwable e) {
                    failed.incrementAndGet();
                    window.release();
                }
            });
        }
        window.acquire(inFlight); // every admitted send has settled
        double elapsed = (System.nanoTime() - began) / 1e9;
        if (failed.get() > 0) {
            System.err.println("pipelined: " + failed.get() + " sends failed");
        }
        return figures("pipelined_1k", ok.get(), elapsed, new ArrayList<>(latencies));
    }

    static String batch(DefaultMQProducer producer, String topic, double seconds, int threads)
            throws Exception {
        List<Message> messages = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            messages.add(new Message(topic, BODY));
        }
        ConcurrentLinkedQueue<Long> latencies = new ConcurrentLinkedQueue<>();
        AtomicLong sent = new AtomicLong();
        long stop = System.nanoTime() + (long) (seconds * 1e9);
        long began = System.nanoTime();
        List<Thread> workers = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            Thread worker = new Thread(() -> {
                List<Message> mine = new ArrayList<>();
                for (Message m : messages) {
                    mine.add(new Message(topic, m.getBody()));
                }
                while (System.nanoTime() < stop) {
                    long t = System.nanoTime();
                    try {
                        producer.send(mine);
                    } catch (Exception e) {
                        continue;
                    }
                    latencies.add(System.nanoTime() - t);
                    sent.addAndGet(16);
                }
            });
            worker.start();
            workers.add(worker);
        }
        for (Thread worker : workers) {
            worker.join();
        }
        return figures("batch_16x1k", sent.get(), (System.nanoTime() - began) / 1e9,
            new ArrayList<>(latencies));
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0], topic = args[1];
        double seconds = Double.parseDouble(args[2]), warmup = Double.parseDouble(args[3]);
        int concurrency = Integer.parseInt(args[4]);
        DefaultMQProducer producer = new DefaultMQProducer("bench_java_producer");
        producer.setNamesrvAddr(namesrv);
        producer.start();
        List<String> modes =
            List.of((args.length > 5 ? args[5] : "sync,pipelined,batch").split(","));
        pipelined(producer, topic, warmup, concurrency); // JIT, connections, route
        if (modes.contains("sync")) {
            System.out.println(sync(producer, topic, seconds));
        }
        if (modes.contains("pipelined")) {
            System.out.println(pipelined(producer, topic, seconds, concurrency));
        }
        if (modes.contains("batch")) {
            System.out.println(batch(producer, topic, seconds, Math.max(1, concurrency / 16)));
        }
        producer.shutdown();
        System.exit(0);
    }
}
