/*
 * The end-to-end latency of one batch's records into sparkscope's sink: for each record, from its timestamp in Kafka
 * (carried in the column EVENT_COLUMN, which the client adds to a Kafka query's plan) to the moment the sink has it
 * (a micro-batch's commit; in real time, the row's arrival in the ring). Open-source Spark reports no latency.
 *
 * A histogram of fixed size whatever the records: log-scale buckets 4% wide, from 1 ms to about 2 hours (and one
 * for less than 1 ms, one for more). Its percentiles are read to within 4%. Weighted counts, so that a sample of a
 * task's records (NewestRows.java) stands for all of them.
 */
package sparkscope.v3.sink;

import java.util.LinkedHashMap;
import java.util.Map;

public final class Latency {
    public static final String EVENT_COLUMN = "__sparkscope_event_time";
    static final double BASE = 1.04;
    static final int BUCKETS = 420;  // 1.04^418 ms is about 2 hours
    private static final double LOG_BASE = Math.log(BASE);

    final long batch;
    private final double[] counts = new double[BUCKETS];
    private long records = 0;
    private long maxMs = 0;

    Latency(long batch) {
        this.batch = batch;
    }

    static int bucket(long ms) {
        if (ms < 1) {
            return 0;
        }
        return (int) Math.min(BUCKETS - 1, 1 + Math.floor(Math.log(ms) / LOG_BASE));
    }

    /** What a bucket stands for, in milliseconds: the middle of its range (0 for the first). */
    static double value(int bucket) {
        return bucket == 0 ? 0.0 : Math.pow(BASE, bucket - 0.5);
    }

    /** `records` records that took `ms` milliseconds each (negative: a clock ahead of the server's, taken as 0). */
    synchronized void add(long ms, double weight, long records) {
        long at = Math.max(0, ms);
        counts[bucket(at)] += weight;
        this.records += records;
        maxMs = Math.max(maxMs, at);
    }

    /** `records` more records measured (those a sample stands for). */
    synchronized void counted(long records) {
        this.records += records;
    }

    /** Another histogram's records added to this one's (a run's figures, from its batches'). */
    void merge(Latency other) {
        double[] counts;
        long records;
        long max;
        synchronized (other) {
            counts = other.counts.clone();
            records = other.records;
            max = other.maxMs;
        }
        synchronized (this) {
            for (int i = 0; i < BUCKETS; i++) {
                this.counts[i] += counts[i];
            }
            this.records += records;
            maxMs = Math.max(maxMs, max);
        }
    }

    synchronized long records() {
        return records;
    }

    /** The latency below which a fraction `q` of the records arrived, in milliseconds. */
    synchronized double percentile(double q) {
        double total = 0;
        for (double count : counts) {
            total += count;
        }
        if (total <= 0) {
            return Double.NaN;
        }
        double seen = 0;
        for (int i = 0; i < BUCKETS; i++) {
            seen += counts[i];
            if (seen >= q * total) {
                return Math.min(value(i), maxMs);
            }
        }
        return maxMs;
    }

    /** The figures, as a sink's metrics in a progress report (strings, as Spark's SinkProgress keeps them). */
    synchronized Map<String, String> metrics() {
        Map<String, String> metrics = new LinkedHashMap<>();
        if (records == 0) {
            return metrics;
        }
        metrics.put("latencyBatch", Long.toString(batch));
        metrics.put("latencyRecords", Long.toString(records));
        metrics.put("latencyP50Ms", format(percentile(0.50)));
        metrics.put("latencyP90Ms", format(percentile(0.90)));
        metrics.put("latencyP99Ms", format(percentile(0.99)));
        metrics.put("latencyMaxMs", Long.toString(maxMs));
        return metrics;
    }

    private static String format(double ms) {
        return ms >= 100 ? Long.toString(Math.round(ms)) : String.format(java.util.Locale.ROOT, "%.1f", ms);
    }
}
