/*
 * The writers of the bounded sink (KeepNewest.java): each task keeps the newest rows of its partition, at most as
 * many as the ring keeps, and sends the driver only those (in Spark's own commit message, so that the driver needs
 * no class of this jar to read it). A batch of millions of rows costs each task that many rows of memory and the
 * driver the partitions times that, whatever the batch holds. Within a batch, "newest" is Spark's order of the rows.
 */
package sparkscope.v2.sink;

import java.util.ArrayDeque;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.execution.streaming.sources.PackedRowCommitMessage;

public final class NewestRows implements StreamingDataWriterFactory {
    private static final long serialVersionUID = 2L;
    private final int rows;

    public NewestRows(int rows) {
        this.rows = Math.max(0, rows);
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId, long epochId) {
        return new Writer(rows);
    }

    /** One task's newest rows. A row pushed out lends its buffer to the next one: no garbage per row. */
    static final class Writer implements DataWriter<InternalRow> {
        private final int keep;
        private final ArrayDeque<InternalRow> kept = new ArrayDeque<>();

        Writer(int keep) {
            this.keep = keep;
        }

        @Override
        public void write(InternalRow row) {
            if (keep == 0) {
                return;
            }
            if (kept.size() < keep) {
                kept.addLast(row.copy());
                return;
            }
            InternalRow oldest = kept.pollFirst();
            if (oldest instanceof UnsafeRow && row instanceof UnsafeRow) {
                ((UnsafeRow) oldest).copyFrom((UnsafeRow) row);
                kept.addLast(oldest);
            } else {
                kept.addLast(row.copy());
            }
        }

        @Override
        public WriterCommitMessage commit() {
            return new PackedRowCommitMessage(kept.toArray(new InternalRow[0]));
        }

        @Override
        public void abort() {
            kept.clear();
        }

        @Override
        public void close() {
        }
    }
}
