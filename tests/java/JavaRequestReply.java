// The Java client (rocketmq-client 5.3.3, from the jars the launcher caches) on either side of
// request-reply, beside ours (tests/producer/test_requestreply_java_real.py). Source-file mode:
//   java -cp "<cache>/rocketmq-5.3.3/lib/*" tests/java/JavaRequestReply.java MODE ARGS...
// Modes (each prints JSON lines on stdout):
//   request NAMESRV TOPIC GROUP COUNT TIMEOUT_MS API
//       one plain message "warm-up" (if it fails: {"warm-up": <exception>, "ms": ...,
//       "message": ...} and nothing else), then COUNT requests, bodies "q<i>", with API:
//         sync      DefaultMQProducer.request(msg, timeout), the blocking call;
//         callback  DefaultMQProducer.request(msg, selector, arg, callback, timeout) (queue
//                   i % queues), waited on here.
//       One line per request, with the milliseconds it took:
//       {"i": ..., "reply": <body>, "type": <MSG_TYPE>, "ms": ...} or
//       {"i": ..., "error": <exception>, "ms": ..., "message": ...}
//       The sync API of the 5.3.1-5.3.3 clients cannot wait for a reply: the send callback of
//       DefaultMQProducerImpl.request(Message, long) (line 1629 in 5.3.3) counts the reply
//       latch down as soon as the broker stored the request (RequestResponseFuture
//       .acquireCountDownLatch, added by apache/rocketmq #8272), so waitResponse finds no
//       reply and throws RequestTimeoutException 10006 "send request message ... OK, but wait
//       reply message timeout" after the send's round trip; #9608 removed it again (the 5.5.0
//       client has no acquireCountDownLatch). The callback API with a selector never had it.
//   respond NAMESRV TOPIC GROUP COUNT SECONDS
//       a DefaultMQPushConsumer (from the first offset) that answers each request with
//       MessageUtil.createReplyMessage(request, "re:" + body) sent by a DefaultMQProducer;
//       one line per reply: {"replied": <request body>, "status": ...} or {"error": ...};
//       stops after COUNT replies or SECONDS. Prints {"ready": true} once started. A request
//       whose body starts with "late" is answered 3 s later (after its requester gave up).
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.RequestCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

public class JavaRequestReply {
    static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static String quote(String text) {
        return text.replace("\\", "/").replace("\"", "'").replace("\n", " ");
    }

    static String text(byte[] body) {
        return new String(body, StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "request" -> request(args[1], args[2], args[3], Integer.parseInt(args[4]),
                    Long.parseLong(args[5]), args[6]);
            case "respond" -> respond(args[1], args[2], args[3], Integer.parseInt(args[4]),
                    Double.parseDouble(args[5]));
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    static void request(String namesrv, String topic, String group, int count, long timeoutMs,
            String api) throws Exception {
        if (!api.equals("sync") && !api.equals("callback")) {
            throw new IllegalArgumentException("unknown request API " + api);
        }
        DefaultMQProducer producer = new DefaultMQProducer(group);
        producer.setNamesrvAddr(namesrv);
        // its route lookups too (3 s by default, ClientConfig.mqClientApiTimeout): the warm-up's
        // passed them under make test's three broker sessions on two cores
        producer.setMqClientApiTimeout(15_000);
        producer.start();
        try {
            // one plain send first: the requests below then find the route and connection ready.
            // Its timeout is 15 s, not the default 3 s (DefaultMQProducer.sendMsgTimeout), which
            // covers the retries too: a JVM starting on a busy test machine can take longer
            long warming = System.currentTimeMillis();
            try {
                producer.send(new Message(topic, "warm-up".getBytes(StandardCharsets.UTF_8)),
                        15000);
            } catch (Exception e) {
                emit("{\"warm-up\": \"" + e.getClass().getSimpleName() + "\", \"ms\": "
                        + (System.currentTimeMillis() - warming) + ", \"message\": \""
                        + quote(String.valueOf(e.getMessage())) + "\"}");
                return;
            }
            for (int i = 0; i < count; i++) {
                Message request = new Message(topic, ("q" + i).getBytes(StandardCharsets.UTF_8));
                long started = System.currentTimeMillis();
                try {
                    Message reply = api.equals("sync")
                            ? producer.request(request, timeoutMs)
                            : requestWithCallback(producer, request, i, timeoutMs);
                    emit("{\"i\": " + i + ", \"reply\": \"" + text(reply.getBody())
                            + "\", \"type\": \"" + reply.getProperty("MSG_TYPE") + "\", \"ms\": "
                            + (System.currentTimeMillis() - started) + "}");
                } catch (Throwable e) {
                    emit("{\"i\": " + i + ", \"error\": \"" + e.getClass().getSimpleName()
                            + "\", \"ms\": " + (System.currentTimeMillis() - started)
                            + ", \"message\": \"" + quote(String.valueOf(e.getMessage())) + "\"}");
                }
            }
        } finally {
            producer.shutdown();
        }
    }

    static Message requestWithCallback(DefaultMQProducer producer, Message request, int i,
            long timeoutMs) throws Throwable {
        CompletableFuture<Message> reply = new CompletableFuture<>();
        MessageQueueSelector selector = (List<MessageQueue> queues, Message msg, Object arg) ->
                queues.get((Integer) arg % queues.size());
        producer.request(request, selector, i, new RequestCallback() {
            @Override
            public void onSuccess(Message message) {
                reply.complete(message);
            }

            @Override
            public void onException(Throwable e) {
                reply.completeExceptionally(e);
            }
        }, timeoutMs);
        try {
            // the client fails the callback once the timeout passed (RequestFutureHolder scans
            // its table every second): wait a little longer than that
            return reply.get(timeoutMs + 5000, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw e.getCause();
        }
    }

    static void respond(String namesrv, String topic, String group, int count, double seconds)
            throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer(group + "_replier");
        producer.setNamesrvAddr(namesrv);
        producer.setMqClientApiTimeout(15_000);  // (as the requester's)
        producer.start();
        AtomicLong replied = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setMqClientApiTimeout(15_000);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
            for (MessageExt message : messages) {
                String body = text(message.getBody());
                try {
                    if (body.startsWith("late")) {
                        Thread.sleep(3000);
                    }
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
