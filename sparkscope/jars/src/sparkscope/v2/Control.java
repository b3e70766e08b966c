/*
 * The client's calls into this jar: a read of this format whose rows are the answer, one JSON object a row.
 *
 *   spark.read.format("sparkscope.v2.Control").option("call", CALL).options(…).load().collect()
 *
 *   hello       protocol=N (the client's)         {"protocol", "caller": [user, session] or null, "sessions": whether
 *                                                   this server lists its sessions, "grace_ms": the server's}
 *   make_ring   name, query, schema (JSON), rows, seconds, replace, grace_ms (-1: the server's), scratch_checkpoint
 *                                                 {"scratch": the checkpoint folder the ring made, or null}
 *   make_feed   name, schema (JSON), grace_ms      {}
 *   forget      name                              {"forgotten": true or false}; refused to another user
 *   list                                          one row per holding of this server (every user's, each with
 *                                                   "yours"), then none
 *   free                                          the caller's holdings that nothing uses, freed now: one row each
 *
 * The call runs once, when the read is planned for execution: Spark Connect runs it as an operation of the caller's
 * session, which names the caller (Holdings.caller). An analysis of the read (its schema) runs nothing.
 */
package sparkscope.v2;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
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
import sparkscope.v2.feed.Feeds;
import sparkscope.v2.sink.KeepNewest;

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
        switch (call) {
            case "hello":
                String[] caller = Holdings.caller();
                one.put("protocol", Holdings.PROTOCOL);
                one.put("caller", caller == null ? null : List.of(caller[0], caller[1]));
                one.put("sessions", Holdings.openSessions() != null);
                one.put("grace_ms", Holdings.graceMs(-1));
                answer.add(one);
                return answer;
            case "make_ring":
                one.put("scratch", KeepNewest.make(required(options, "name"), options.getOrDefault("query", ""),
                        (StructType) DataType.fromJson(required(options, "schema")),
                        Integer.parseInt(options.getOrDefault("rows", "10000")),
                        options.containsKey("seconds") ? Double.parseDouble(options.get("seconds")) : null,
                        options.getBoolean("replace", false), options.getLong("grace_ms", -1),
                        options.getBoolean("scratch_checkpoint", false)));
                answer.add(one);
                return answer;
            case "make_feed":
                Feeds.make(required(options, "name"), (StructType) DataType.fromJson(required(options, "schema")),
                        options.getLong("grace_ms", -1));
                answer.add(one);
                return answer;
            case "forget":
                String name = required(options, "name");
                Function<Object[], Object> holding = Holdings.all().get(name);
                if (holding != null) {
                    Holdings.check(holding, true);
                }
                one.put("forgotten", holding != null && Holdings.forget(name));
                answer.add(one);
                return answer;
            case "list":
                return list(false);
            case "free":
                return list(true);
            default:
                throw new IllegalArgumentException("SPARKSCOPE_UNKNOWN_CALL: sparkscope's jar (protocol "
                        + Holdings.PROTOCOL + ") has no call '" + call + "'");
        }
    }

    /** Every holding, described; `free`: only the caller's that nothing uses, each freed. */
    static List<Map<String, Object>> list(boolean free) {
        long now = System.currentTimeMillis();
        Set<String> open = Holdings.openSessions();
        String[] caller = Holdings.caller();
        List<Map<String, Object>> rows = new ArrayList<>();
        for (Map.Entry<String, Function<Object[], Object>> entry : Holdings.all().entrySet()) {
            @SuppressWarnings("unchecked")
            Map<String, Object> facts = (Map<String, Object>) entry.getValue().apply(new Object[] {"describe", now, open});
            boolean yours = facts.get("user") == null || caller != null && caller[0].equals(facts.get("user"));
            facts.put("yours", yours);
            if (!free) {
                rows.add(facts);
            } else if (yours && "ended".equals(facts.get("state")) && Holdings.all().remove(entry.getKey(),
                    entry.getValue())) {
                entry.getValue().apply(new Object[] {"free"});
                rows.add(facts);
            }
        }
        return rows;
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

    /** JSON of maps, lists, strings, numbers, booleans and nulls. */
    static String json(Object value) {
        if (value == null) {
            return "null";
        }
        if (value instanceof Number || value instanceof Boolean) {
            return value.toString();
        }
        if (value instanceof Map) {
            List<String> members = new ArrayList<>();
            for (Map.Entry<?, ?> member : ((Map<?, ?>) value).entrySet()) {
                members.add(json(String.valueOf(member.getKey())) + ":" + json(member.getValue()));
            }
            return "{" + String.join(",", members) + "}";
        }
        if (value instanceof List) {
            List<String> items = new ArrayList<>();
            for (Object item : (List<?>) value) {
                items.add(json(item));
            }
            return "[" + String.join(",", items) + "]";
        }
        StringBuilder out = new StringBuilder("\"");
        for (char c : value.toString().toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
