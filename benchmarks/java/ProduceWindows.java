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
import java.util.Collection;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

public class ProduceWindows {
    static final byte[] BODY = new byte[1024];

    static String figures(String mode, long sent, long failed, long beganNs,
            Collection<Long> latenciesNs) {
        double seconds = (System.nanoTime() - beganNs) / 1e9;
        StringBuilder out = new StringBuilder(64 + latenciesNs.size() * 5);
        out.append("{\"mode\": \"").append(mode).append("\", \"messages\": ").append(sent)
            .append(", \"failed\": ").append(failed)
            .append(", \"seconds\": ").append(String.format("%.4f", seconds))
            .append(", \"latencies_us\": [");
        boolean first = true;
        for (long ns : latenciesNs) {
            if (!first) {
                out.append(',');
            }
            out.append(ns / 1000);
            first = false;
        }
        return out.append("]}").toString();
    }

    static String sync(DefaultMQProducer producer, String topic, double seconds) {
        List<Long> latencies = new ArrayList<>();
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
        ConcurrentLinkedQueue<Long> latencies = new ConcurrentLinkedQueue<>();
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
        ConcurrentLinkedQueue<Long> latencies = new ConcurrentLinkedQueue<>();
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
