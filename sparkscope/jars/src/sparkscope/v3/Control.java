/*
 * The client's calls into this jar: a read of this format whose rows are the answer, one JSON object a row.
 *
 *   spark.read.format("sparkscope.v3.Control").option("call", CALL).options(…).load().collect()
 *
 *   hello       protocol=N (the client's)         {"protocol", "caller": [user, session] or null, "sessions": whether
 *                                                   this server lists its sessions, "grace_ms": the server's,
 *                                                   "identities": whether a user id here is an identity (the server
 *                                                   checks it against a token), "admin": whether the caller is the
 *                                                   server's owner, "limits": Limits.describe()}
 *   make_ring   name, query, schema (JSON), rows, seconds, replace, grace_ms (-1: the server's), scratch_checkpoint,
 *               view (the caller's temporary view   {"scratch": the checkpoint folder the ring made, or null}
 *               of its rows, made too)
 *   ring_writer name (the caller's ring)          {"packet": base64 of the Java-serialized ForeachWriterPacket of a
 *                                                   writer into that ring, for a real-time query (sink/RingRows.java)}
 *   latency     name (the caller's ring)           the end-to-end latency of its newest batch measured, or of
 *               [, batch] [, total [, reset]]      `batch` ({} when none): sink/Latency.java's metrics; `total`:
 *                                                  of every record since its query started or the last `reset`
 *   make_feed   name, schema (JSON), grace_ms      {}
 *   forget      name [, user: the server's owner   {"forgotten": true or false}
 *                only, another user's]
 *   list                                          one row per holding of the caller's user; the server's owner also
 *                                                   gets one row of totals per other user ("kind": "totals"), with
 *                                                   no name and no session
 *   free        [all=true: the server's owner     the caller's holdings that nothing uses, freed now: one row each
 *                only, every user's]
 *
 * No answer carries another user's session id. The call runs once, when the read is planned for execution: Spark
 * Connect runs it as an operation of the caller's session, which names the caller (Holdings.caller). An analysis of
 * the read (its schema) runs nothing. Every limit a call could pass is the server's (Limits.java).
 */
package sparkscope.v3;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;

import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.CatalystTypeConverters;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import scala.Function1;
import sparkscope.v3.feed.Feeds;
import sparkscope.v3.identity.Identity;
import sparkscope.v3.sink.KeepNewest;
import sparkscope.v3.sink.RingRows;

public final class Control implements TableProvider {
    static final StructType ANSWER = new StructType().add("answer", DataTypes.StringType, false);

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return ANSWER;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new ControlTable(new CaseInsensitiveStringMap(properties));
    }

    /** A call's answer: its rows, made when the read is planned. */
    static final class ControlTable implements Table, SupportsRead {
        private final CaseInsensitiveStringMap options;

        ControlTable(CaseInsensitiveStringMap options) {
            this.options = options;
        }

        @Override
        public String name() {
            return "sparkscope-control";
        }

        @Override
        @SuppressWarnings("deprecation")
        public StructType schema() {
            return ANSWER;
        }

        @Override
        public Set<TableCapability> capabilities() {
            return EnumSet.of(TableCapability.BATCH_READ);
        }

        @Override
        public ScanBuilder newScanBuilder(CaseInsensitiveStringMap ignored) {
            return () -> {
                InternalRow[] rows = answer(call(options));
                return new LocalScan() {
                    @Override
                    public InternalRow[] rows() {
                        return rows;
                    }

                    @Override
                    public StructType readSchema() {
                        return ANSWER;
                    }
                };
            };
        }
    }

    static List<Map<String, Object>> call(CaseInsensitiveStringMap options) {
        String call = options.getOrDefault("call", "");
        List<Map<String, Object>> answer = new ArrayList<>();
        Map<String, Object> one = new LinkedHashMap<>();
        String[] caller = Holdings.caller();
        String user = caller == null ? null : caller[0];
        switch (call) {
            case "hello":
                Limits limits = Limits.server();
                one.put("protocol", Holdings.PROTOCOL);
                one.put("caller", caller == null ? null : List.of(caller[0], caller[1]));
                one.put("sessions", Holdings.openSessions() != null);
                one.put("grace_ms", limits.graceMs(-1));
                one.put("identities", Identity.active());
                one.put("admin", Identity.isAdmin(user));
                one.put("limits", limits.describe());
                answer.add(one);
                return answer;
            case "make_ring":
                one.put("scratch", KeepNewest.make(required(options, "name"), options.getOrDefault("query", ""),
                        (StructType) DataType.fromJson(required(options, "schema")), whole(options, "rows", 10000),
                        options.containsKey("seconds") ? Double.parseDouble(options.get("seconds")) : null,
                        options.getBoolean("replace", false), whole(options, "grace_ms", -1),
                        options.getBoolean("scratch_checkpoint", false), options.get("view")));
                answer.add(one);
                return answer;
            case "ring_writer":
                one.put("packet", RingRows.packet(required(options, "name")));
                answer.add(one);
                return answer;
            case "latency":
                if (options.getBoolean("total", false)) {
                    one.putAll(KeepNewest.totalLatency(required(options, "name"), options.getBoolean("reset", false)));
                } else {
                    one.putAll(KeepNewest.latency(required(options, "name"), options.containsKey("batch")
                            ? Long.valueOf(whole(options, "batch", -1)) : null));
                }
                answer.add(one);
                return answer;
            case "make_feed":
                Feeds.make(required(options, "name"), (StructType) DataType.fromJson(required(options, "schema")),
                        whole(options, "grace_ms", -1));
                answer.add(one);
                return answer;
            case "forget":
                one.put("forgotten", Holdings.forget(Holdings.key(whose(options, user), required(options, "name"))));
                answer.add(one);
                return answer;
            case "list":
                return list(user, false, false);
            case "free":
                return list(user, true, options.getBoolean("all", false) && owner(user));
            default:
                throw new IllegalArgumentException("SPARKSCOPE_UNKNOWN_CALL: sparkscope's jar (protocol "
                        + Holdings.PROTOCOL + ") has no call '" + call + "'");
        }
    }

    /** The server's owner: on a server that checks who calls, the one token that acts as no user of its own. */
    static boolean owner(String user) {
        return Identity.isAdmin(user);
    }

    /** The user whose holding a call names: the caller's own, or (for the server's owner) the `user` option's. */
    static String whose(CaseInsensitiveStringMap options, String caller) {
        String named = options.get("user");
        if (named == null || named.equals(caller)) {
            return caller;
        }
        if (!owner(caller)) {
            throw new SecurityException(Holdings.NOT_OWNER + ": only the server's owner (its own token) frees "
                    + "what another user keeps");
        }
        return named;
    }

    /**
     * The caller's holdings, described (and those of no known owner); `free`: only those that nothing uses, each
     * freed; `everyone` (the server's owner's free): every user's that nothing uses. The server's owner's listing
     * also gets one row of totals per other user, without names or sessions.
     */
    static List<Map<String, Object>> list(String user, boolean free, boolean everyone) {
        long now = System.currentTimeMillis();
        Set<String> open = Holdings.openSessions();
        String mine = Holdings.key(user, "");
        String anyone = Holdings.key(null, "");
        Map<String, Map<String, Object>> totals = new TreeMap<>();
        List<Map<String, Object>> rows = new ArrayList<>();
        for (Map.Entry<String, Function<Object[], Object>> entry : Holdings.all().entrySet()) {
            boolean yours = entry.getKey().startsWith(mine) || entry.getKey().startsWith(anyone);
            if (!yours && !everyone) {
                if (!free && owner(user)) {
                    total(totals, Holdings.ownerOfKey(entry.getKey()), entry.getValue(), now, open);
                }
                continue;
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> facts = (Map<String, Object>) entry.getValue().apply(new Object[] {"describe", now, open});
            facts.put("yours", yours);
            if (!yours) {
                facts.remove("session");  // the server's owner frees another user's, and never sees their session
            }
            if (!free) {
                rows.add(facts);
            } else if ("ended".equals(facts.get("state")) && Holdings.all().remove(entry.getKey(),
                    entry.getValue())) {
                entry.getValue().apply(new Object[] {"free"});
                rows.add(facts);
            }
        }
        rows.addAll(totals.values());
        return rows;
    }

    private static void total(Map<String, Map<String, Object>> totals, String user,
                              Function<Object[], Object> holding, long now, Set<String> open) {
        Map<String, Object> total = totals.computeIfAbsent(String.valueOf(user), who -> {
            Map<String, Object> made = new LinkedHashMap<>();
            made.put("kind", "totals");
            made.put("user", user);
            made.put("rings", 0L);
            made.put("feeds", 0L);
            made.put("bytes", 0L);
            made.put("in_use", 0L);
            made.put("yours", false);
            return made;
        });
        String kind = "ring".equals(holding.apply(new Object[] {"kind"})) ? "rings" : "feeds";
        total.put(kind, (Long) total.get(kind) + 1);
        total.put("bytes", (Long) total.get("bytes") + Holdings.bytesOf(holding));
        if (Holdings.endedAt(holding, now, open) < 0) {
            total.put("in_use", (Long) total.get("in_use") + 1);
        }
    }

    /** A whole number option, or one line saying it is not one. */
    public static long whole(CaseInsensitiveStringMap options, String key, long otherwise) {
        String value = options.get(key);
        if (value == null || value.isEmpty()) {
            return otherwise;
        }
        try {
            return Long.parseLong(value.trim());
        } catch (NumberFormatException notWhole) {
            throw new IllegalArgumentException("sparkscope's call: the option " + key + " is not a whole number: "
                    + value);
        }
    }

    static String required(CaseInsensitiveStringMap options, String key) {
        String value = options.get(key);
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException("sparkscope's call needs the option " + key);
        }
        return value;
    }

    static InternalRow[] answer(List<Map<String, Object>> objects) {
        Function1<Object, Object> toSpark = CatalystTypeConverters.createToCatalystConverter(ANSWER);
        InternalRow[] rows = new InternalRow[objects.size()];
        for (int i = 0; i < rows.length; i++) {
            rows[i] = (InternalRow) toSpark.apply(RowFactory.create(json(objects.get(i))));
        }
        return rows;
    }

    private static final ObjectMapper JSON = new ObjectMapper();  // Spark's own Jackson, on every 4.x server's class path

    /** JSON of maps, lists, strings, numbers, booleans and nulls, written by Jackson. */
    static String json(Object value) {
        try {
            return JSON.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("sparkscope could not write its answer as JSON", e);
        }
    }
}
