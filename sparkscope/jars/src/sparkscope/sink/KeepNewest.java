/*
 * sparkscope's default sink: the newest rows of a stream, kept in the driver's memory, at most a number of them
 * (and, if asked, only those of the last seconds). A DataSource V2 table: written by a streaming query, read by
 * batch queries, in any session of the server that loaded this class.
 *
 * Spark's memory sink keeps every row a query wrote, so it grows until the driver runs out of memory. This sink
 * keeps a bounded ring per query run. Its writer tasks are the memory sink's own (Spark's MemoryWriterFactory:
 * they send a batch's rows to the driver in their commit messages), so no class of this jar runs on an executor:
 * a server that got this jar as a session artifact runs it too, whose streaming tasks do not see the session's
 * jars. The driver's commit puts the batch in front of the ring and drops what falls off its end, and a read is a
 * local scan of the driver's rows (no task either). No Python runs on the server for it.
 *
 * Options (the Python client sets them, see sparkscope/client/queries/bounded_sink.py):
 *   ring     the ring's name, unique to one run of one query (required)
 *   schema   the query's schema as JSON: given at the start of the query, it makes the ring (a read needs none)
 *   rows     how many rows the ring keeps (10000)
 *   seconds  keep only the rows of the last that many seconds (none)
 *   replace  "true" for complete mode: each batch is the whole result
 *   forget   "true" on a read: the ring is dropped, and the read gives no rows
 *   scratch_checkpoint  "true" with schema: the ring makes a checkpoint folder for its query in the server's
 *            temporary folder, as Spark makes one for a memory sink (a sink of a class of its own gets none), and
 *            names it in its batch column's metadata (CHECKPOINT_KEY); the folder goes when the ring is forgotten,
 *            or when the JVM exits. A server with spark.sql.streaming.checkpointLocation does not need it.
 *
 * A read gives the kept rows, newest batch first, with one more column, __sparkscope_batch: the batch that wrote
 * each row, so that a client can read one batch's rows.
 */
package sparkscope.sink;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Comparator;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.stream.Stream;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.CatalystTypeConverters;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownLimit;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.execution.streaming.sources.MemoryWriterCommitMessage;
import org.apache.spark.sql.execution.streaming.sources.MemoryWriterFactory;
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

import scala.Function1;
import scala.jdk.javaapi.CollectionConverters;

public final class KeepNewest implements TableProvider {
    public static final String BATCH_COLUMN = "__sparkscope_batch";
    static final int DEFAULT_ROWS = 10000;
    /** The batch column's metadata key that names a ring's scratch checkpoint (option scratch_checkpoint). */
    public static final String CHECKPOINT_KEY = "sparkscope.checkpoint";

    /**
     * Every ring of this server, by name, kept in the JVM's system properties: a server that got this jar as a session
     * artifact loads this class once per session, and each session must see the rings of the others (a second
     * REPL's :peek). So a ring is used through a JDK interface (Function), never as this class's Ring.
     */
    static final String REGISTRY = "sparkscope.sink.rings";

    @SuppressWarnings("unchecked")
    static Map<String, Function<Object[], Object>> rings() {
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

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        String name = required(options, "ring");
        if (options.getBoolean("forget", false)) {
            Function<Object[], Object> forgotten = rings().remove(name);
            if (forgotten != null) {
                forgotten.apply(new Object[] {"forget"});
            }
            return new StructType();
        }
        String schema = options.get("schema");
        if (schema != null) {  // the start of a query: its ring, made once
            StructType data = (StructType) DataType.fromJson(schema);
            rings().computeIfAbsent(name, key -> new Ring(data, options.getInt("rows", DEFAULT_ROWS),
                    options.containsKey("seconds") ? Double.parseDouble(options.get("seconds")) : null,
                    options.getBoolean("replace", false),
                    options.getBoolean("scratch_checkpoint", false) ? Scratch.make(name) : null));
        }
        return (StructType) ring(name).apply(new Object[] {"schema"});
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new RingTable(required(new CaseInsensitiveStringMap(properties), "ring"), schema);
    }

    static String required(CaseInsensitiveStringMap options, String key) {
        String value = options.get(key);
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException("sparkscope's sink needs the option " + key);
        }
        return value;
    }

    static Function<Object[], Object> ring(String name) {
        Function<Object[], Object> ring = rings().get(name);
        if (ring == null) {
            throw new IllegalStateException("SPARKSCOPE_RING_GONE: sparkscope's sink keeps no rows named " + name
                    + " on this server (the server restarted, or the rows were dropped)");
        }
        return ring;
    }

    /**
     * What one run of one query keeps: its newest batches, newest first, at most `rows` rows in all. Asked through
     * apply: {"schema"} (the read schema), {"rows"}, {"commit", batch, rows}, {"snapshot"}, {"forget"}.
     */
    static final class Ring implements Function<Object[], Object> {
        final StructType schema;
        final StructType readSchema;
        final int rows;
        final Double seconds;
        final boolean replace;
        private final ArrayDeque<Chunk> chunks = new ArrayDeque<>();
        private final LongSupplier clock;  // milliseconds
        private final Scratch scratch;  // the checkpoint folder this ring made for its query, or null

        Ring(StructType schema, int rows, Double seconds, boolean replace, Scratch scratch) {
            this(schema, rows, seconds, replace, System::currentTimeMillis, scratch);
        }

        Ring(StructType schema, int rows, Double seconds, boolean replace, LongSupplier clock) {
            this(schema, rows, seconds, replace, clock, null);
        }

        Ring(StructType schema, int rows, Double seconds, boolean replace, LongSupplier clock, Scratch scratch) {
            this.clock = clock;
            this.schema = schema;
            this.scratch = scratch;
            Metadata batchMetadata = scratch == null ? Metadata.empty()
                    : new MetadataBuilder().putString(CHECKPOINT_KEY, scratch.folder.toString()).build();
            this.readSchema = schema.add(new StructField(BATCH_COLUMN, DataTypes.LongType, false, batchMetadata));
            this.rows = Math.max(0, rows);
            this.seconds = seconds;
            this.replace = replace;
        }

        @Override
        @SuppressWarnings("unchecked")
        public Object apply(Object[] call) {
            switch ((String) call[0]) {
                case "schema":
                    return readSchema;
                case "rows":
                    return rows;
                case "commit":
                    commit((Long) call[1], (List<Row>) call[2]);
                    return null;
                case "snapshot":
                    return snapshot((Long) call[1], (Integer) call[2]);
                case "forget":
                    if (scratch != null) {
                        scratch.delete();
                    }
                    return null;
                default:
                    throw new IllegalArgumentException("a ring does not " + call[0]);
            }
        }

        synchronized void commit(long batch, List<Row> batchRows) {
            long now = clock.getAsLong();
            if (replace) {
                chunks.clear();
            } else {
                chunks.removeIf(chunk -> chunk.batch == batch);  // a batch run again replaces its first run
            }
            if (!batchRows.isEmpty() || replace) {
                chunks.addFirst(new Chunk(batch, now, batchRows));
            }
            trim(now);
        }

        private void trim(long now) {
            int kept = 0;
            Iterator<Chunk> each = chunks.iterator();
            while (each.hasNext()) {
                Chunk chunk = each.next();
                if (kept >= rows || expired(chunk, now)) {
                    each.remove();
                    continue;
                }
                if (kept + chunk.rows.size() > rows) {  // the oldest chunk kept keeps its newest rows that fit
                    chunk.rows = new ArrayList<>(chunk.rows.subList(chunk.rows.size() - (rows - kept),
                            chunk.rows.size()));
                }
                kept += chunk.rows.size();
            }
        }

        private boolean expired(Chunk chunk, long now) {
            return seconds != null && now - chunk.arrived > seconds * 1000;
        }

        /**
         * The kept rows, newest batch first, each with its batch in the last column, as Spark's rows: only those of
         * `batch` unless it is null, at most `limit` of them. Only what is returned is converted.
         */
        synchronized InternalRow[] snapshot(Long batch, int limit) {
            trim(clock.getAsLong());
            Function1<Object, Object> toSpark = CatalystTypeConverters.createToCatalystConverter(readSchema);
            List<InternalRow> out = new ArrayList<>();
            int width = schema.fields().length;
            for (Chunk chunk : chunks) {
                if (batch != null && chunk.batch != batch) {
                    continue;
                }
                for (Row row : chunk.rows) {
                    if (out.size() >= limit) {
                        return out.toArray(new InternalRow[0]);
                    }
                    Object[] values = new Object[width + 1];
                    for (int i = 0; i < width; i++) {
                        values[i] = row.get(i);
                    }
                    values[width] = chunk.batch;
                    out.add((InternalRow) toSpark.apply(RowFactory.create(values)));
                }
            }
            return out.toArray(new InternalRow[0]);
        }
    }

    /**
     * A checkpoint folder a ring made for its query in the JVM's temporary folder: deleted, with what Spark wrote
     * in it, when the ring is forgotten or the JVM exits, whichever comes first. Only this folder is ever deleted,
     * and a link inside it is removed, never followed.
     */
    static final class Scratch {
        final Path folder;
        private final Thread atExit;

        private Scratch(Path folder) {
            this.folder = folder;
            this.atExit = new Thread(this::deleteTree, "sparkscope-scratch-checkpoint");
            Runtime.getRuntime().addShutdownHook(atExit);
        }

        static Scratch make(String ring) {
            try {
                return new Scratch(Files.createTempDirectory("sparkscope-checkpoint-" + ring + "-").toRealPath());
            } catch (IOException e) {
                throw new UncheckedIOException("sparkscope's sink could not make a checkpoint folder", e);
            }
        }

        void delete() {
            try {
                Runtime.getRuntime().removeShutdownHook(atExit);
            } catch (IllegalStateException exiting) {
                return;  // the JVM is exiting: its hook deletes the folder
            }
            deleteTree();
        }

        private void deleteTree() {
            if (!Files.isDirectory(folder)) {
                return;
            }
            try (Stream<Path> inside = Files.walk(folder)) {  // walk follows no link
                inside.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
            } catch (IOException | UncheckedIOException e) {
                // what is left stays in the temporary folder; the query already ended
            }
        }
    }

    static final class Chunk {
        final long batch;
        final long arrived;
        List<Row> rows;

        Chunk(long batch, long arrived, List<Row> rows) {
            this.batch = batch;
            this.arrived = arrived;
            this.rows = rows;
        }
    }

    static final class RingTable implements Table, SupportsWrite, SupportsRead {
        private final String name;
        private final StructType schema;

        RingTable(String name, StructType schema) {
            this.name = name;
            this.schema = schema;
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

        @Override
        public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
            return new RingWriteBuilder(name, info.schema());
        }

        @Override
        public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
            return new RingScanBuilder(options.getBoolean("forget", false) ? null : ring(name), schema);
        }
    }

    static final class RingWriteBuilder implements WriteBuilder, SupportsTruncate, SupportsStreamingUpdateAsAppend {
        private final String name;
        private final StructType schema;

        RingWriteBuilder(String name, StructType schema) {
            this.name = name;
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
                    return new RingWrite(name, schema, (Integer) ring(name).apply(new Object[] {"rows"}));
                }
            };
        }
    }

    static final class RingWrite implements StreamingWrite {
        private final String name;
        private final StructType schema;
        private final int rows;

        RingWrite(String name, StructType schema, int rows) {
            this.name = name;
            this.schema = schema;
            this.rows = rows;
        }

        @Override
        public StreamingDataWriterFactory createStreamingWriterFactory(PhysicalWriteInfo info) {
            return new MemoryWriterFactory(schema);  // Spark's own: what runs on the executors is Spark's
        }

        @Override
        public boolean useCommitCoordinator() {
            return false;
        }

        @Override
        public void commit(long epochId, WriterCommitMessage[] messages) {
            List<List<Row>> partitions = new ArrayList<>();
            for (WriterCommitMessage message : messages) {
                if (message instanceof MemoryWriterCommitMessage) {
                    // a Scala List (Spark's writers fill a ListBuffer): its size and its positions cost a walk
                    // each, so it is copied once into an array list (a batch of 12 million rows took 55 s without)
                    partitions.add(new ArrayList<>(
                            CollectionConverters.asJava(((MemoryWriterCommitMessage) message).data())));
                }
            }
            Function<Object[], Object> ring = rings().get(name);
            if (ring != null) {  // dropped while the query runs: its rows are not wanted any more
                ring.apply(new Object[] {"commit", epochId, newest(partitions, rows)});
            }
        }

        /** At most `rows` of the batch's rows, the newest of each partition, as many from each as fit in turn. */
        static List<Row> newest(List<List<Row>> partitions, int rows) {
            int[] take = new int[partitions.size()];
            int[] sizes = new int[partitions.size()];
            for (int i = 0; i < sizes.length; i++) {
                sizes[i] = partitions.get(i).size();
            }
            int taken = 0;
            boolean more = true;
            while (taken < rows && more) {
                more = false;
                for (int i = 0; i < take.length && taken < rows; i++) {
                    if (take[i] < sizes[i]) {
                        take[i]++;
                        taken++;
                        more = true;
                    }
                }
            }
            List<Row> kept = new ArrayList<>(taken);
            for (int i = 0; i < take.length; i++) {
                kept.addAll(partitions.get(i).subList(sizes[i] - take[i], sizes[i]));
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
        private final Function<Object[], Object> ring;  // null: a read that forgets the ring
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
            InternalRow[] rows = ring == null ? new InternalRow[0]
                    : (InternalRow[]) ring.apply(new Object[] {"snapshot", batch, limit});
            return new RingScan(rows, schema);
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
