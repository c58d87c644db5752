// A null broker for benchmarks/nullbroker.py: RocketMQ's own remoting server
// (org.apache.rocketmq.remoting.netty.NettyRemotingServer, the broker's and the NameServer's
// network layer) answering every client request from memory, with no storage, so that the
// clients, not the broker, are the bottleneck. One port plays both the NameServer and broker-a.
// Run with the jars the launcher caches:
//   java -cp "$HOME/.cache/rocketmq-actors/rocketmq-5.3.3/lib/*" NullBroker.java \
//        PORT QUEUES BACKLOG_PER_QUEUE PULL_BATCH HOLD_MS BODY_BYTES
// PORT 0 picks a free port. Once listening it prints {"port": P}. Then, per line on stdin:
//   "stats"  -> {"requests": {"CODE": count, ...}, "unknown": {"CODE": count, ...}}
//   "quit" (or end of input) stops the server.
// What it answers (codes of Java's RequestCode):
//   105 GET_ROUTEINFO_BY_TOPIC: any topic, broker-a at this port with QUEUES read/write queues
//   106 GET_BROKER_CLUSTER_INFO, 17 UPDATE_AND_CREATE_TOPIC, 46 CHECK_CLIENT_CONFIG: success
//   34 HEART_BEAT / 35 UNREGISTER_CLIENT: the groups' client ids, for 38 GET_CONSUMER_LIST_BY_GROUP
//   10 / 310 SEND_MESSAGE(_V2), 320 SEND_BATCH_MESSAGE: a SendMessageResponseHeader (offset
//      message ids, the queue, a queue offset increasing per queue), nothing stored
//   11 PULL_MESSAGE: up to PULL_BATCH stored-layout records of BODY_BYTES built once per topic
//      (their queue id and offsets patched per pull) while the offset is below
//      BACKLOG_PER_QUEUE; past it (and on %RETRY% topics) the pull is held HOLD_MS, then
//      PULL_NOT_FOUND, as a broker's long poll
//   14 / 15 QUERY / UPDATE_CONSUMER_OFFSET (kept in memory), 30 GET_MAX_OFFSET (the backlog),
//   31 GET_MIN_OFFSET, 29 SEARCH_OFFSET_BY_TIMESTAMP, 32 GET_EARLIEST_MSG_STORETIME: 0
//   anything else: success with no body, counted under "unknown"
import io.netty.channel.ChannelHandlerContext;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.zip.CRC32;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyRemotingClient;
import org.apache.rocketmq.remoting.netty.NettyRemotingServer;
import org.apache.rocketmq.remoting.netty.NettyRequestProcessor;
import org.apache.rocketmq.remoting.netty.NettyServerConfig;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.heartbeat.ConsumerData;
import org.apache.rocketmq.remoting.protocol.heartbeat.HeartbeatData;

public class NullBroker implements NettyRequestProcessor {
    static final int MAGIC_V1 = 0xDAA320A7;
    static final char[] HEX = "0123456789ABCDEF".toCharArray();

    final int queues;
    final long backlog;
    final int pullBatch;
    final long holdMs;
    final byte[] body;
    String addr;
    String offsetIdPrefix; // the store host (ip, port) of an offset message id, in hex
    final AtomicLongArray queueOffsets = new AtomicLongArray(1024);
    final AtomicLong commitLog = new AtomicLong();
    final Map<String, byte[]> templates = new ConcurrentHashMap<>();
    final Map<String, Long> consumerOffsets = new ConcurrentHashMap<>();
    final Map<String, Set<String>> groups = new ConcurrentHashMap<>();
    final Map<Integer, AtomicLong> requests = new ConcurrentHashMap<>();
    final Map<Integer, AtomicLong> unknown = new ConcurrentHashMap<>();
    final ScheduledExecutorService holds = Executors.newSingleThreadScheduledExecutor();

    NullBroker(int queues, long backlog, int pullBatch, long holdMs, int bodyBytes) {
        this.queues = queues;
        this.backlog = backlog;
        this.pullBatch = pullBatch;
        this.holdMs = holdMs;
        this.body = new byte[bodyBytes];
        java.util.Arrays.fill(this.body, (byte) 'x');
    }

    void listening(int port) {
        addr = "127.0.0.1:" + port;
        StringBuilder prefix = new StringBuilder("7F000001");
        hex(prefix, port, 8);
        offsetIdPrefix = prefix.toString();
    }

    static void hex(StringBuilder out, long value, int digits) {
        for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) {
            out.append(HEX[(int) (value >>> shift) & 0xF]);
        }
    }

    static String field(RemotingCommand request, String shortName, String longName) {
        Map<String, String> ext = request.getExtFields();
        if (ext == null) {
            return null;
        }
        String value = ext.get(shortName);
        return value != null ? value : ext.get(longName);
    }

    static long longField(RemotingCommand request, String name, long otherwise) {
        String value = field(request, name, name);
        return value == null ? otherwise : Long.parseLong(value);
    }

    @Override
    public boolean rejectRequest() {
        return false;
    }

    @Override
    public RemotingCommand processRequest(ChannelHandlerContext ctx, RemotingCommand request)
            throws Exception {
        int code = request.getCode();
        requests.computeIfAbsent(code, c -> new AtomicLong()).incrementAndGet();
        switch (code) {
            case 10:
            case 310:
                return send(request, 1);
            case 320:
                return send(request, batchCount(request.getBody()));
            case 11:
                return pull(ctx, request);
            case 105:
                return ok(route().getBytes(StandardCharsets.UTF_8));
            case 106:
                return ok(clusterInfo().getBytes(StandardCharsets.UTF_8));
            case 34:
                return heartbeat(request);
            case 35:
                return unregister(request);
            case 38:
                return consumerList(request);
            case 14:
                return queryOffset(request);
            case 15:
                consumerOffsets.put(offsetKey(request), longField(request, "commitOffset", 0));
                return ok(null);
            case 30:
                return offset(retry(field(request, "topic", "topic")) ? 0 : backlog);
            case 29:
            case 31:
                return offset(0);
            case 32: {
                RemotingCommand response = ok(null);
                response.addExtField("timestamp", "0");
                return response;
            }
            case 17:
            case 46:
                return ok(null);
            default:
                unknown.computeIfAbsent(code, c -> new AtomicLong()).incrementAndGet();
                return ok(null);
        }
    }

    static RemotingCommand ok(byte[] body) {
        RemotingCommand response = RemotingCommand.createResponseCommand(0, null);
        response.setBody(body);
        return response;
    }

    static RemotingCommand offset(long offset) {
        RemotingCommand response = ok(null);
        response.addExtField("offset", Long.toString(offset));
        return response;
    }

    static boolean retry(String topic) {
        return topic == null || topic.startsWith("%RETRY%") || topic.startsWith("%DLQ%");
    }

    String route() {
        return "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"" + addr + "\"},\"brokerName\":"
            + "\"broker-a\",\"cluster\":\"DefaultCluster\",\"enableActingMaster\":false}],"
            + "\"filterServerTable\":{},\"queueDatas\":[{\"brokerName\":\"broker-a\",\"perm\":6,"
            + "\"readQueueNums\":" + queues + ",\"topicSysFlag\":0,\"writeQueueNums\":" + queues
            + "}]}";
    }

    String clusterInfo() {
        return "{\"brokerAddrTable\":{\"broker-a\":{\"brokerAddrs\":{\"0\":\"" + addr + "\"},"
            + "\"brokerName\":\"broker-a\",\"cluster\":\"DefaultCluster\"}},"
            + "\"clusterAddrTable\":{\"DefaultCluster\":[\"broker-a\"]}}";
    }

    static int batchCount(byte[] batch) {
        ByteBuffer buf = ByteBuffer.wrap(batch);
        int count = 0;
        for (int pos = 0; pos + 4 <= batch.length; count++) {
            int size = buf.getInt(pos);
            if (size <= 0) {
                break;
            }
            pos += size;
        }
        return Math.max(count, 1);
    }

    RemotingCommand send(RemotingCommand request, int count) {
        String queueField = field(request, "e", "queueId");
        int queue = queueField == null ? 0 : Integer.parseInt(queueField);
        if (queue < 0 || queue >= queues) {
            queue = 0;
        }
        long first = queueOffsets.getAndAdd(queue, count);
        long physical = commitLog.getAndAdd((long) count * (body.length + 200));
        StringBuilder ids = new StringBuilder(count * 33);
        for (int i = 0; i < count; i++) {
            if (i > 0) {
                ids.append(',');
            }
            ids.append(offsetIdPrefix);
            hex(ids, physical + (long) i * (body.length + 200), 16);
        }
        RemotingCommand response = ok(null);
        response.addExtField("msgId", ids.toString());
        response.addExtField("queueId", Integer.toString(queue));
        response.addExtField("queueOffset", Long.toString(first));
        response.addExtField("MSG_REGION", "DefaultRegion");
        response.addExtField("TRACE_ON", "true");
        return response;
    }

    RemotingCommand heartbeat(RemotingCommand request) {
        HeartbeatData data = HeartbeatData.decode(request.getBody(), HeartbeatData.class);
        for (ConsumerData consumer : data.getConsumerDataSet()) {
            groups.computeIfAbsent(consumer.getGroupName(), g -> ConcurrentHashMap.newKeySet())
                .add(data.getClientID());
        }
        return ok(null);
    }

    RemotingCommand unregister(RemotingCommand request) {
        String group = field(request, "consumerGroup", "consumerGroup");
        Set<String> members = group == null ? null : groups.get(group);
        if (members != null) {
            members.remove(field(request, "clientID", "clientID"));
        }
        return ok(null);
    }

    RemotingCommand consumerList(RemotingCommand request) {
        Set<String> members = groups.get(field(request, "consumerGroup", "consumerGroup"));
        if (members == null || members.isEmpty()) {
            return RemotingCommand.createResponseCommand(1, "no consumer for this group");
        }
        StringBuilder out = new StringBuilder("{\"consumerIdList\":[");
        boolean first = true;
        for (String id : members) {
            out.append(first ? "\"" : ",\"").append(id).append('"');
            first = false;
        }
        return ok(out.append("]}").toString().getBytes(StandardCharsets.UTF_8));
    }

    static String offsetKey(RemotingCommand request) {
        return field(request, "consumerGroup", "consumerGroup") + "@"
            + field(request, "topic", "topic") + "@" + field(request, "queueId", "queueId");
    }

    RemotingCommand queryOffset(RemotingCommand request) {
        Long stored = consumerOffsets.get(offsetKey(request));
        if (stored == null) {
            return RemotingCommand.createResponseCommand(22, "no offset stored");
        }
        return offset(stored);
    }

    // One pull's worth of records in the broker's stored layout (MessageDecoder, V1 magic, IPv4
    // hosts), for queue 0 at offsets 0..PULL_BATCH-1: each pull copies it and patches the queue
    // id, queue offsets and commit-log offsets, so consumers see distinct, increasing offsets.
    byte[] template(String topic) {
        byte[] topicBytes = topic.getBytes(StandardCharsets.UTF_8);
        CRC32 crc = new CRC32();
        crc.update(body);
        int bodyCrc = (int) (crc.getValue() & 0x7FFFFFFF);
        long now = System.currentTimeMillis();
        ByteBuffer out = ByteBuffer.allocate(pullBatch * (200 + body.length + topicBytes.length));
        for (int i = 0; i < pullBatch; i++) {
            StringBuilder uniq = new StringBuilder("7F000001");
            hex(uniq, now, 16);
            hex(uniq, i, 8);
            byte[] props = ("UNIQ_KEY\u0001" + uniq + "\u0002WAIT\u0001true\u0002MSG_REGION\u0001"
                + "DefaultRegion\u0002TRACE_ON\u0001true\u0002").getBytes(StandardCharsets.UTF_8);
            int size = 84 + 4 + body.length + 1 + topicBytes.length + 2 + props.length;
            out.putInt(size).putInt(MAGIC_V1).putInt(bodyCrc).putInt(0).putInt(0);
            out.putLong(i).putLong(0).putInt(0).putLong(now);
            out.put(new byte[] {127, 0, 0, 1}).putInt(40000);
            out.putLong(now).put(new byte[] {127, 0, 0, 1}).putInt(10911);
            out.putInt(0).putLong(0);
            out.putInt(body.length).put(body);
            out.put((byte) topicBytes.length).put(topicBytes);
            out.putShort((short) props.length).put(props);
        }
        byte[] records = new byte[out.position()];
        out.flip().get(records);
        return records;
    }

    RemotingCommand pull(ChannelHandlerContext ctx, RemotingCommand request) {
        String topic = field(request, "topic", "topic");
        int queue = Integer.parseInt(field(request, "queueId", "queueId"));
        long offset = longField(request, "queueOffset", 0);
        int wanted = (int) Math.min(longField(request, "maxMsgNums", pullBatch), pullBatch);
        long max = retry(topic) ? 0 : backlog;
        if ((longField(request, "sysFlag", 0) & 1) != 0) {
            consumerOffsets.put(offsetKey(request), longField(request, "commitOffset", 0));
        }
        if (offset >= max || wanted <= 0) {
            RemotingCommand response = pullHeader(19, Math.min(offset, max), max);
            response.setOpaque(request.getOpaque());
            response.markResponseType();
            holds.schedule(() -> ctx.channel().writeAndFlush(response), holdMs, TimeUnit.MILLISECONDS);
            return null; // answered when the hold ends
        }
        int count = (int) Math.min(wanted, max - offset);
        byte[] template = templates.computeIfAbsent(topic, this::template);
        ByteBuffer records = ByteBuffer.wrap(template);
        int length = 0;
        for (int i = 0; i < count; i++) {
            length += records.getInt(length);
        }
        byte[] out = java.util.Arrays.copyOf(template, length);
        ByteBuffer patch = ByteBuffer.wrap(out);
        long physical = commitLog.get();
        for (int i = 0, pos = 0; i < count; i++) {
            patch.putInt(pos + 12, queue);
            patch.putLong(pos + 20, offset + i);
            patch.putLong(pos + 28, physical + pos);
            pos += patch.getInt(pos);
        }
        RemotingCommand response = pullHeader(0, offset + count, max);
        response.setBody(out);
        return response;
    }

    static RemotingCommand pullHeader(int code, long next, long max) {
        RemotingCommand response = RemotingCommand.createResponseCommand(code, null);
        response.addExtField("suggestWhichBrokerId", "0");
        response.addExtField("nextBeginOffset", Long.toString(next));
        response.addExtField("minOffset", "0");
        response.addExtField("maxOffset", Long.toString(max));
        return response;
    }

    static String counts(Map<Integer, AtomicLong> table) {
        StringBuilder out = new StringBuilder("{");
        for (Map.Entry<Integer, AtomicLong> entry : table.entrySet()) {
            if (out.length() > 1) {
                out.append(", ");
            }
            out.append('"').append(entry.getKey()).append("\": ").append(entry.getValue().get());
        }
        return out.append('}').toString();
    }

    /** Runs a request on the Netty thread that decoded it: no hand-off, nothing blocks. */
    static final class Inline extends AbstractExecutorService {
        public void execute(Runnable task) {
            task.run();
        }

        public void shutdown() {}

        public List<Runnable> shutdownNow() {
            return List.of();
        }

        public boolean isShutdown() {
            return false;
        }

        public boolean isTerminated() {
            return false;
        }

        public boolean awaitTermination(long timeout, TimeUnit unit) {
            return true;
        }
    }

    // A few requests of each common kind through the Netty pipeline before the port is
    // announced: the server's classes load and its first answers come before a client's
    // first request timeout, even on a busy machine.
    static void warm(String addr) throws Exception {
        NettyRemotingClient client = new NettyRemotingClient(new NettyClientConfig());
        client.start();
        try {
            for (int i = 0; i < 20; i++) {
                for (int code : new int[] {105, 310, 11, 30}) {
                    RemotingCommand request = RemotingCommand.createRequestCommand(code, null);
                    request.addExtField("topic", "null_broker_warm_up");
                    request.addExtField("b", "null_broker_warm_up");
                    request.addExtField("queueId", "0");
                    request.addExtField("queueOffset", "0");
                    request.addExtField("maxMsgNums", "1");
                    request.setBody(new byte[16]);
                    client.invokeSync(addr, request, 60_000);
                }
            }
        } finally {
            client.shutdown();
        }
    }

    public static void main(String[] args) throws Exception {
        // as BrokerStartup does: every response carries this version (clients read it)
        System.setProperty(RemotingCommand.REMOTING_VERSION_KEY,
            Integer.toString(MQVersion.CURRENT_VERSION));
        NullBroker broker = new NullBroker(Integer.parseInt(args[1]), Long.parseLong(args[2]),
            Integer.parseInt(args[3]), Long.parseLong(args[4]), Integer.parseInt(args[5]));
        NettyServerConfig config = new NettyServerConfig();
        config.setListenPort(Integer.parseInt(args[0]));
        config.setBindAddress("127.0.0.1");
        NettyRemotingServer server = new NettyRemotingServer(config);
        server.registerDefaultProcessor(broker, new Inline());
        server.start();
        broker.listening(server.localListenPort());
        warm(broker.addr);
        broker.requests.clear(); // the stats count the clients' requests only
        System.out.println("{\"port\": " + server.localListenPort() + "}");
        System.out.flush();
        BufferedReader in =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.trim().equals("quit")) {
            if (line.trim().equals("stats")) {
                System.out.println("{\"requests\": " + counts(broker.requests) + ", \"unknown\": "
                    + counts(broker.unknown) + "}");
                System.out.flush();
            }
        }
        server.shutdown();
        broker.holds.shutdownNow();
        System.exit(0);
    }
}
