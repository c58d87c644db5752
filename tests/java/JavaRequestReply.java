// The Java client (rocketmq-client 5.3.3, from the jars the launcher caches) on either side of
// request-reply, beside ours (tests/producer/test_requestreply_java_real.py). Source-file mode:
//   java -cp "<cache>/rocketmq-5.3.3/lib/*" tests/java/JavaRequestReply.java MODE ARGS...
// Modes (each prints JSON lines on stdout):
//   request NAMESRV TOPIC GROUP COUNT TIMEOUT_MS
//       one plain message "warm-up", then DefaultMQProducer.request of COUNT messages, bodies
//       "q<i>"; one line per request:
//       {"i": ..., "reply": <body>, "type": <MSG_TYPE>} or {"i": ..., "error": <exception>}
//   respond NAMESRV TOPIC GROUP COUNT SECONDS
//       a DefaultMQPushConsumer (from the first offset) that answers each request with
//       MessageUtil.createReplyMessage(request, "re:" + body) sent by a DefaultMQProducer;
//       one line per reply: {"replied": <request body>, "status": ...} or {"error": ...};
//       stops after COUNT replies or SECONDS. Prints {"ready": true} once started.
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class JavaRequestReply {
    static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static String text(byte[] body) {
        return new String(body, StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "request" -> request(args[1], args[2], args[3], Integer.parseInt(args[4]),
                    Long.parseLong(args[5]));
            case "respond" -> respond(args[1], args[2], args[3], Integer.parseInt(args[4]),
                    Double.parseDouble(args[5]));
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    static void request(String namesrv, String topic, String group, int count, long timeoutMs)
            throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer(group);
        producer.setNamesrvAddr(namesrv);
        producer.start();
        try {
            // one plain send first: the requests below then find the route and connection ready
            producer.send(new Message(topic, "warm-up".getBytes(StandardCharsets.UTF_8)));
            for (int i = 0; i < count; i++) {
                byte[] body = ("q" + i).getBytes(StandardCharsets.UTF_8);
                long started = System.currentTimeMillis();
                try {
                    Message reply = producer.request(new Message(topic, body), timeoutMs);
                    emit("{\"i\": " + i + ", \"reply\": \"" + text(reply.getBody())
                            + "\", \"type\": \"" + reply.getProperty("MSG_TYPE") + "\"}");
                } catch (Exception e) {
                    emit("{\"i\": " + i + ", \"error\": \"" + e.getClass().getSimpleName()
                            + "\", \"ms\": " + (System.currentTimeMillis() - started)
                            + ", \"message\": \"" + String.valueOf(e.getMessage())
                                .replace("\\", "/").replace("\"", "'").replace("\n", " ") + "\"}");
                }
            }
        } finally {
            producer.shutdown();
        }
    }

    static void respond(String namesrv, String topic, String group, int count, double seconds)
            throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer(group + "_replier");
        producer.setNamesrvAddr(namesrv);
        producer.start();
        AtomicLong replied = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
            for (MessageExt message : messages) {
                String body = text(message.getBody());
                try {
                    Message reply = MessageUtil.createReplyMessage(message,
                            ("re:" + body).getBytes(StandardCharsets.UTF_8));
                    SendResult result = producer.send(reply, 3000);
                    emit("{\"replied\": \"" + body + "\", \"status\": \"" + result.getSendStatus()
                            + "\"}");
                } catch (Exception e) {
                    emit("{\"replied\": \"" + body + "\", \"error\": \""
                            + e.getClass().getSimpleName() + "\"}");
                }
                if (replied.incrementAndGet() >= count) {
                    done.countDown();
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        emit("{\"ready\": true}");
        done.await((long) (seconds * 1000), TimeUnit.MILLISECONDS);
        consumer.shutdown();
        producer.shutdown();
        emit("{\"done\": " + replied.get() + "}");
    }
}
