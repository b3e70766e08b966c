/*
 * The rows a test feeds a stream, batch by batch (sparkscope.testing's memory source), kept in the driver's memory.
 * A feed is a holding (../Holdings.java): its name is its owner's, only its owner's sessions feed or read it, its
 * batches count towards the bytes its owner may keep (../Limits.java: a batch past them is refused), and it ends,
 * with no client, once neither its session is open nor a query that reads it runs, plus a grace period
 * (../Lifetime.java). A batch is
 * let go of as soon as every query that reads the feed has committed it, as Spark's MemoryStream.commit does: a
 * query that starts later reads the batches still kept.
 *
 * A feed is asked (besides what every holding answers): {"schema"} (its StructType), {"add", InternalRow[]} (one
 * more batch; how many there are now), {"batches"} (how many were added), {"rows", from, to} (the rows of batches
 * from+1 … to still kept, as InternalRow[]), {"attach", thread, queryId} (a query reads it),
 * {"commit", thread, batches} (that query has processed the first `batches`).
 */
package sparkscope.v3.feed;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.function.Function;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import sparkscope.v3.Holdings;
import sparkscope.v3.Lifetime;
import sparkscope.v3.Limits;

public final class Feeds {
    static final String GONE = "SPARKSCOPE_FEED_GONE: sparkscope's memory source is not on this server (it was "
            + "forgotten, its session ended, the server restarted, or it is another user's)";

    private Feeds() {
    }

    /** Make a feed for the caller (Control's make_feed); past a limit of the server's, one line says which. */
    public static void make(String name, StructType schema, long graceMs) {
        Limits limits = Limits.server();
        long grace = limits.graceMs(graceMs);
        String[] owner = Holdings.caller();
        Holdings.add(owner, name, "feed", limits, () -> new Feed(name, schema,
                new Lifetime(owner, System.currentTimeMillis(), grace, true), limits));
    }

    static String name(Map<String, String> options) {
        String name = new CaseInsensitiveStringMap(options).get("feed");
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("sparkscope's memory source needs the option feed");
        }
        return name;
    }

    /** The feed `name`, for this thread's caller (see Holdings.use). */
    static Function<Object[], Object> get(String name, boolean rows) {
        return Holdings.use(name, "feed", GONE, rows);
    }

    /** The batches of one feed, and how far each query that reads it has committed them. */
    static final class Feed implements Function<Object[], Object> {
        private final String name;
        private final StructType schema;
        private final Lifetime lifetime;
        private final Limits limits;
        private final List<InternalRow[]> batches = new ArrayList<>();
        private final List<Long> batchBytes = new ArrayList<>();
        private volatile long bytes = 0;  // what its batches take: read by other holdings' budgets without its lock
        private long dropped = 0;  // batches let go of, from the first: batch b is batches.get(b - dropped)
        private final Map<Thread, Long> committed = new WeakHashMap<>();  // each reading query's thread

        Feed(String name, StructType schema, Lifetime lifetime, Limits limits) {
            this.name = name;
            this.schema = schema;
            this.lifetime = lifetime;
            this.limits = limits;
        }

        /** What never waits for the feed's lock (another holding's budget asks for the bytes while it holds its own). */
        @Override
        @SuppressWarnings("unchecked")
        public Object apply(Object[] call) {
            switch ((String) call[0]) {
                case "kind":
                    return "feed";
                case "owner":
                    return lifetime.owner();
                case "bytes":
                    return bytes;
                case "ended":
                    return lifetime.endedAt((Long) call[1], (Set<String>) call[2]);
                case "schema":
                    return schema;
                default:
                    return locked(call);
            }
        }

        @SuppressWarnings("unchecked")
        private synchronized Object locked(Object[] call) {
            switch ((String) call[0]) {
                case "add":
                    return add((InternalRow[]) call[1]);
                case "batches":
                    return dropped + batches.size();
                case "rows":
                    return rows((Long) call[1], (Long) call[2]);
                case "attach":
                    lifetime.attach((Thread) call[1], (String) call[2]);
                    committed.putIfAbsent((Thread) call[1], 0L);
                    return null;
                case "commit":
                    committed.put((Thread) call[1], (Long) call[2]);
                    dropCommitted();
                    return null;
                case "sweep":
                    return lifetime.over((Long) call[1], (Set<String>) call[2]);
                case "describe":
                    return describe((Long) call[1], (Set<String>) call[2]);
                case "free":
                    batches.clear();
                    batchBytes.clear();
                    bytes = 0;
                    return null;
                default:
                    throw new IllegalArgumentException("a feed does not " + call[0]);
            }
        }

        /** One more batch, unless it takes its owner past the bytes it may keep. */
        private long add(InternalRow[] rows) {
            long taken = 0;
            for (InternalRow row : rows) {
                taken += 64 + (row instanceof UnsafeRow ? ((UnsafeRow) row).getSizeInBytes()
                        : org.apache.spark.util.SizeEstimator.estimate(row));
            }
            if (bytes + taken > limits.roomFor(lifetime.user(), this, bytes + taken)) {
                throw limits.tooManyBytes(lifetime.user(), this, taken);
            }
            batches.add(rows);
            batchBytes.add(taken);
            bytes += taken;
            return dropped + batches.size();
        }

        private InternalRow[] rows(long from, long to) {
            List<InternalRow> rows = new ArrayList<>();
            long end = Math.min(to, dropped + batches.size());
            for (long batch = Math.max(dropped, from); batch < end; batch++) {
                for (InternalRow row : batches.get((int) (batch - dropped))) {
                    rows.add(row);
                }
            }
            return rows.toArray(new InternalRow[0]);
        }

        /** Let go of the batches every running query that reads the feed has committed. */
        private void dropCommitted() {
            long lowest = Long.MAX_VALUE;
            for (Map.Entry<Thread, Long> reader : committed.entrySet()) {
                if (reader.getKey().isAlive()) {
                    lowest = Math.min(lowest, reader.getValue());
                }
            }
            while (lowest != Long.MAX_VALUE && dropped < lowest && !batches.isEmpty()) {
                batches.remove(0);
                bytes -= batchBytes.remove(0);
                dropped++;
            }
        }

        private Map<String, Object> describe(long now, Set<String> open) {
            Map<String, Object> facts = lifetime.describe(now, open);
            facts.put("kind", "feed");
            facts.put("name", name);
            facts.put("query", "");
            long rows = 0;
            for (InternalRow[] batch : batches) {
                rows += batch.length;
            }
            facts.put("rows", rows);
            facts.put("bytes", bytes);
            facts.put("batches", dropped + batches.size());
            facts.put("batches_dropped", dropped);
            return facts;
        }
    }
}
