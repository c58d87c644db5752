// The Java client's side of benchmarks/paired.py: the produce workloads of benchmarks/producer.py
// (1 KiB messages) in windows the harness asks for on stdin, so that the Java and the Python
// client can take turns within one run (the build VM's speed swings within minutes). Run with
// the jars the launcher caches:
//   java -cp "$HOME/.cache/rocketmq-actors/rocketmq-5.3.3/lib/*" ProduceWindows.java \
//        NAMESRV TOPIC WARMUP_SECONDS CONCURRENCY
// After start-up and a warm-up of pipelined sends it prints {"ready": true}. Then, per line:
//   "sync SECONDS"       one thread, synchronous sends, one message in flight
//   "pipelined SECONDS"  asynchronous sends, CONCURRENCY in flight (a semaphore), one thread
//   "autobatch SECONDS"  the same, from a second producer with setAutoBatch(true) (its
//                        defaults: batches of up to 32 KiB, held up to 10 ms)
//   "batch SECONDS"      CONCURRENCY/16 threads, each a synchronous send of 16 messages
// -> {"mode": M, "messages": N, "failed": F, "seconds": S, "latencies_us": [...]}: the window's
// length runs until every send it started has settled; one latency per send call.
//   "quit" (or end of input) shuts the producer down.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

public class ProduceWindows {
    static final byte[] BODY = new byte[1024];
    // latencies kept per window: a 3 s window at the auto-batching path's rate fits; a longer
    // warm-up keeps its first ones only (its figures are not used). A boxed Long per send in a
    // concurrent queue took the heap (30 s of warm-up at that rate: out of memory) and added a
    // garbage-collected object per message to Java's side.
    static final int MAX_LATENCIES = 4_000_000;

    /** Latencies in nanoseconds, recorded from any thread without an object per send. */
    static final class Latencies {
        final long[] ns = new long[MAX_LATENCIES];
        final AtomicInteger count = new AtomicInteger();

        void add(long value) {
            int i = count.getAndIncrement();
            if (i < ns.length) {
                ns[i] = value;
            }
        }

        int size() {
            return Math.min(count.get(), ns.length);
        }
    }

    static String figures(String mode, long sent, long failed, long beganNs,
            Latencies latenciesNs) {
        double seconds = (System.nanoTime() - beganNs) / 1e9;
        int size = latenciesNs.size();
        StringBuilder out = new StringBuilder(64 + size * 5);
        out.append("{\"mode\": \"").append(mode).append("\", \"messages\": ").append(sent)
            .append(", \"failed\": ").append(failed)
            .append(", \"seconds\": ").append(String.format("%.4f", seconds))
            .append(", \"latencies_us\": [");
        for (int i = 0; i < size; i++) {
            if (i > 0) {
                out.append(',');
            }
            out.append(latenciesNs.ns[i] / 1000);
        }
        return out.append("]}").toString();
    }

    static String sync(DefaultMQProducer producer, String topic, double seconds) {
        Latencies latencies = new Latencies();
        long began = System.nanoTime(), stop = began + (long) (seconds * 1e9);
        long sent = 0, failed = 0;
        while (System.nanoTime() < stop) {
            long t = System.nanoTime();
            try {
                producer.send(new Message(topic, BODY));
            } catch (Exception e) {
                failed++;
                continue;
            }
            latencies.add(System.nanoTime() - t);
            sent++;
        }
        return figures("sync", sent, failed, began, latencies);
    }

    static String pipelined(DefaultMQProducer producer, String topic, double seconds,
            int inFlight, String mode) throws Exception {
        Latencies latencies = new Latencies();
        AtomicLong ok = new AtomicLong(), failed = new AtomicLong();
        Semaphore window = new Semaphore(inFlight);
        long began = System.nanoTime(), stop = began + (long) (seconds * 1e9);
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
        window.release(inFlight);
        return figures(mode, ok.get(), failed.get(), began, latencies);
    }

    static String batch(DefaultMQProducer producer, String topic, double seconds, int threads)
            throws Exception {
        Latencies latencies = new Latencies();
        AtomicLong sent = new AtomicLong(), failed = new AtomicLong();
        long began = System.nanoTime(), stop = began + (long) (seconds * 1e9);
        List<Thread> workers = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            Thread worker = new Thread(() -> {
                List<Message> mine = new ArrayList<>();
                for (int j = 0; j < 16; j++) {
                    mine.add(new Message(topic, BODY));
                }
                while (System.nanoTime() < stop) {
                    long t = System.nanoTime();
                    try {
                        producer.send(mine);
                    } catch (Exception e) {
                        failed.addAndGet(16);
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
        return figures("batch", sent.get(), failed.get(), began, latencies);
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0], topic = args[1];
        double warmup = Double.parseDouble(args[2]);
        int concurrency = Integer.parseInt(args[3]);
        DefaultMQProducer producer = new DefaultMQProducer("bench_java_producer");
        producer.setNamesrvAddr(namesrv);
        producer.start();
        DefaultMQProducer batching = new DefaultMQProducer("bench_java_producer_autobatch");
        batching.setNamesrvAddr(namesrv);
        batching.setAutoBatch(true);
        batching.start();
        pipelined(producer, topic, warmup, concurrency, "pipelined"); // JIT, connections, route
        System.out.println("{\"ready\": true}");
        System.out.flush();
        BufferedReader in =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split(" ");
            if (words[0].equals("quit")) {
                break;
            }
            double seconds = Double.parseDouble(words[1]);
            String reply = switch (words[0]) {
                case "sync" -> sync(producer, topic, seconds);
                case "pipelined" -> pipelined(producer, topic, seconds, concurrency, "pipelined");
                case "autobatch" -> pipelined(batching, topic, seconds, concurrency, "autobatch");
                case "batch" -> batch(producer, topic, seconds, Math.max(1, concurrency / 16));
                default -> "{\"error\": \"unknown mode " + words[0] + "\"}";
            };
            System.out.println(reply);
            System.out.flush();
        }
        producer.shutdown();
        batching.shutdown();
        System.exit(0);
    }
}
