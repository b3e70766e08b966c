/*
 * The bounded sink for a real-time query (trigger realTime): a ForeachWriter that puts each row into the query's ring
 * as it arrives. Real-time mode refuses every sink but Kafka, foreach and the console, and it runs one batch for
 * minutes, committing it only at its end: so a ring fed by commits (KeepNewest's writers) would be refused, and would
 * show nothing until the batch ends. Each row joins the ring at once (Ring "arrived"), under the same bounds.
 *
 * A Spark Connect client sends a JVM ForeachWriter as Java-serialized bytes (a ForeachWriterPacket). This jar makes
 * those bytes on the server (Control's ring_writer), with the server's own classes, so no client needs them.
 *
 * A writer fills only a ring of the user whose query runs it (its tasks carry Spark Connect's operation tag, which
 * names that user): bytes forged to name another user's ring fail the query in one line.
 *
 * The ring lives in the driver: the writer finds it where its tasks run in the driver's JVM (local mode, which
 * every server sparkscope starts runs). Elsewhere it says so, in one line, when the query starts its first batch.
 */
package sparkscope.v3.sink;

import java.util.Base64;
import java.util.function.Function;

import org.apache.spark.TaskContext;
import org.apache.spark.sql.ForeachWriter;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.CatalystTypeConverters;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

import scala.Function1;
import sparkscope.v3.Holdings;

public final class RingRows extends ForeachWriter<Row> {
    private static final long serialVersionUID = 1L;
    static final String NOT_IN_DRIVER = "SPARKSCOPE_RING_ELSEWHERE: a real-time query's rows reach sparkscope's sink "
            + "only on a server whose tasks run in its driver (local mode), and this task runs on an executor; "
            + "write to Kafka instead (sink='kafka')";
    static final String NOT_YOURS = "SPARKSCOPE_NOT_YOUR_RING: this query's writer names a ring of another user's; "
            + "a query writes into its own user's rings only";
    private static final String QUERY_ID = "sql.streaming.queryId";  // StreamExecution.QUERY_ID_KEY, set on each task
    private static final String JOB_TAGS = "spark.job.tags";  // SparkContext.SPARK_JOB_TAGS: names the operation's user

    private final String key;
    private final String schema;
    private transient Function<Object[], Object> ring;
    private transient Function1<Object, Object> toCatalyst;
    private transient UnsafeProjection unsafe;
    private transient long epoch;

    RingRows(String key, StructType schema) {
        this.key = key;
        this.schema = schema.json();
    }

    /**
     * The Java-serialized ForeachWriterPacket of a writer into the caller's ring `name` (base64), as a Spark Connect
     * client sends it in WriteStreamOperationStart.foreach_writer.scala_function.payload. No encoder goes with it:
     * the server then gives the writer the query's rows as Rows.
     */
    public static String packet(String name) {
        Function<Object[], Object> ring = KeepNewest.ring(name, true);
        StructType schema = (StructType) ring.apply(new Object[] {"schema"});
        StructType rowSchema = new StructType(java.util.Arrays.stream(schema.fields())
                .filter(field -> !KeepNewest.BATCH_COLUMN.equals(field.name()))
                .toArray(org.apache.spark.sql.types.StructField[]::new));
        RingRows writer = new RingRows((String) ring.apply(new Object[] {"key"}), rowSchema);
        Object packet = new org.apache.spark.sql.connect.common.ForeachWriterPacket(writer, null);
        return Base64.getEncoder().encodeToString(org.apache.spark.util.Utils.serialize(packet));
    }

    @Override
    public boolean open(long partitionId, long epochId) {
        ring = Holdings.all().get(key);
        if (ring == null) {
            org.apache.spark.SparkEnv env = org.apache.spark.SparkEnv.get();
            boolean driver = env == null || "driver".equals(env.executorId());
            throw new IllegalStateException(driver ? KeepNewest.GONE : NOT_IN_DRIVER);
        }
        String[] owner = (String[]) ring.apply(new Object[] {"owner"});
        TaskContext task = TaskContext.get();
        String[] caller = task == null ? null : Holdings.ownerOfTags(task.getLocalProperty(JOB_TAGS));
        if (owner != null && (caller == null || !owner[0].equals(caller[0]))) {  // a writer made for one user's ring,
            throw new SecurityException(NOT_YOURS);  // sent by another's query (its bytes forged): no row of theirs
        }
        StructType rowSchema = (StructType) DataType.fromJson(schema);
        toCatalyst = CatalystTypeConverters.createToCatalystConverter(rowSchema);
        unsafe = UnsafeProjection.create(rowSchema);
        epoch = epochId;
        attachQuery();
        ring.apply(new Object[] {"reading"});
        return true;
    }

    /** The ring is in use while the query runs: its stream thread is the one its Lifetime watches. */
    private void attachQuery() {
        TaskContext task = TaskContext.get();
        String queryId = task == null ? null : task.getLocalProperty(QUERY_ID);
        if (queryId == null) {
            return;
        }
        String marker = "[id = " + queryId + ",";
        for (Thread thread : Thread.getAllStackTraces().keySet()) {
            if (thread.getName().startsWith("stream execution thread for ") && thread.getName().contains(marker)) {
                ring.apply(new Object[] {"attach", thread, queryId});
                return;
            }
        }
    }

    @Override
    public void process(Row row) {
        if (Holdings.all().get(key) != ring) {  // dropped while the query runs: its rows are not wanted any more
            return;
        }
        InternalRow internal = unsafe.apply((InternalRow) toCatalyst.apply(row)).copy();
        ring.apply(new Object[] {"arrived", epoch, internal});
    }

    @Override
    public void close(Throwable error) {
        ring = null;
    }
}
