// The Java client's side of benchmarks/latency.py: synchronous sends of 1 KiB, one in flight,
// in windows the harness asks for on stdin, so that Java and Python windows can alternate
// within one run (the build VM's speed swings within minutes). Run with the launcher's jars:
//   java -cp "$HOME/.cache/rocketmq-actors/rocketmq-5.3.3/lib/*" SyncLatencyBench.java \
//        NAMESRV TOPIC WARMUP_SECONDS
// Protocol, one line each way:
//   after start-up and warm-up it prints  {"ready": true}
//   "window SECONDS"  -> {"latencies_us": [...], "seconds": S}  (every send's latency)
//   "quit" (or end of input) -> shuts the producer down and exits
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;

public class SyncLatencyBench {
    static final byte[] BODY = new byte[1024];

    static String window(DefaultMQProducer producer, String topic, double seconds)
            throws Exception {
        StringBuilder out = new StringBuilder(1 << 16);
        out.append("{\"latencies_us\": [");
        long stop = System.nanoTime() + (long) (seconds * 1e9);
        long began = System.nanoTime();
        boolean first = true;
        while (System.nanoTime() < stop) {
            long t = System.nanoTime();
            producer.send(new Message(topic, BODY));
            long us = (System.nanoTime() - t) / 1000;
            if (!first) {
                out.append(',');
            }
            out.append(us);
            first = false;
        }
        double elapsed = (System.nanoTime() - began) / 1e9;
        out.append("], \"seconds\": ").append(String.format("%.3f", elapsed)).append('}');
        return out.toString();
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0], topic = args[1];
        double warmup = Double.parseDouble(args[2]);
        DefaultMQProducer producer = new DefaultMQProducer("bench_java_latency");
        producer.setNamesrvAddr(namesrv);
        producer.start();
        window(producer, topic, warmup); // JIT, connections, route
        System.out.println("{\"ready\": true}");
        System.out.flush();
        BufferedReader in =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split(" ");
            if (words[0].equals("window")) {
                System.out.println(window(producer, topic, Double.parseDouble(words[1])));
                System.out.flush();
            } else if (words[0].equals("quit")) {
                break;
            }
        }
        producer.shutdown();
        System.exit(0);
    }
}
