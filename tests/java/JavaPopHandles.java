// What the Java client 5.3.3 writes for POP consumption, as JSON lines, for
// tests/protocol/test_pop.py: ack handles (ExtraInfoUtil.buildExtraInfo), the POP response's
// offset infos (buildStartOffsetInfo, buildMsgOffsetInfo, buildQueueOffsetOrderCountInfo), a
// BATCH_ACK_MESSAGE body merged as MQClientAPIImpl.batchAckMessageAsync merges it, and the
// request headers' ext fields. Run: java -cp '<lib>/*' JavaPopHandles.java
import com.alibaba.fastjson.JSON;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RequestCode;
import org.apache.rocketmq.remoting.protocol.body.BatchAck;
import org.apache.rocketmq.remoting.protocol.body.BatchAckMessageRequestBody;
import org.apache.rocketmq.remoting.protocol.header.AckMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.ChangeInvisibleTimeRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.ExtraInfoUtil;
import org.apache.rocketmq.remoting.protocol.header.PopMessageRequestHeader;
import org.apache.rocketmq.remoting.CommandCustomHeader;

public class JavaPopHandles {
    static void emit(String kind, Object value) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("kind", kind);
        line.put("value", value);
        System.out.println(JSON.toJSONString(line));
    }

    static Map<String, String> ext(int code, CommandCustomHeader header) {
        RemotingCommand cmd = RemotingCommand.createRequestCommand(code, header);
        cmd.makeCustomHeaderToNet();
        return new java.util.TreeMap<>(cmd.getExtFields());
    }

    public static void main(String[] args) {
        String[] topics = {"orders", "%RETRY%billing_orders", "%RETRY%billing+orders"};
        List<Map<String, Object>> handles = new ArrayList<>();
        for (String topic : topics) {
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("topic", topic);
            one.put("eight", ExtraInfoUtil.buildExtraInfo(100L, 1732500000123L, 60000L, 3, topic, "broker-a", 2, 105L));
            one.put("seven", ExtraInfoUtil.buildExtraInfo(100L, 1732500000123L, 60000L, 999, topic, "broker-a", 2));
            String[] split = ExtraInfoUtil.split((String) one.get("eight"));
            one.put("realTopic", ExtraInfoUtil.getRealTopic(split, "orders", "billing"));
            one.put("isOrder", ExtraInfoUtil.isOrder(split));
            handles.add(one);
        }
        emit("handles", handles);

        StringBuilder start = new StringBuilder();
        ExtraInfoUtil.buildStartOffsetInfo(start, "orders", 0, 100L);
        ExtraInfoUtil.buildStartOffsetInfo(start, "%RETRY%billing+orders", 3, 7L);
        StringBuilder msgs = new StringBuilder();
        ExtraInfoUtil.buildMsgOffsetInfo(msgs, "orders", 0, Arrays.asList(100L, 101L, 103L));
        ExtraInfoUtil.buildMsgOffsetInfo(msgs, "%RETRY%billing+orders", 3, Arrays.asList(7L));
        StringBuilder counts = new StringBuilder();
        ExtraInfoUtil.buildQueueOffsetOrderCountInfo(counts, "orders", 0, 100L, 2);
        ExtraInfoUtil.buildQueueIdOrderCountInfo(counts, "orders", 1, 4);
        Map<String, Object> infos = new LinkedHashMap<>();
        infos.put("startOffsetInfo", start.toString());
        infos.put("msgOffsetInfo", msgs.toString());
        infos.put("orderCountInfo", counts.toString());
        infos.put("parsedStart", ExtraInfoUtil.parseStartOffsetInfo(start.toString()));
        infos.put("parsedMsgs", ExtraInfoUtil.parseMsgOffsetInfo(msgs.toString()));
        infos.put("parsedCounts", ExtraInfoUtil.parseOrderCountInfo(counts.toString()));
        emit("infos", infos);

        // BATCH_ACK_MESSAGE body: MQClientAPIImpl.batchAckMessageAsync's merge
        List<String> extraInfos = Arrays.asList(
            ExtraInfoUtil.buildExtraInfo(100L, 1732500000123L, 60000L, 3, "orders", "broker-a", 0, 100L),
            ExtraInfoUtil.buildExtraInfo(100L, 1732500000123L, 60000L, 3, "orders", "broker-a", 0, 101L),
            ExtraInfoUtil.buildExtraInfo(100L, 1732500000123L, 60000L, 3, "orders", "broker-a", 0, 109L),
            ExtraInfoUtil.buildExtraInfo(7L, 1732500000123L, 60000L, 3, "%RETRY%billing+orders", "broker-a", 3, 7L));
        Map<String, BatchAck> merged = new LinkedHashMap<>();
        String brokerName = null;
        for (String extraInfo : extraInfos) {
            String[] d = ExtraInfoUtil.split(extraInfo);
            if (brokerName == null) {
                brokerName = ExtraInfoUtil.getBrokerName(d);
            }
            String key = ExtraInfoUtil.getRetry(d) + "@" + ExtraInfoUtil.getQueueId(d) + "@"
                + ExtraInfoUtil.getCkQueueOffset(d) + "@" + ExtraInfoUtil.getPopTime(d);
            BatchAck ack = merged.computeIfAbsent(key, k -> {
                BatchAck b = new BatchAck();
                b.setConsumerGroup("billing");
                b.setTopic("orders");
                b.setRetry(ExtraInfoUtil.getRetry(d));
                b.setStartOffset(ExtraInfoUtil.getCkQueueOffset(d));
                b.setQueueId(ExtraInfoUtil.getQueueId(d));
                b.setReviveQueueId(ExtraInfoUtil.getReviveQid(d));
                b.setPopTime(ExtraInfoUtil.getPopTime(d));
                b.setInvisibleTime(ExtraInfoUtil.getInvisibleTime(d));
                b.setBitSet(new BitSet());
                return b;
            });
            ack.getBitSet().set((int) (ExtraInfoUtil.getQueueOffset(d) - ExtraInfoUtil.getCkQueueOffset(d)));
        }
        BatchAckMessageRequestBody body = new BatchAckMessageRequestBody();
        body.setBrokerName(brokerName);
        body.setAcks(new ArrayList<>(merged.values()));
        Map<String, Object> batch = new LinkedHashMap<>();
        batch.put("extraInfos", extraInfos);
        batch.put("body", new String(body.encode(), java.nio.charset.StandardCharsets.UTF_8));
        emit("batchAck", batch);

        PopMessageRequestHeader pop = new PopMessageRequestHeader();
        pop.setConsumerGroup("billing");
        pop.setTopic("orders");
        pop.setQueueId(-1);
        pop.setMaxMsgNums(32);
        pop.setInvisibleTime(60000L);
        pop.setPollTime(15000L);
        pop.setBornTime(1732500000000L);
        pop.setInitMode(1);
        pop.setExpType("TAG");
        pop.setExp("paid || refunded");
        pop.setOrder(true);
        pop.setBrokerName("broker-a");
        AckMessageRequestHeader ack = new AckMessageRequestHeader();
        ack.setConsumerGroup("billing");
        ack.setTopic("%RETRY%billing+orders");
        ack.setQueueId(3);
        ack.setExtraInfo(extraInfos.get(3));
        ack.setOffset(7L);
        ack.setBrokerName("broker-a");
        ChangeInvisibleTimeRequestHeader change = new ChangeInvisibleTimeRequestHeader();
        change.setConsumerGroup("billing");
        change.setTopic("orders");
        change.setQueueId(0);
        change.setExtraInfo(extraInfos.get(1));
        change.setOffset(101L);
        change.setInvisibleTime(10000L);
        change.setBrokerName("broker-a");
        Map<String, Object> headers = new LinkedHashMap<>();
        headers.put("pop", ext(RequestCode.POP_MESSAGE, pop));
        headers.put("ack", ext(RequestCode.ACK_MESSAGE, ack));
        headers.put("change", ext(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, change));
        emit("headers", headers);
    }
}
