/*
 * sparkscope's default sink: the newest rows of a stream, kept in the driver's memory, at most a number of them
 * (and, if asked, only those of the last seconds). A DataSource V2 table: written by a streaming query, read by
 * batch queries, in the sessions of the user that made it.
 *
 * Spark's memory sink keeps every row a query wrote, so it grows until the driver runs out of memory. This sink
 * keeps a bounded ring per query run, and the bound holds in every batch: each writer task keeps only its
 * partition's newest rows, as many as the ring keeps (NewestRows.java), and sends the driver only those. So one
 * batch costs the driver at most the partitions times the ring's rows, however many rows the batch had. The
 * driver's commit puts the batch in front of the ring and drops what falls off its end, and a read is a local scan
 * of the driver's rows (no task). No Python runs on the server for it.
 *
 * A ring is a holding (../Holdings.java): it has an owner (the user that made it: its name is that user's, and only
 * that user's sessions find it), limits the server enforces (../Limits.java: its rows, its grace period, and the
 * bytes its owner keeps, in every batch), and an end that needs no client (../Lifetime.java): its query's end, plus
 * a grace period in which :peek and :tail of a stopped query still work; then the sweeper frees it with its scratch
 * checkpoint. Control.java makes it (make_ring) and drops it (forget); this class reads and writes it:
 *
 *   spark.read.format(this).option("ring", NAME).load()                    the kept rows, newest batch first, with
 *                                                                           one more column, __sparkscope_batch
 *   df.writeStream.format(this).option("ring", NAME).start()               a query writing into it
 *   … .option("schema", JSON).options(what make_ring takes).start()          a query that makes its ring (and its
 *                                                                           view) as it starts: one call less
 */
package sparkscope.v3.sink;

import java.io.File;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.LongSupplier;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownLimit;
import org.apache.spark.sql.connector.read.streaming.ReportsSinkMetrics;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.execution.streaming.sources.PackedRowCommitMessage;
import org.apache.spark.sql.internal.connector.SupportsStreamingUpdateAsAppend;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.MetadataBuilder;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.util.CollectionAccumulator;

import sparkscope.v3.Control;
import sparkscope.v3.Holdings;
import sparkscope.v3.Lifetime;
import sparkscope.v3.Limits;

public final class KeepNewest implements TableProvider {
    public static final String BATCH_COLUMN = "__sparkscope_batch";
    static final int TRIM_EVERY = 64;
    public static final String GONE = "SPARKSCOPE_RING_GONE: sparkscope's sink keeps no such rows on this server "
            + "(their query ended longer ago than its grace period, they were dropped, the server restarted, or they "
            + "are another user's)";

    /**
     * Make a ring for the caller (Control's make_ring): the folder of its scratch checkpoint when asked for one, else
     * null. Past a limit of the server's, nothing is made (no folder, no hook): one line says which. `view` (or
     * null): the temporary view of the caller's session that reads the ring's rows without their batch, made here,
     * in the same call (one round trip less for every start).
     */
    public static String make(String name, String query, StructType schema, long rows, Double seconds,
                              boolean replace, long graceMs, boolean scratchCheckpoint, String view) {
        Limits limits = Limits.server();
        int keep = limits.rows(rows);
        long grace = limits.graceMs(graceMs);
        String[] owner = Holdings.caller();
        Function<Object[], Object> kept = Holdings.add(owner, name, "ring", limits, () -> new Ring(name, query,
                schema, keep, seconds, replace, System::currentTimeMillis,
                scratchCheckpoint ? Scratch.make(name) : null,
                new Lifetime(owner, System.currentTimeMillis(), grace, false), limits));
        if (view != null && !view.isEmpty()) {
            org.apache.spark.sql.SparkSession.active().read().format(KeepNewest.class.getName()).option("ring", name)
                    .load().drop(BATCH_COLUMN, Latency.EVENT_COLUMN).createOrReplaceTempView(view);
        }
        return (String) kept.apply(new Object[] {"scratch"});
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        String name = required(options, "ring");
        if (options.containsKey("schema")) {  // a start that makes its ring as it begins: no call of its own first
            make(name, options.getOrDefault("query", ""), (StructType) DataType.fromJson(options.get("schema")),
                    Control.whole(options, "rows", 10000), options.containsKey("seconds")
                    ? Double.parseDouble(options.get("seconds")) : null, options.getBoolean("replace", false),
                    Control.whole(options, "grace_ms", -1), false, options.get("view"));
        }
        return (StructType) ring(name, false).apply(new Object[] {"schema"});
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        String name = required(new CaseInsensitiveStringMap(properties), "ring");
        return new RingTable(name, schema, ring(name, false));
    }

    static String required(CaseInsensitiveStringMap options, String key) {
        String value = options.get(key);
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException("sparkscope's sink needs the option " + key);
        }
        return value;
    }

    /** The end-to-end latency of the caller's ring `name` (Latency.java): of `batch`, or the newest measured. */
    @SuppressWarnings("unchecked")
    public static Map<String, String> latency(String name, Long batch) {
        return (Map<String, String>) ring(name, false).apply(new Object[] {"latency", batch});
    }

    /** The latency of every record the caller's ring `name` measured since its query started, or the last reset. */
    @SuppressWarnings("unchecked")
    public static Map<String, String> totalLatency(String name, boolean reset) {
        return (Map<String, String>) ring(name, false).apply(new Object[] {"total_latency", reset});
    }

    /** The ring `name`, for this thread's caller (see Holdings.use). */
    static Function<Object[], Object> ring(String name, boolean rows) {
        return Holdings.use(name, "ring", GONE, rows);
    }

    /**
     * What one run of one query keeps: its newest batches, newest first, at most `rows` rows in all. Asked through
     * apply (Holdings.java lists the calls every holding answers): {"schema"} (the read schema), {"rows"}, {"key"}
     * (its key in the registry), {"scratch"}, {"attach", thread, queryId}, {"budget"} (the bytes its batch may take
     * now), {"commit", batch, List<InternalRow>, received}, {"snapshot", batch, limit}, {"event_index"} (the column
     * of the rows' Kafka timestamps, or -1), {"measured", Latency} (a committed batch's), {"latency", batch or
     * null} (a batch's figures, or the newest).
     */
    static final class Ring implements Function<Object[], Object> {
        final String name;
        final String query;
        final StructType schema;
        final StructType readSchema;
        final int rows;
        final Double seconds;
        final boolean replace;
        final Lifetime lifetime;
        private final Limits limits;
        private final ArrayDeque<Chunk> chunks = new ArrayDeque<>();
        private final LongSupplier clock;  // milliseconds
        private final Scratch scratch;  // the checkpoint folder this ring made for its query, or null
        private long lastReceived = -1;  // the rows the driver received in the last batch
        private volatile long bytes = 0;  // what its chunks take: read by other rings' budgets without its lock
        private String trimmedBy = null;  // the byte limit that last made it keep fewer rows than it could
        private int arrivedSinceTrim = 0;  // rows of a real-time query since the bounds were last applied
        private volatile boolean reading = false;  // a real-time query's writers run (RingRows.open)
        final int eventIndex;  // the column of the rows' Kafka timestamps (Latency.EVENT_COLUMN), or -1
        private Latency measuring = null;  // a real-time batch's latency, as its rows arrive
        private Latency measured = null;  // the newest batch measured whole
        private Latency total = new Latency(-1);  // every batch's since the query started (or the last reset)

        Ring(String name, String query, StructType schema, int rows, Double seconds, boolean replace,
             LongSupplier clock, Scratch scratch, Lifetime lifetime, Limits limits) {
            this.name = name;
            this.query = query;
            this.clock = clock;
            this.schema = schema;
            this.scratch = scratch;
            this.lifetime = lifetime;
            this.limits = limits;
            this.readSchema = schema.add(new StructField(BATCH_COLUMN, DataTypes.LongType, false, Metadata.empty()));
            this.rows = Math.max(0, rows);
            this.seconds = seconds;
            this.replace = replace;
            this.eventIndex = java.util.Arrays.asList(schema.fieldNames()).indexOf(Latency.EVENT_COLUMN);
        }

        @Override
        @SuppressWarnings("unchecked")
        public Object apply(Object[] call) {
            switch ((String) call[0]) {
                case "kind":
                    return "ring";
                case "owner":
                    return lifetime.owner();
                case "key":
                    return Holdings.key(lifetime.user(), name);
                case "bytes":
                    return bytes;
                case "budget":
                    return limits.bytesFor(lifetime.user(), this);
                case "ended":
                    return lifetime.endedAt((Long) call[1], (Set<String>) call[2]);
                case "schema":
                    return readSchema;
                case "rows":
                    return rows;
                case "scratch":
                    return scratch == null ? null : scratch.folder.toString();
                case "attach":
                    lifetime.attach((Thread) call[1], (String) call[2]);
                    return null;
                case "commit":
                    commit((Long) call[1], (List<InternalRow>) call[2], (Long) call[3]);
                    return null;
                case "reading":  // a real-time query's writer opened: its batch runs, from offsets fixed
                    reading = true;
                    return null;
                case "arrived":
                    arrived((Long) call[1], (InternalRow) call[2]);
                    return null;
                case "snapshot":
                    return snapshot((Long) call[1], (Integer) call[2]);
                case "event_index":
                    return eventIndex;
                case "measured":
                    measured((Latency) call[1]);
                    return null;
                case "latency":
                    return latency((Long) call[1]);
                case "total_latency":
                    return totalLatency((Boolean) call[1]);
                case "sweep":
                    return lifetime.over((Long) call[1], (Set<String>) call[2]);
                case "describe":
                    return describe((Long) call[1], (Set<String>) call[2]);
                case "free":
                    free();
                    return null;
                default:
                    throw new IllegalArgumentException("a ring does not " + call[0]);
            }
        }

        /** `received`: how many rows the writers sent the driver for this batch (their bound at work). */
        synchronized void commit(long batch, List<InternalRow> batchRows, long received) {
            long now = clock.getAsLong();
            lastReceived = received;
            if (replace) {
                chunks.clear();
            } else {
                chunks.removeIf(chunk -> chunk.batch == batch);  // a batch run again replaces its first run
            }
            if (!batchRows.isEmpty() || replace) {
                chunks.addFirst(new Chunk(batch, now, batchRows));
            }
            trim(now);
            long allowed = limits.roomFor(lifetime.user(), this, bytes);
            if (bytes > allowed) {  // its owner's bytes, or everyone's: the newest rows that fit stay
                trimmedBy = limits.tighterBytes(lifetime.user(), this);
                keepBytes(allowed);
            }
        }

        /**
         * One row of a real-time query (RingRows.java), as it arrives: real-time mode runs a batch for minutes and
         * commits it at its end, so its rows join the batch's chunk one by one. The bounds hold as in a commit, once
         * every TRIM_EVERY rows: the ring exceeds its rows by fewer than that many at any time.
         */
        synchronized void arrived(long batch, InternalRow row) {
            long now = clock.getAsLong();
            if (eventIndex >= 0 && !row.isNullAt(eventIndex)) {
                if (measuring == null || measuring.batch != batch) {
                    if (measuring != null && measuring.records() > 0) {
                        measured = measuring;
                    }
                    measuring = new Latency(batch);
                }
                measuring.add(now - row.getLong(eventIndex) / 1000, 1.0, 1);
                total.add(now - row.getLong(eventIndex) / 1000, 1.0, 1);
            }
            Chunk newest = chunks.peekFirst();
            if (newest == null || newest.batch != batch) {
                newest = new Chunk(batch, now, new ArrayList<>());
                chunks.addFirst(newest);
            }
            newest.add(row);
            bytes += Chunk.bytesOf(row);
            if (++arrivedSinceTrim >= TRIM_EVERY || bytes > limits.bytesFor(lifetime.user(), this)) {
                arrivedSinceTrim = 0;
                trim(now);
                long allowed = limits.roomFor(lifetime.user(), this, bytes);
                if (bytes > allowed) {
                    trimmedBy = limits.tighterBytes(lifetime.user(), this);
                    keepBytes(allowed);
                }
            }
        }

        synchronized void measured(Latency latency) {
            if (latency.records() > 0) {
                measured = latency;
                total.merge(latency);
            }
        }

        /** The figures of every record since the query started, or since the last `reset` (which starts anew). */
        synchronized Map<String, String> totalLatency(boolean reset) {
            Map<String, String> figures = total.metrics();
            figures.remove("latencyBatch");
            if (reset) {
                total = new Latency(-1);
            }
            return figures;
        }

        /** The figures of batch `batch` (the newest measured if null): empty when it has none. */
        synchronized Map<String, String> latency(Long batch) {
            for (Latency candidate : new Latency[] {measuring, measured}) {
                if (candidate != null && candidate.records() > 0 && (batch == null || candidate.batch == batch)) {
                    return candidate.metrics();
                }
            }
            return new java.util.LinkedHashMap<>();
        }

        private void trim(long now) {
            int kept = 0;
            long taken = 0;
            Iterator<Chunk> each = chunks.iterator();
            while (each.hasNext()) {
                Chunk chunk = each.next();
                if (kept >= rows || expired(chunk, now)) {
                    each.remove();
                    continue;
                }
                if (kept + chunk.rows.size() > rows) {  // the oldest chunk kept keeps its newest rows that fit
                    chunk.keepNewest(rows - kept);
                }
                kept += chunk.rows.size();
                taken += chunk.bytes;
            }
            bytes = taken;
        }

        /** Drop the oldest rows until the ring takes at most `allowed` bytes. */
        private void keepBytes(long allowed) {
            while (bytes > allowed && !chunks.isEmpty()) {
                Chunk oldest = chunks.peekLast();
                long before = oldest.bytes;
                if (before <= bytes - allowed) {
                    chunks.removeLast();
                    bytes -= before;
                } else {
                    oldest.keepBytes(before - (bytes - allowed));
                    bytes -= before - oldest.bytes;
                }
            }
        }

        private boolean expired(Chunk chunk, long now) {
            return seconds != null && now - chunk.arrived > seconds * 1000;
        }

        /**
         * The kept rows, newest batch first, each with its batch in the last column: only those of `batch` unless
         * it is null, at most `limit` of them.
         */
        synchronized InternalRow[] snapshot(Long batch, int limit) {
            trim(clock.getAsLong());
            List<InternalRow> out = new ArrayList<>();
            StructField[] fields = schema.fields();
            for (Chunk chunk : chunks) {
                if (batch != null && chunk.batch != batch) {
                    continue;
                }
                for (InternalRow row : chunk.rows) {
                    if (out.size() >= limit) {
                        return out.toArray(new InternalRow[0]);
                    }
                    Object[] values = new Object[fields.length + 1];
                    for (int i = 0; i < fields.length; i++) {
                        values[i] = row.isNullAt(i) ? null : row.get(i, fields[i].dataType());
                    }
                    values[fields.length] = chunk.batch;
                    out.add(new GenericInternalRow(values));
                }
            }
            return out.toArray(new InternalRow[0]);
        }

        private synchronized Map<String, Object> describe(long now, Set<String> open) {
            trim(now);
            Map<String, Object> facts = lifetime.describe(now, open);
            facts.put("kind", "ring");
            facts.put("name", name);
            facts.put("query", query);
            long kept = 0;
            for (Chunk chunk : chunks) {
                kept += chunk.rows.size();
            }
            facts.put("rows", kept);
            facts.put("bytes", bytes);
            facts.put("trimmed_by", trimmedBy);
            facts.put("last_batch_received", lastReceived < 0 ? null : lastReceived);
            facts.put("reading", reading);
            facts.put("latency", latency(null));
            facts.put("keep_rows", (long) rows);
            facts.put("keep_seconds", seconds);
            facts.put("scratch", scratch == null ? null : scratch.folder.toString());
            return facts;
        }

        private synchronized void free() {
            chunks.clear();
            bytes = 0;
            if (scratch != null) {
                scratch.delete();
            }
        }
    }

    /**
     * A checkpoint folder a ring made for its query in the JVM's temporary folder, by Spark's own means: deleted, with
     * what Spark wrote in it, when the ring ends or the JVM exits (Spark's shutdown hook), whichever comes first.
     * Only this folder is ever deleted, and a link inside it is removed, never followed (Spark's deleteRecursively).
     * (Spark gives a temporary checkpoint to its own sinks only.)
     */
    static final class Scratch {
        final File folder;

        private Scratch(File folder) {
            this.folder = folder;
        }

        static Scratch make(String ring) {
            return new Scratch(org.apache.spark.util.Utils.createTempDir(System.getProperty("java.io.tmpdir"),
                    "sparkscope-checkpoint-" + ring.replaceAll("[^A-Za-z0-9_.-]", "_")));
        }

        void delete() {
            org.apache.spark.util.ShutdownHookManager.removeShutdownDeleteDir(folder);
            try {
                org.apache.spark.util.Utils.deleteRecursively(folder);
            } catch (RuntimeException left) {
                // what is left stays in the temporary folder; the query already ended
            }
        }
    }

    /** One batch's kept rows (copies of the writers' rows), with what they take of the heap. */
    static final class Chunk {
        final long batch;
        final long arrived;
        List<InternalRow> rows;
        long bytes;

        Chunk(long batch, long arrived, List<InternalRow> rows) {
            this.batch = batch;
            this.arrived = arrived;
            this.rows = rows;
            this.bytes = bytesOf(rows);
        }

        void add(InternalRow row) {
            rows.add(row);
            bytes += bytesOf(row);
        }

        void keepNewest(int count) {
            rows = new ArrayList<>(rows.subList(rows.size() - count, rows.size()));
            bytes = bytesOf(rows);
        }

        /** Keep the newest rows that take at most `allowed` bytes. */
        void keepBytes(long allowed) {
            long taken = 0;
            int first = rows.size();
            while (first > 0 && taken + bytesOf(rows.get(first - 1)) <= allowed) {
                taken += bytesOf(rows.get(--first));
            }
            rows = new ArrayList<>(rows.subList(first, rows.size()));
            bytes = taken;
        }

        static long bytesOf(List<InternalRow> rows) {
            long bytes = 0;
            for (InternalRow row : rows) {
                bytes += bytesOf(row);
            }
            return bytes;
        }

        /** The heap a row takes: its bytes and about 64 more for the row object and its array. */
        static long bytesOf(InternalRow row) {
            return 64 + (row instanceof UnsafeRow ? ((UnsafeRow) row).getSizeInBytes()
                    : org.apache.spark.util.SizeEstimator.estimate(row));
        }
    }

    static final class RingTable implements Table, SupportsWrite, SupportsRead, ReportsSinkMetrics {
        private final String name;
        private final StructType schema;
        private final Function<Object[], Object> ring;

        RingTable(String name, StructType schema, Function<Object[], Object> ring) {
            this.name = name;
            this.schema = schema;
            this.ring = ring;
        }

        /** The newest batch's latency (Latency.java), in the query's progress: its sink's metrics. */
        @Override
        @SuppressWarnings("unchecked")
        public Map<String, String> metrics() {
            return (Map<String, String>) ring.apply(new Object[] {"latency", null});
        }

        @Override
        public String name() {
            return "sparkscope-keep-newest[" + name + "]";
        }

        @Override
        public String toString() {  // the sink's description in a query's progress
            return name();
        }

        @Override
        @SuppressWarnings("deprecation")
        public StructType schema() {
            return schema;
        }

        @Override
        public Set<TableCapability> capabilities() {
            return EnumSet.of(TableCapability.STREAMING_WRITE, TableCapability.BATCH_READ,
                    TableCapability.TRUNCATE);
        }

        /** Planned in the query's own thread, at every batch: the ring lives while that thread does. */
        @Override
        public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
            Function<Object[], Object> ring = ring(name, false);
            ring.apply(new Object[] {"attach", Thread.currentThread(), info.queryId()});
            return new RingWriteBuilder(ring, info.schema());
        }

        @Override
        public RingScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
            return new RingScanBuilder(ring(name, true), schema);
        }
    }

    static final class RingWriteBuilder implements WriteBuilder, SupportsTruncate, SupportsStreamingUpdateAsAppend {
        private final Function<Object[], Object> ring;
        private final StructType schema;

        RingWriteBuilder(Function<Object[], Object> ring, StructType schema) {
            this.ring = ring;
            this.schema = schema;
        }

        @Override
        public WriteBuilder truncate() {
            return this;  // complete mode: the ring replaces its rows at each batch (its "replace" option)
        }

        @Override
        public Write build() {
            return new Write() {
                @Override
                public StreamingWrite toStreaming() {
                    return new RingWrite(ring);
                }
            };
        }
    }

    /**
     * One batch's write into a ring. Its writers keep, each, the newest rows of their partition, no more than the
     * ring keeps and no more than their share of the bytes the ring's owner may still keep; its commit hands the
     * ring the batch only while the registry still holds that very ring under its key (the same kind and owner: a
     * ring dropped, or a name made again since, gets nothing).
     */
    static final class RingWrite implements StreamingWrite {
        private final Function<Object[], Object> ring;
        private final String key;
        private final int rows;
        private final int eventIndex;
        private CollectionAccumulator<long[]> events;  // this batch's tasks' samples of their event times

        RingWrite(Function<Object[], Object> ring) {
            this.ring = ring;
            this.key = (String) ring.apply(new Object[] {"key"});
            this.rows = (Integer) ring.apply(new Object[] {"rows"});
            this.eventIndex = (Integer) ring.apply(new Object[] {"event_index"});
        }

        @Override
        public StreamingDataWriterFactory createStreamingWriterFactory(PhysicalWriteInfo info) {
            long budget = (Long) ring.apply(new Object[] {"budget"});
            if (eventIndex >= 0) {  // unnamed: not shown in the Spark UI; the context cleaner frees it with this write
                events = new CollectionAccumulator<>();
                org.apache.spark.sql.SparkSession.active().sparkContext().register(events);
            }
            return new NewestRows(rows, Math.max(0, budget / Math.max(1, info.numPartitions())), eventIndex, events);
        }

        /** Every record's latency at this commit, from the tasks' samples of their event times. */
        private Latency measure(long epochId, long now) {
            Latency latency = new Latency(epochId);
            for (long[] sample : events.value()) {
                int taken = sample.length - 1;
                double weight = (double) sample[0] / Math.max(1, taken);
                for (int i = 1; i <= taken; i++) {
                    latency.add(now - sample[i] / 1000, weight, 0);
                }
                latency.counted(sample[0]);
            }
            return latency;
        }

        @Override
        public boolean useCommitCoordinator() {
            return false;
        }

        @Override
        public void commit(long epochId, WriterCommitMessage[] messages) {
            List<InternalRow[]> partitions = new ArrayList<>();
            long received = 0;
            for (WriterCommitMessage message : messages) {
                if (message instanceof PackedRowCommitMessage) {
                    partitions.add(((PackedRowCommitMessage) message).rows());
                    received += ((PackedRowCommitMessage) message).rows().length;
                }
            }
            if (Holdings.all().get(key) == ring) {  // dropped while the query runs: its rows are not wanted any more
                ring.apply(new Object[] {"commit", epochId, newest(partitions, rows), received});
                if (events != null) {
                    ring.apply(new Object[] {"measured", measure(epochId, System.currentTimeMillis())});
                }
            }
        }

        /** At most `rows` of the batch's rows, the newest of each partition, as many from each as fit in turn. */
        static List<InternalRow> newest(List<InternalRow[]> partitions, int rows) {
            int[] take = new int[partitions.size()];
            int taken = 0;
            boolean more = true;
            while (taken < rows && more) {
                more = false;
                for (int i = 0; i < take.length && taken < rows; i++) {
                    if (take[i] < partitions.get(i).length) {
                        take[i]++;
                        taken++;
                        more = true;
                    }
                }
            }
            List<InternalRow> kept = new ArrayList<>(taken);
            for (int i = 0; i < take.length; i++) {
                InternalRow[] partition = partitions.get(i);
                for (int j = partition.length - take[i]; j < partition.length; j++) {
                    kept.add(partition[j]);
                }
            }
            return kept;
        }

        @Override
        public void abort(long epochId, WriterCommitMessage[] messages) {
            // nothing was kept: a batch's rows reach the ring only in its commit
        }
    }

    /**
     * A read of a ring. A limit (a peek's 20 rows) and an equality on the batch column (a tail's batch) are applied
     * as the rows are taken, so a read converts no more rows than it returns; Spark applies both again after it.
     */
    static final class RingScanBuilder implements SupportsPushDownLimit, SupportsPushDownFilters {
        private final Function<Object[], Object> ring;
        private final StructType schema;
        private Long batch;
        private int limit = Integer.MAX_VALUE;
        private Filter[] pushed = new Filter[0];

        RingScanBuilder(Function<Object[], Object> ring, StructType schema) {
            this.ring = ring;
            this.schema = schema;
        }

        @Override
        public boolean pushLimit(int limit) {
            this.limit = Math.min(this.limit, limit);
            return true;
        }

        @Override
        public boolean isPartiallyPushed() {
            return true;
        }

        @Override
        public Filter[] pushFilters(Filter[] filters) {
            List<Filter> used = new ArrayList<>();
            for (Filter filter : filters) {
                if (filter instanceof EqualTo && BATCH_COLUMN.equals(((EqualTo) filter).attribute())
                        && ((EqualTo) filter).value() instanceof Number) {
                    batch = ((Number) ((EqualTo) filter).value()).longValue();
                    used.add(filter);
                }
            }
            pushed = used.toArray(new Filter[0]);
            return filters;  // every filter is evaluated again after the scan
        }

        @Override
        public Filter[] pushedFilters() {
            return pushed;
        }

        @Override
        public Scan build() {
            return new RingScan((InternalRow[]) ring.apply(new Object[] {"snapshot", batch, limit}), schema);
        }
    }

    /** A read: the rows of the ring at the moment it was planned, from the driver (no task runs it). */
    static final class RingScan implements LocalScan {
        private final InternalRow[] rows;
        private final StructType schema;

        RingScan(InternalRow[] rows, StructType schema) {
            this.rows = rows;
            this.schema = schema;
        }

        @Override
        public InternalRow[] rows() {
            return rows;
        }

        @Override
        public StructType readSchema() {
            return schema;
        }
    }
}
