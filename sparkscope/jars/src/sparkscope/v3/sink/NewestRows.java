/*
 * The writers of the bounded sink (KeepNewest.java): each task keeps the newest rows of its partition, at most as
 * many as the ring keeps, and sends the driver only those (in Spark's own commit message, so that the driver needs
 * no class of this jar to read it). A batch of millions of rows costs each task that many rows of memory and the
 * driver the partitions times that, whatever the batch holds. Within a batch, "newest" is Spark's order of the rows.
 *
 * When the rows carry their Kafka timestamp (Latency.EVENT_COLUMN), each task also samples those of all its rows (at
 * most SAMPLE of them, each as likely) and hands the sample to the driver in an accumulator of Spark's own, so that
 * the commit measures every record's latency, not only the newest rows' that the ring keeps.
 */
package sparkscope.v3.sink;

import java.util.ArrayDeque;
import java.util.SplittableRandom;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.execution.streaming.sources.PackedRowCommitMessage;
import org.apache.spark.util.CollectionAccumulator;

public final class NewestRows implements StreamingDataWriterFactory {
    private static final long serialVersionUID = 4L;
    static final int SAMPLE = 1024;  // event times a task hands the driver, at most
    private final int rows;
    private final long bytes;
    private final int eventIndex;  // the column of the rows' Kafka timestamps, or -1
    private final CollectionAccumulator<long[]> events;  // each task's {records, sampled event times (micros)…}

    public NewestRows(int rows, long bytes) {
        this(rows, bytes, -1, null);
    }

    NewestRows(int rows, long bytes, int eventIndex, CollectionAccumulator<long[]> events) {
        this.rows = Math.max(0, rows);
        this.bytes = Math.max(0, bytes);
        this.eventIndex = events == null ? -1 : eventIndex;
        this.events = events;
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId, long epochId) {
        return new Writer(rows, bytes, eventIndex, events);
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
        private final int eventIndex;
        private final CollectionAccumulator<long[]> events;
        private final long[] sample;
        private long seen = 0;
        private final SplittableRandom random = new SplittableRandom();

        Writer(int keep, long maxBytes) {
            this(keep, maxBytes, -1, null);
        }

        Writer(int keep, long maxBytes, int eventIndex, CollectionAccumulator<long[]> events) {
            this.keep = keep;
            this.maxBytes = maxBytes;
            this.eventIndex = eventIndex;
            this.events = events;
            this.sample = eventIndex >= 0 ? new long[SAMPLE] : null;
        }

        /** Reservoir sampling: after n rows, each of them is in the sample with the same chance. */
        private void sampleEvent(InternalRow row) {
            if (row.isNullAt(eventIndex)) {
                return;
            }
            long micros = row.getLong(eventIndex);
            if (seen < SAMPLE) {
                sample[(int) seen] = micros;
            } else {
                long slot = random.nextLong(seen + 1);
                if (slot < SAMPLE) {
                    sample[(int) slot] = micros;
                }
            }
            seen++;
        }

        /** The heap a kept row takes (as KeepNewest.Chunk counts it). */
        static long bytesOf(InternalRow row) {
            return 64 + (row instanceof UnsafeRow ? ((UnsafeRow) row).getSizeInBytes()
                    : org.apache.spark.util.SizeEstimator.estimate(row));
        }

        @Override
        public void write(InternalRow row) {
            if (sample != null) {
                sampleEvent(row);
            }
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
            if (sample != null && seen > 0) {
                long[] handed = new long[(int) Math.min(seen, SAMPLE) + 1];
                handed[0] = seen;
                System.arraycopy(sample, 0, handed, 1, handed.length - 1);
                events.add(handed);
            }
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
