/*
 * The rows a test feeds a stream, batch by batch (sparkscope.testing's memory source): kept in the driver's memory,
 * by name, in a registry every session of the server shares (the JVM's system properties, as the bounded sink's
 * rings: a jar sent as a session artifact is loaded once per session). A feed is used through a JDK interface
 * (Function), never as this class, for the same reason.
 *
 * A feed is asked: {"schema"} (its StructType), {"add", List<InternalRow>} (one more batch; its number),
 * {"batches"} (how many), {"rows", from, to} (the rows of batches from+1 … to, as InternalRow[]).
 */
package sparkscope.feed;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

public final class Feeds {
    static final String REGISTRY = "sparkscope.feed.feeds";

    private Feeds() {
    }

    @SuppressWarnings("unchecked")
    static Map<String, Function<Object[], Object>> all() {
        Properties properties = System.getProperties();
        synchronized (properties) {
            Object registry = properties.get(REGISTRY);
            if (registry == null) {
                registry = new ConcurrentHashMap<String, Function<Object[], Object>>();
                properties.put(REGISTRY, registry);
            }
            return (Map<String, Function<Object[], Object>>) registry;
        }
    }

    static String name(Map<String, String> options) {
        String name = new CaseInsensitiveStringMap(options).get("feed");
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("sparkscope's memory source needs the option feed");
        }
        return name;
    }

    static Function<Object[], Object> get(String name) {
        Function<Object[], Object> feed = all().get(name);
        if (feed == null) {
            throw new IllegalStateException("SPARKSCOPE_FEED_GONE: sparkscope's memory source " + name + " is not on "
                    + "this server (its session ended, or the server restarted)");
        }
        return feed;
    }

    /** The batches of one feed. */
    static final class Feed implements Function<Object[], Object> {
        private final StructType schema;
        private final List<InternalRow[]> batches = new ArrayList<>();

        Feed(StructType schema) {
            this.schema = schema;
        }

        @Override
        @SuppressWarnings("unchecked")
        public synchronized Object apply(Object[] call) {
            switch ((String) call[0]) {
                case "schema":
                    return schema;
                case "add":
                    batches.add(((List<InternalRow>) call[1]).toArray(new InternalRow[0]));
                    return (long) batches.size();
                case "batches":
                    return (long) batches.size();
                case "rows":
                    List<InternalRow> rows = new ArrayList<>();
                    long to = Math.min((Long) call[2], batches.size());
                    for (long batch = Math.max(0, (Long) call[1]); batch < to; batch++) {
                        for (InternalRow row : batches.get((int) batch)) {
                            rows.add(row);
                        }
                    }
                    return rows.toArray(new InternalRow[0]);
                default:
                    throw new IllegalArgumentException("a feed does not " + call[0]);
            }
        }
    }
}
