/*
 * The writers of the bounded sink (KeepNewest.java): each task keeps the newest rows of its partition, at most as
 * many as the ring keeps, and sends the driver only those (in Spark's own commit message, so that the driver needs
 * no class of this jar to read it). A batch of millions of rows costs each task that many rows of memory and the
 * driver the partitions times that, whatever the batch holds. Within a batch, "newest" is Spark's order of the rows.
 */
package sparkscope.v3.sink;

import java.util.ArrayDeque;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.execution.streaming.sources.PackedRowCommitMessage;

public final class NewestRows implements StreamingDataWriterFactory {
    private static final long serialVersionUID = 3L;
    private final int rows;
    private final long bytes;

    public NewestRows(int rows, long bytes) {
        this.rows = Math.max(0, rows);
        this.bytes = Math.max(0, bytes);
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId, long epochId) {
        return new Writer(rows, bytes);
    }

    /**
     * One task's newest rows, at most `keep` of them taking at most `maxBytes`. A row pushed out lends its buffer to
     * the next one: no garbage per row.
     */
    static final class Writer implements DataWriter<InternalRow> {
        private final int keep;
        private final long maxBytes;
        private final ArrayDeque<InternalRow> kept = new ArrayDeque<>();
        private long keptBytes = 0;

        Writer(int keep, long maxBytes) {
            this.keep = keep;
            this.maxBytes = maxBytes;
        }

        /** The heap a kept row takes (as KeepNewest.Chunk counts it). */
        static long bytesOf(InternalRow row) {
            return 64 + (row instanceof UnsafeRow ? ((UnsafeRow) row).getSizeInBytes()
                    : org.apache.spark.util.SizeEstimator.estimate(row));
        }

        @Override
        public void write(InternalRow row) {
            if (keep == 0) {
                return;
            }
            InternalRow copy;
            if (kept.size() < keep) {
                copy = row.copy();
            } else {
                InternalRow oldest = kept.pollFirst();
                keptBytes -= bytesOf(oldest);
                if (oldest instanceof UnsafeRow && row instanceof UnsafeRow) {
                    ((UnsafeRow) oldest).copyFrom((UnsafeRow) row);
                    copy = oldest;
                } else {
                    copy = row.copy();
                }
            }
            kept.addLast(copy);
            keptBytes += bytesOf(copy);
            while (keptBytes > maxBytes && !kept.isEmpty()) {
                keptBytes -= bytesOf(kept.pollFirst());
            }
        }

        @Override
        public WriterCommitMessage commit() {
            return new PackedRowCommitMessage(kept.toArray(new InternalRow[0]));
        }

        @Override
        public void abort() {
            kept.clear();
            keptBytes = 0;
        }

        @Override
        public void close() {
        }
    }
}
