/* A null broker for benchmarks/nullbroker.py: it answers the clients' requests from memory,
 * with no storage, at a small CPU cost per message, so that the clients, not the broker, are
 * the bottleneck. One port plays both the NameServer and broker-a. It answers the same
 * requests as benchmarks/java/NullBroker.java, the same way:
 *
 *   nullbroker PORT QUEUES BACKLOG_PER_QUEUE PULL_BATCH HOLD_MS BODY_BYTES
 *
 * PORT 0 picks a free port. Once listening it prints {"port": P}. Then, per line on stdin:
 * "stats" -> {"requests": {"CODE": count, ...}, "unknown": {"CODE": count, ...}}; "quit" (or
 * the end of its input) stops it. What it answers (codes of Java's RequestCode):
 *
 *   105 GET_ROUTEINFO_BY_TOPIC: any topic, broker-a at this port with QUEUES queues
 *   106 GET_BROKER_CLUSTER_INFO, 17 UPDATE_AND_CREATE_TOPIC, 46 CHECK_CLIENT_CONFIG: success
 *   34 HEART_BEAT / 35 UNREGISTER_CLIENT: the groups' client ids, for 38 GET_CONSUMER_LIST_BY_GROUP
 *   10 / 310 SEND_MESSAGE(_V2), 320 SEND_BATCH_MESSAGE: a send result, nothing stored
 *   11 PULL_MESSAGE: up to PULL_BATCH stored-layout records of BODY_BYTES built once per topic
 *      (queue id and offsets patched per pull) while the offset is below BACKLOG_PER_QUEUE;
 *      past it (and on %RETRY% topics) the pull is held HOLD_MS, then PULL_NOT_FOUND
 *   14 / 15 QUERY / UPDATE_CONSUMER_OFFSET (in memory), 30 GET_MAX_OFFSET (the backlog),
 *   31 GET_MIN_OFFSET, 29 SEARCH_OFFSET_BY_TIMESTAMP, 32 GET_EARLIEST_MSG_STORETIME: 0
 *   208 GET_CONSUME_STATS: every queue of the topic, its backlog and the group's offset
 *   anything else: success with no body, counted under "unknown"
 *
 * Requests are decoded in either header serialization (JSON or ROCKETMQ binary) and answered in
 * the request's. Why C: each connection is a thread doing blocking reads and writes, so a round
 * trip costs one read and one write, with no poller, scheduler or garbage collector between
 * them; the frames of one read are answered by one write. (A Go build of the same cost 1.7x
 * this CPU per sync round trip, in its scheduler: benchmarks/nullbroker.py's broker figures.)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAME (16 << 20)
#define MAX_EXT 64
#define CODES 1024

static int queues, pull_batch;
static long long backlog, hold_ms;
static size_t body_len;
static char *body;
static char addr[64], id_prefix[17];
static long long *queue_offsets;
static long long commit_log;
static long long requests[CODES], unknown[CODES];
static pthread_mutex_t state = PTHREAD_MUTEX_INITIALIZER;

/* --- small tables (a few dozen entries in a run) under `state` --- */
typedef struct { char *key; long long value; } entry;
static entry *offsets; static size_t n_offsets;
typedef struct { char *group; char *client; } member;
static member *members; static size_t n_members;
typedef struct { char *topic; unsigned char *records; size_t length; } template_t;
static template_t *templates; static size_t n_templates;

typedef struct { const char *p; size_t n; } str;
typedef struct {
    int code, binary; int32_t opaque, flag;
    str keys[MAX_EXT], values[MAX_EXT]; int n_ext;
    const unsigned char *body; size_t body_len;
} request;

typedef struct {
    int fd;
    pthread_mutex_t mu;
    unsigned char *out; size_t out_len, out_cap;
    char hdr[4096];
} conn;

static uint32_t crc32_of(const char *p, size_t n) {
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        crc ^= (unsigned char)p[i];
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

static void *grow(void *p, size_t *cap, size_t need) {
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : 4096;
    while (c < need) c *= 2;
    p = realloc(p, c);
    if (!p) { perror("realloc"); exit(1); }
    *cap = c;
    return p;
}

static void put(conn *c, const void *p, size_t n) {
    c->out = grow(c->out, &c->out_cap, c->out_len + n);
    memcpy(c->out + c->out_len, p, n);
    c->out_len += n;
}

static int flush(conn *c) {
    size_t done = 0;
    while (done < c->out_len) {
        ssize_t n = write(c->fd, c->out + done, c->out_len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) { c->out_len = 0; return -1; }
        done += (size_t)n;
    }
    c->out_len = 0;
    return 0;
}

/* --- request fields --- */
static str field(const request *r, const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < r->n_ext; i++)
        if (r->keys[i].n == n && memcmp(r->keys[i].p, name, n) == 0) return r->values[i];
    return (str){NULL, 0};
}

static long long field_int(const request *r, const char *name, long long otherwise) {
    str v = field(r, name);
    if (!v.p || !v.n) return otherwise;
    long long x = 0; int neg = 0; size_t i = 0;
    if (v.p[0] == '-') { neg = 1; i = 1; }
    for (; i < v.n; i++) {
        if (v.p[i] < '0' || v.p[i] > '9') return otherwise;
        x = x * 10 + (v.p[i] - '0');
    }
    return neg ? -x : x;
}

static int retry_topic(str t) {
    return !t.p || !t.n || (t.n >= 7 && memcmp(t.p, "%RETRY%", 7) == 0) ||
           (t.n >= 5 && memcmp(t.p, "%DLQ%", 5) == 0);
}

/* --- JSON header: a flat object whose extFields member is an object of strings --- */
typedef struct { const char *b; size_t i, n; } scan;

static void ws(scan *s) {
    while (s->i < s->n && (s->b[s->i] == ' ' || s->b[s->i] == '\t' || s->b[s->i] == '\n' ||
                           s->b[s->i] == '\r')) s->i++;
}

/* a string between quotes, escapes left in place (the fields read here have none) */
static int jstr(scan *s, str *out) {
    if (s->i >= s->n || s->b[s->i] != '"') return 0;
    size_t start = ++s->i;
    while (s->i < s->n) {
        char c = s->b[s->i];
        if (c == '"') { out->p = s->b + start; out->n = s->i - start; s->i++; return 1; }
        s->i += c == '\\' ? 2 : 1;
    }
    return 0;
}

static int skip(scan *s) {
    ws(s);
    if (s->i >= s->n) return 0;
    char c = s->b[s->i];
    str ignored;
    if (c == '"') return jstr(s, &ignored);
    if (c == '{' || c == '[') {
        int depth = 0;
        while (s->i < s->n) {
            c = s->b[s->i];
            if (c == '"') { if (!jstr(s, &ignored)) return 0; continue; }
            if (c == '{' || c == '[') depth++;
            if (c == '}' || c == ']') { if (--depth == 0) { s->i++; return 1; } }
            s->i++;
        }
        return 0;
    }
    while (s->i < s->n && s->b[s->i] != ',' && s->b[s->i] != '}' && s->b[s->i] != ']') s->i++;
    return 1;
}

static long long jnum(scan *s) {
    long long x = 0; int neg = 0;
    if (s->i < s->n && s->b[s->i] == '-') { neg = 1; s->i++; }
    while (s->i < s->n && s->b[s->i] >= '0' && s->b[s->i] <= '9') x = x * 10 + (s->b[s->i++] - '0');
    return neg ? -x : x;
}

static int decode_json(const char *h, size_t n, request *r) {
    scan s = {h, 0, n};
    ws(&s);
    if (s.i >= n || h[s.i] != '{') return 0;
    s.i++;
    for (;;) {
        ws(&s);
        if (s.i < n && h[s.i] == '}') return 1;
        str key;
        if (!jstr(&s, &key)) return 0;
        ws(&s);
        if (s.i >= n || h[s.i] != ':') return 0;
        s.i++;
        ws(&s);
        if (key.n == 4 && memcmp(key.p, "code", 4) == 0) r->code = (int)jnum(&s);
        else if (key.n == 6 && memcmp(key.p, "opaque", 6) == 0) r->opaque = (int32_t)jnum(&s);
        else if (key.n == 4 && memcmp(key.p, "flag", 4) == 0) r->flag = (int32_t)jnum(&s);
        else if (key.n == 9 && memcmp(key.p, "extFields", 9) == 0 && s.i < n && h[s.i] == '{') {
            s.i++;
            for (;;) {
                ws(&s);
                if (s.i < n && h[s.i] == '}') { s.i++; break; }
                str k, v;
                if (!jstr(&s, &k)) return 0;
                ws(&s);
                if (s.i >= n || h[s.i] != ':') return 0;
                s.i++;
                ws(&s);
                if (s.i < n && h[s.i] == '"') {
                    if (!jstr(&s, &v)) return 0;
                    if (r->n_ext < MAX_EXT) {
                        r->keys[r->n_ext] = k; r->values[r->n_ext] = v; r->n_ext++;
                    }
                } else if (!skip(&s)) return 0;
                ws(&s);
                if (s.i < n && h[s.i] == ',') s.i++;
            }
        } else if (!skip(&s)) return 0;
        ws(&s);
        if (s.i < n && h[s.i] == ',') s.i++;
    }
}

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int decode_binary(const unsigned char *h, size_t n, request *r) {
    if (n < 21) return 0;
    r->code = (int16_t)(h[0] << 8 | h[1]);
    r->opaque = (int32_t)be32(h + 5);
    r->flag = (int32_t)be32(h + 9);
    size_t pos = 17 + be32(h + 13);
    if (pos + 4 > n) return 0;
    size_t end = pos + 4 + be32(h + pos);
    pos += 4;
    if (end > n) return 0;
    while (pos + 2 <= end) {
        size_t kl = (size_t)(h[pos] << 8 | h[pos + 1]);
        pos += 2;
        if (pos + kl + 4 > end) return 0;
        str k = {(const char *)h + pos, kl};
        pos += kl;
        size_t vl = be32(h + pos);
        pos += 4;
        if (pos + vl > end) return 0;
        if (r->n_ext < MAX_EXT) {
            r->keys[r->n_ext] = k; r->values[r->n_ext] = (str){(const char *)h + pos, vl};
            r->n_ext++;
        }
        pos += vl;
    }
    return 1;
}

/* --- answers --- */
static char *append(char *h, const char *s, size_t n) { memcpy(h, s, n); return h + n; }
#define LIT(h, s) append(h, s, sizeof(s) - 1)

static char *append_int(char *h, long long v) {
    char tmp[24]; int i = 0; unsigned long long u = v < 0 ? -(unsigned long long)v : (unsigned long long)v;
    do { tmp[i++] = (char)('0' + u % 10); u /= 10; } while (u);
    if (v < 0) *h++ = '-';
    while (i) *h++ = tmp[--i];
    return h;
}

static char *append_quoted(char *h, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    *h++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') { *h++ = '\\'; *h++ = (char)c; }
        else if (c < 0x20) { h = LIT(h, "\\u00"); *h++ = hex[c >> 4]; *h++ = hex[c & 15]; }
        else *h++ = (char)c;
    }
    *h++ = '"';
    return h;
}

static void put_be16(unsigned char *p, unsigned v) { p[0] = (unsigned char)(v >> 8); p[1] = (unsigned char)v; }
static void put_be32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v;
}
static void put_be64(unsigned char *p, uint64_t v) { put_be32(p, (uint32_t)(v >> 32)); put_be32(p + 4, (uint32_t)v); }

/* an answer to r (nothing for a oneway request); ext: n_ext pairs of (key, value) strings;
 * the caller holds c->mu */
static void answer(conn *c, const request *r, int code, const char *remark, const void *data,
                   size_t data_len, int n_ext, const str *ext) {
    if (r->flag & 2) return;
    size_t need = 256 + (remark ? 2 * strlen(remark) : 0);
    for (int i = 0; i < 2 * n_ext; i++) need += 6 * ext[i].n + 8;
    char *h0 = need <= sizeof c->hdr ? c->hdr : malloc(need);
    char *h = h0;
    if (r->binary) {
        unsigned char *u = (unsigned char *)h;
        size_t rl = remark ? strlen(remark) : 0;
        put_be16(u, (unsigned)code); u[2] = 0; put_be16(u + 3, 479);
        put_be32(u + 5, (uint32_t)r->opaque); put_be32(u + 9, 1); put_be32(u + 13, (uint32_t)rl);
        u += 17;
        memcpy(u, remark ? remark : "", rl); u += rl;
        unsigned char *ext_len = u; u += 4;
        for (int i = 0; i < n_ext; i++) {
            put_be16(u, (unsigned)ext[2 * i].n); u += 2;
            memcpy(u, ext[2 * i].p, ext[2 * i].n); u += ext[2 * i].n;
            put_be32(u, (uint32_t)ext[2 * i + 1].n); u += 4;
            memcpy(u, ext[2 * i + 1].p, ext[2 * i + 1].n); u += ext[2 * i + 1].n;
        }
        put_be32(ext_len, (uint32_t)(u - ext_len - 4));
        h = (char *)u;
    } else {
        h = LIT(h, "{\"code\":");
        h = append_int(h, code);
        h = LIT(h, ",\"extFields\":{");
        for (int i = 0; i < n_ext; i++) {
            if (i) *h++ = ',';
            h = append_quoted(h, ext[2 * i].p, ext[2 * i].n);
            *h++ = ':';
            h = append_quoted(h, ext[2 * i + 1].p, ext[2 * i + 1].n);
        }
        h = LIT(h, "},\"flag\":1,\"language\":\"JAVA\",\"opaque\":");
        h = append_int(h, r->opaque);
        if (remark) { h = LIT(h, ",\"remark\":"); h = append_quoted(h, remark, strlen(remark)); }
        h = LIT(h, ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}");
    }
    size_t hl = (size_t)(h - h0);
    unsigned char prefix[8];
    put_be32(prefix, (uint32_t)(4 + hl + data_len));
    put_be32(prefix + 4, (uint32_t)(r->binary ? 1u << 24 : 0) | (uint32_t)hl);
    put(c, prefix, 8);
    put(c, h0, hl);
    if (data_len) put(c, data, data_len);
    if (h0 != c->hdr) free(h0);
}

#define S(lit) ((str){lit, sizeof(lit) - 1})

static void ok(conn *c, const request *r) { answer(c, r, 0, NULL, NULL, 0, 0, NULL); }

static void offset_answer(conn *c, const request *r, const char *key, long long v) {
    char num[24];
    str ext[2] = {{key, strlen(key)}, {num, (size_t)(append_int(num, v) - num)}};
    answer(c, r, 0, NULL, NULL, 0, 1, ext);
}

static char *hex(char *out, uint64_t v, int digits) {
    static const char h[] = "0123456789ABCDEF";
    for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) *out++ = h[(v >> shift) & 15];
    return out;
}

static int batch_count(const unsigned char *b, size_t n) {
    int count = 0;
    for (size_t pos = 0; pos + 4 <= n; count++) {
        int32_t size = (int32_t)be32(b + pos);
        if (size <= 0) break;
        pos += (size_t)size;
    }
    return count < 1 ? 1 : count;
}

static void send_answer(conn *c, const request *r, int count) {
    long long q = field_int(r, "e", -1);
    if (q == -1) q = field_int(r, "queueId", 0);
    if (q < 0 || q >= queues) q = 0;
    long long first = __atomic_fetch_add(&queue_offsets[q], count, __ATOMIC_RELAXED);
    long long step = (long long)body_len + 200;
    long long physical = __atomic_fetch_add(&commit_log, count * step, __ATOMIC_RELAXED);
    char stack_ids[64 * 33], *ids = count <= 64 ? stack_ids : malloc((size_t)count * 33);
    char *p = ids;
    for (int i = 0; i < count; i++) {
        if (i) *p++ = ',';
        p = append(p, id_prefix, 16);
        p = hex(p, (uint64_t)(physical + i * step), 16);
    }
    char qid[24], qoff[24];
    str ext[10] = {S("msgId"), {ids, (size_t)(p - ids)},
                   S("queueId"), {qid, (size_t)(append_int(qid, q) - qid)},
                   S("queueOffset"), {qoff, (size_t)(append_int(qoff, first) - qoff)},
                   S("MSG_REGION"), S("DefaultRegion"), S("TRACE_ON"), S("true")};
    answer(c, r, 0, NULL, NULL, 0, 5, ext);
    if (ids != stack_ids) free(ids);
}

static char *dup_str(str s) { char *p = malloc(s.n + 1); memcpy(p, s.p, s.n); p[s.n] = 0; return p; }

static char *offset_key(const request *r) {
    str g = field(r, "consumerGroup"), t = field(r, "topic"), q = field(r, "queueId");
    char *k = malloc(g.n + t.n + q.n + 3);
    sprintf(k, "%.*s@%.*s@%.*s", (int)g.n, g.p ? g.p : "", (int)t.n, t.p ? t.p : "",
            (int)q.n, q.p ? q.p : "");
    return k;
}

static void store_offset(const request *r, long long v) {
    char *k = offset_key(r);
    pthread_mutex_lock(&state);
    for (size_t i = 0; i < n_offsets; i++)
        if (!strcmp(offsets[i].key, k)) { offsets[i].value = v; free(k); k = NULL; break; }
    if (k) {
        offsets = realloc(offsets, (n_offsets + 1) * sizeof *offsets);
        offsets[n_offsets++] = (entry){k, v};
    }
    pthread_mutex_unlock(&state);
}

static long long stored_offset(const char *key, long long otherwise) {
    long long v = otherwise;
    pthread_mutex_lock(&state);
    for (size_t i = 0; i < n_offsets; i++)
        if (!strcmp(offsets[i].key, key)) { v = offsets[i].value; break; }
    pthread_mutex_unlock(&state);
    return v;
}

/* the fastjson layout mqadmin reads: a map whose keys are MessageQueue objects */
static void consume_stats(conn *c, const request *r) {
    str topic = field(r, "topic"), group = field(r, "consumerGroup");
    long long max = retry_topic(topic) ? 0 : backlog;
    size_t cap = 256 + (size_t)queues * (160 + topic.n), len = 0;
    char *out = malloc(cap), key[512];
    len += (size_t)sprintf(out, "{\"consumeTps\":0.0,\"offsetTable\":{");
    for (int q = 0; q < queues; q++) {
        snprintf(key, sizeof key, "%.*s@%.*s@%d", (int)group.n, group.p ? group.p : "",
                 (int)topic.n, topic.p ? topic.p : "", q);
        len += (size_t)sprintf(out + len,
            "%s{\"brokerName\":\"broker-a\",\"queueId\":%d,\"topic\":\"%.*s\"}:"
            "{\"brokerOffset\":%lld,\"consumerOffset\":%lld,\"lastTimestamp\":0,\"pullOffset\":0}",
            q ? "," : "", q, (int)topic.n, topic.p ? topic.p : "", max, stored_offset(key, 0));
    }
    len += (size_t)sprintf(out + len, "}}");
    answer(c, r, 0, NULL, out, len, 0, NULL);
    free(out);
}

static void query_offset(conn *c, const request *r) {
    char *k = offset_key(r);
    long long v = -1; int found = 0;
    pthread_mutex_lock(&state);
    for (size_t i = 0; i < n_offsets; i++)
        if (!strcmp(offsets[i].key, k)) { v = offsets[i].value; found = 1; break; }
    pthread_mutex_unlock(&state);
    free(k);
    if (found) offset_answer(c, r, "offset", v);
    else answer(c, r, 22, "no offset stored", NULL, 0, 0, NULL);
}

/* the value of "key":"..." at or after p in [p, end) */
static str json_value(const char *p, const char *end, const char *key) {
    size_t kl = strlen(key);
    for (; p + kl + 3 < end; p++) {
        if (*p == '"' && memcmp(p + 1, key, kl) == 0 && p[kl + 1] == '"') {
            const char *v = p + kl + 2;
            while (v < end && (*v == ':' || *v == ' ')) v++;
            if (v >= end || *v != '"') return (str){NULL, 0};
            const char *e = ++v;
            while (e < end && *e != '"') e++;
            return (str){v, (size_t)(e - v)};
        }
    }
    return (str){NULL, 0};
}

static void heartbeat(const request *r) {
    const char *b = (const char *)r->body, *end = b + r->body_len;
    str client = json_value(b, end, "clientID");
    if (!client.p) return;
    const char *set = memmem(b, r->body_len, "\"consumerDataSet\"", 17);
    if (!set) return;
    pthread_mutex_lock(&state);
    for (const char *p = set; p < end;) {
        str g = json_value(p, end, "groupName");
        if (!g.p) break;
        int known = 0;
        for (size_t i = 0; i < n_members; i++)
            if (strlen(members[i].group) == g.n && !memcmp(members[i].group, g.p, g.n) &&
                strlen(members[i].client) == client.n && !memcmp(members[i].client, client.p, client.n))
                known = 1;
        if (!known) {
            members = realloc(members, (n_members + 1) * sizeof *members);
            members[n_members++] = (member){dup_str(g), dup_str(client)};
        }
        p = g.p + g.n;
    }
    pthread_mutex_unlock(&state);
}

static int str_is(str s, const char *z) { return s.p && strlen(z) == s.n && !memcmp(s.p, z, s.n); }

static void unregister(const request *r) {
    str g = field(r, "consumerGroup"), id = field(r, "clientID");
    pthread_mutex_lock(&state);
    for (size_t i = 0; i < n_members;)
        if (str_is(g, members[i].group) && str_is(id, members[i].client)) members[i] = members[--n_members];
        else i++;
    pthread_mutex_unlock(&state);
}

static void consumer_list(conn *c, const request *r) {
    str g = field(r, "consumerGroup");
    size_t cap = 64, len = 0; char *out = malloc(cap); int n = 0;
    len += (size_t)sprintf(out, "{\"consumerIdList\":[");
    pthread_mutex_lock(&state);
    for (size_t i = 0; i < n_members; i++) {
        if (!str_is(g, members[i].group)) continue;
        out = grow(out, &cap, len + strlen(members[i].client) + 8);
        len += (size_t)sprintf(out + len, "%s\"%s\"", n++ ? "," : "", members[i].client);
    }
    pthread_mutex_unlock(&state);
    out = grow(out, &cap, len + 4);
    len += (size_t)sprintf(out + len, "]}");
    if (n) answer(c, r, 0, NULL, out, len, 0, NULL);
    else answer(c, r, 1, "no consumer for this group", NULL, 0, 0, NULL);
    free(out);
}

/* one pull's worth of records of topic in the broker's stored layout (V1 magic, IPv4 hosts)
 * for queue 0 at offsets 0..PULL_BATCH-1; a pull patches its copy */
static template_t *template_for(str topic) {
    pthread_mutex_lock(&state);
    for (size_t i = 0; i < n_templates; i++)
        if (str_is(topic, templates[i].topic)) { pthread_mutex_unlock(&state); return &templates[i]; }
    uint32_t crc = crc32_of(body, body_len) & 0x7FFFFFFF;
    struct timespec ts; clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
    size_t cap = (size_t)pull_batch * (256 + body_len + topic.n), len = 0;
    unsigned char *out = malloc(cap);
    for (int i = 0; i < pull_batch; i++) {
        char props[160], *p = props;
        p = LIT(p, "UNIQ_KEY\001");
        p = append(p, "7F000001", 8); p = hex(p, now, 16); p = hex(p, (uint64_t)i, 8);
        p = LIT(p, "\002WAIT\001true\002MSG_REGION\001DefaultRegion\002TRACE_ON\001true\002");
        size_t pl = (size_t)(p - props);
        size_t size = 84 + 4 + body_len + 1 + topic.n + 2 + pl;
        unsigned char *u = out + len;
        memset(u, 0, 84);
        put_be32(u, (uint32_t)size); put_be32(u + 4, 0xDAA320A7); put_be32(u + 8, crc);
        put_be64(u + 20, (uint64_t)i); put_be64(u + 40, now);
        u[48] = 127; u[51] = 1; put_be32(u + 52, 40000);
        put_be64(u + 56, now); u[64] = 127; u[67] = 1; put_be32(u + 68, 10911);
        put_be32(u + 84, (uint32_t)body_len); memcpy(u + 88, body, body_len);
        u += 88 + body_len;
        *u++ = (unsigned char)topic.n; memcpy(u, topic.p, topic.n); u += topic.n;
        put_be16(u, (unsigned)pl); memcpy(u + 2, props, pl);
        len += size;
    }
    templates = realloc(templates, (n_templates + 1) * sizeof *templates);
    templates[n_templates] = (template_t){dup_str(topic), out, len};
    template_t *t = &templates[n_templates++];
    pthread_mutex_unlock(&state);
    return t;
}

/* held pulls: all held equally long, so a FIFO is ordered by due time */
typedef struct held { struct held *next; conn *c; request r; long long next_offset, max; struct timespec due; } held;
static held *held_head, *held_tail;
static pthread_cond_t held_cond = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;

static void pull_answer(conn *c, const request *r, int code, long long next, long long max,
                        const void *data, size_t len) {
    char nb[24], mb[24];
    str ext[8] = {S("suggestWhichBrokerId"), S("0"),
                  S("nextBeginOffset"), {nb, (size_t)(append_int(nb, next) - nb)},
                  S("minOffset"), S("0"), S("maxOffset"), {mb, (size_t)(append_int(mb, max) - mb)}};
    answer(c, r, code, NULL, data, len, 4, ext);
}

static void *holder(void *unused) {
    (void)unused;
    pthread_mutex_lock(&held_mu);
    for (;;) {
        while (!held_head) pthread_cond_wait(&held_cond, &held_mu);
        held *h = held_head;
        if (pthread_cond_timedwait(&held_cond, &held_mu, &h->due) != ETIMEDOUT && held_head == h) {
            struct timespec now; clock_gettime(CLOCK_REALTIME, &now);
            if (now.tv_sec < h->due.tv_sec || (now.tv_sec == h->due.tv_sec && now.tv_nsec < h->due.tv_nsec))
                continue;
        }
        held_head = h->next;
        if (!held_head) held_tail = NULL;
        pthread_mutex_unlock(&held_mu);
        pthread_mutex_lock(&h->c->mu);
        pull_answer(h->c, &h->r, 19, h->next_offset, h->max, NULL, 0);
        flush(h->c);
        pthread_mutex_unlock(&h->c->mu);
        free(h);
        pthread_mutex_lock(&held_mu);
    }
    return NULL;
}

static void pull(conn *c, const request *r) {
    str topic = field(r, "topic");
    long long q = field_int(r, "queueId", 0), offset = field_int(r, "queueOffset", 0);
    long long wanted = field_int(r, "maxMsgNums", pull_batch);
    if (wanted > pull_batch) wanted = pull_batch;
    long long max = retry_topic(topic) ? 0 : backlog;
    if (field_int(r, "sysFlag", 0) & 1) store_offset(r, field_int(r, "commitOffset", 0));
    if (offset >= max || wanted <= 0) {
        held *h = calloc(1, sizeof *h);
        h->c = c; h->r.code = r->code; h->r.opaque = r->opaque; h->r.flag = r->flag;
        h->r.binary = r->binary; h->next_offset = offset < max ? offset : max; h->max = max;
        clock_gettime(CLOCK_REALTIME, &h->due);
        h->due.tv_sec += hold_ms / 1000;
        h->due.tv_nsec += (hold_ms % 1000) * 1000000;
        if (h->due.tv_nsec >= 1000000000) { h->due.tv_sec++; h->due.tv_nsec -= 1000000000; }
        pthread_mutex_lock(&held_mu);
        if (held_tail) held_tail->next = h; else held_head = h;
        held_tail = h;
        pthread_cond_signal(&held_cond);
        pthread_mutex_unlock(&held_mu);
        return;
    }
    long long count = wanted < max - offset ? wanted : max - offset;
    template_t *t = template_for(topic);
    size_t len = 0;
    for (long long i = 0; i < count; i++) len += be32(t->records + len);
    /* the header goes first: answer with the records appended, then patch them in place */
    pull_answer(c, r, 0, offset + count, max, t->records, len);
    unsigned char *out = c->out + c->out_len - len;
    uint64_t physical = (uint64_t)__atomic_load_n(&commit_log, __ATOMIC_RELAXED);
    size_t pos = 0;
    for (long long i = 0; i < count; i++) {
        put_be32(out + pos + 12, (uint32_t)q);
        put_be64(out + pos + 20, (uint64_t)(offset + i));
        put_be64(out + pos + 28, physical + pos);
        pos += be32(out + pos);
    }
}

static void handle(conn *c, const request *r) {
    if (r->code >= 0 && r->code < CODES) __atomic_fetch_add(&requests[r->code], 1, __ATOMIC_RELAXED);
    switch (r->code) {
    case 10: case 310: send_answer(c, r, 1); break;
    case 320: send_answer(c, r, batch_count(r->body, r->body_len)); break;
    case 11: pull(c, r); break;
    case 105: {
        char route[512];
        int n = snprintf(route, sizeof route,
            "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"%s\"},\"brokerName\":\"broker-a\","
            "\"cluster\":\"DefaultCluster\",\"enableActingMaster\":false}],\"filterServerTable\":{},"
            "\"queueDatas\":[{\"brokerName\":\"broker-a\",\"perm\":6,\"readQueueNums\":%d,"
            "\"topicSysFlag\":0,\"writeQueueNums\":%d}]}", addr, queues, queues);
        answer(c, r, 0, NULL, route, (size_t)n, 0, NULL);
        break;
    }
    case 106: {
        char info[512];
        int n = snprintf(info, sizeof info,
            "{\"brokerAddrTable\":{\"broker-a\":{\"brokerAddrs\":{\"0\":\"%s\"},"
            "\"brokerName\":\"broker-a\",\"cluster\":\"DefaultCluster\"}},"
            "\"clusterAddrTable\":{\"DefaultCluster\":[\"broker-a\"]}}", addr);
        answer(c, r, 0, NULL, info, (size_t)n, 0, NULL);
        break;
    }
    case 34: heartbeat(r); ok(c, r); break;
    case 35: unregister(r); ok(c, r); break;
    case 38: consumer_list(c, r); break;
    case 14: query_offset(c, r); break;
    case 15: store_offset(r, field_int(r, "commitOffset", 0)); ok(c, r); break;
    case 30: offset_answer(c, r, "offset", retry_topic(field(r, "topic")) ? 0 : backlog); break;
    case 29: case 31: offset_answer(c, r, "offset", 0); break;
    case 32: offset_answer(c, r, "timestamp", 0); break;
    case 208: consume_stats(c, r); break;
    case 17: case 46: ok(c, r); break;
    default:
        if (r->code >= 0 && r->code < CODES) __atomic_fetch_add(&unknown[r->code], 1, __ATOMIC_RELAXED);
        ok(c, r);
    }
}

/* a connection: blocking reads; every complete frame of a read answered, then one write */
static void *serve(void *arg) {
    conn *c = arg;
    size_t cap = 1 << 20, start = 0, end = 0;
    unsigned char *buf = malloc(cap);
    request *r = malloc(sizeof *r);
    for (;;) {
        if (end == cap) {
            if (start > 0) { memmove(buf, buf + start, end - start); end -= start; start = 0; }
            else { cap *= 2; buf = realloc(buf, cap); }
        }
        ssize_t n = read(c->fd, buf + end, cap - end);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        end += (size_t)n;
        int bad = 0;
        pthread_mutex_lock(&c->mu);
        while (end - start >= 4) {
            int32_t size = (int32_t)be32(buf + start);
            if (size < 4 || size > MAX_FRAME) { bad = 1; break; }
            if (end - start < 4 + (size_t)size) {
                if (4 + (size_t)size > cap - start) {  /* room for the whole frame */
                    memmove(buf, buf + start, end - start); end -= start; start = 0;
                    while (cap < 4 + (size_t)size) cap *= 2;
                    buf = realloc(buf, cap);
                }
                break;
            }
            const unsigned char *frame = buf + start + 4;
            start += 4 + (size_t)size;
            uint32_t kind = be32(frame);
            size_t hl = kind & 0xFFFFFF;
            if (4 + hl > (size_t)size) { bad = 1; break; }
            memset(r, 0, offsetof(request, keys));
            r->n_ext = 0;
            r->binary = (kind >> 24) == 1;
            r->body = frame + 4 + hl;
            r->body_len = (size_t)size - 4 - hl;
            int good = r->binary ? decode_binary(frame + 4, hl, r)
                                 : decode_json((const char *)frame + 4, hl, r);
            if (!good) { bad = 1; break; }
            if (!(r->flag & 1)) handle(c, r);  /* (a response to nothing we asked is dropped) */
        }
        if (start == end) start = end = 0;
        if (flush(c) < 0) bad = 1;
        pthread_mutex_unlock(&c->mu);
        if (bad) break;
    }
    /* the conn and its descriptor stay (a held pull may still point at them): writes fail */
    shutdown(c->fd, SHUT_RDWR);
    free(buf);
    free(r);
    return NULL;
}

static void print_counts(long long *table) {
    int first = 1;
    printf("{");
    for (int i = 0; i < CODES; i++) {
        long long n = __atomic_load_n(&table[i], __ATOMIC_RELAXED);
        if (n) { printf("%s\"%d\": %lld", first ? "" : ", ", i, n); first = 0; }
    }
    printf("}");
}

static void *acceptor(void *arg) {
    int listener = *(int *)arg;
    for (;;) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0) { if (errno == EINTR || errno == ECONNABORTED) continue; return NULL; }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conn *c = calloc(1, sizeof *c);
        c->fd = fd;
        pthread_mutex_init(&c->mu, NULL);
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_create(&t, &attr, serve, c);
        pthread_attr_destroy(&attr);
    }
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: nullbroker PORT QUEUES BACKLOG PULL_BATCH HOLD_MS BODY_BYTES\n");
        return 2;
    }
    int port = atoi(argv[1]);
    queues = atoi(argv[2]); backlog = atoll(argv[3]); pull_batch = atoi(argv[4]);
    hold_ms = atoll(argv[5]); body_len = (size_t)atoll(argv[6]);
    if (queues <= 0 || pull_batch <= 0 || hold_ms < 0) { fprintf(stderr, "bad arguments\n"); return 2; }
    signal(SIGPIPE, SIG_IGN); /* a write to a client gone fails, it does not end the broker */
    body = malloc(body_len + 1);
    memset(body, 'x', body_len);
    queue_offsets = calloc((size_t)queues, sizeof *queue_offsets);
    int listener = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(listener, 128) < 0) {
        perror("listen");
        return 1;
    }
    socklen_t sl = sizeof sa;
    getsockname(listener, (struct sockaddr *)&sa, &sl);
    port = ntohs(sa.sin_port);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    hex(hex(id_prefix, 0x7F000001, 8), (uint64_t)port, 8);
    pthread_t t;
    pthread_create(&t, NULL, holder, NULL);
    pthread_create(&t, NULL, acceptor, &listener);
    printf("{\"port\": %d}\n", port);
    fflush(stdout);
    char line[256];
    while (fgets(line, sizeof line, stdin)) {
        if (!strncmp(line, "quit", 4)) break;
        if (!strncmp(line, "stats", 5)) {
            printf("{\"requests\": ");
            print_counts(requests);
            printf(", \"unknown\": ");
            print_counts(unknown);
            printf("}\n");
            fflush(stdout);
        }
    }
    return 0;
}
