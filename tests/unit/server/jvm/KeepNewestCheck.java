/*
 * The bounded sink's ring and writers, checked in a JVM of their own (tests/unit/server/test_jar.py compiles and runs
 * it): what a ring keeps across batches, a retried batch, complete mode, time, the newest rows of each partition, a
 * writer task that keeps only its partition's newest rows (and only its share of the bytes), the bytes a ring's owner
 * may keep, the checkpoint a ring makes and removes (and does not make when the make is refused), and one registry
 * for every class loader that loads the jar (a session artifact is loaded once per session).
 * Prints one line per check, "ok NAME" or "FAIL NAME: why", and exits 1 when one failed.
 */
package sparkscope.v3.sink;

import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.execution.streaming.sources.PackedRowCommitMessage;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import sparkscope.v3.Lifetime;
import sparkscope.v3.Limits;

public final class KeepNewestCheck {
    static final StructType SCHEMA = new StructType().add("id", DataTypes.LongType);
    static int failed = 0;

    /** A row as Spark's writers hand it: an UnsafeRow of one long. */
    static UnsafeRow id(long value) {
        UnsafeRow row = new UnsafeRow(1);
        row.pointTo(new byte[16], 16);
        row.setLong(0, value);
        return row;
    }

    static List<InternalRow> ids(long first, int count) {
        List<InternalRow> rows = new ArrayList<>();
        for (long id = first; id < first + count; id++) {
            rows.add(id(id));
        }
        return rows;
    }

    static final Limits UNBOUNDED = new Limits(1_000_000, 1000, 64, 1L << 40, 1L << 40, 0);
    static final long ROW_BYTES = 64 + 16;  // what KeepNewest counts for one of these rows

    static KeepNewest.Ring ring(int rows, Double seconds, boolean replace, long[] now) {
        return new KeepNewest.Ring("check", "q", SCHEMA, rows, seconds, replace, () -> now[0], null,
                new Lifetime(null, now[0], 0, false), UNBOUNDED);
    }

    static int folders(Path in) throws java.io.IOException {
        try (java.util.stream.Stream<Path> inside = Files.list(in)) {
            return (int) inside.count();
        }
    }

    /** The ring's rows as "id@batch", newest batch first. */
    static String kept(KeepNewest.Ring ring) {
        return kept(ring, null, Integer.MAX_VALUE);
    }

    static String kept(KeepNewest.Ring ring, Long batch, int limit) {
        List<String> out = new ArrayList<>();
        for (InternalRow row : ring.snapshot(batch, limit)) {
            out.add(row.getLong(0) + "@" + row.getLong(1));
        }
        return String.join(" ", out);
    }

    static String longs(List<InternalRow> rows) {
        List<String> out = new ArrayList<>();
        for (InternalRow row : rows) {
            out.add(String.valueOf(row.getLong(0)));
        }
        return String.join(" ", out);
    }

    static void check(String name, String expected, String actual) {
        if (expected.equals(actual)) {
            System.out.println("ok " + name);
        } else {
            failed++;
            System.out.println("FAIL " + name + ": expected [" + expected + "] got [" + actual + "]");
        }
    }

    /** The end-to-end latency (Latency.java): its percentiles, a real-time ring's arrivals, a task's sample. */
    static void checkLatency(long[] now) throws java.io.IOException {
        Latency spread = new Latency(7);
        for (long ms = 1; ms <= 1000; ms++) {
            spread.add(ms, 1.0, 1);
        }
        Map<String, String> figures = spread.metrics();
        check("a batch's latency: p50, p90 and p99 within 4%, its records and its max",
              "true true true 1000 1000 7", (Math.abs(Double.parseDouble(figures.get("latencyP50Ms")) - 500) <= 20) + " "
              + (Math.abs(Double.parseDouble(figures.get("latencyP90Ms")) - 900) <= 36) + " "
              + (Math.abs(Double.parseDouble(figures.get("latencyP99Ms")) - 990) <= 40) + " "
              + figures.get("latencyRecords") + " " + figures.get("latencyMaxMs") + " " + figures.get("latencyBatch"));

        StructType timed = SCHEMA.add(Latency.EVENT_COLUMN, DataTypes.TimestampType);
        KeepNewest.Ring ring = new KeepNewest.Ring("rt", "q", timed, 10, null, false, () -> now[0], null,
                new Lifetime(null, now[0], 0, false), UNBOUNDED);
        for (long ago : new long[] {40, 40, 40, 3000}) {
            ring.arrived(3, new org.apache.spark.sql.catalyst.expressions.GenericInternalRow(
                    new Object[] {ago, (now[0] - ago) * 1000}));
        }
        @SuppressWarnings("unchecked")
        Map<String, String> arrived = (Map<String, String>) ring.apply(new Object[] {"latency", 3L});
        check("a real-time ring measures each row as it arrives, from its Kafka timestamp",
              "4 3000 true", arrived.get("latencyRecords") + " " + arrived.get("latencyMaxMs") + " "
              + (Math.abs(Double.parseDouble(arrived.get("latencyP50Ms")) - 40) <= 2));
        check("... and says nothing of a batch it did not measure", "{}",
              String.valueOf(ring.apply(new Object[] {"latency", 4L})));

        org.apache.spark.util.CollectionAccumulator<long[]> events = new org.apache.spark.util.CollectionAccumulator<>();
        DataWriter<InternalRow> task = new NewestRows(3, Long.MAX_VALUE, 1, events).createWriter(0, 0, 0);
        for (long i = 0; i < 5000; i++) {
            task.write(new org.apache.spark.sql.catalyst.expressions.GenericInternalRow(new Object[] {i, i * 1000}));
        }
        task.commit();
        long[] sample = events.value().get(0);
        long inRange = Arrays.stream(sample, 1, sample.length).filter(micros -> micros >= 0 && micros < 5_000_000)
                .distinct().count();
        check("a writer task hands the driver a sample of its rows' event times, and how many rows it had",
              "5000 " + NewestRows.SAMPLE + " " + NewestRows.SAMPLE, sample[0] + " " + (sample.length - 1) + " " + inRange);
    }

    public static void main(String[] args) throws Exception {
        long[] now = {1_000_000};
        KeepNewest.Ring ring = ring(5, null, false, now);
        ring.commit(0, ids(0, 3), 0);
        ring.commit(1, ids(10, 3), 0);
        check("the newest rows, newest batch first, the oldest batch cut to fit", "10@1 11@1 12@1 1@0 2@0", kept(ring));
        ring.commit(1, ids(20, 2), 0);
        check("a batch run again replaces its first run (what its first run pushed out stays out)",
              "20@1 21@1 1@0 2@0", kept(ring));
        ring.commit(2, ids(30, 0), 0);
        check("an empty batch keeps what was kept", "20@1 21@1 1@0 2@0", kept(ring));
        check("a read of one batch", "1@0 2@0", kept(ring, 0L, Integer.MAX_VALUE));
        check("a read with a limit takes the newest", "20@1 21@1 1@0", kept(ring, null, 3));

        KeepNewest.Ring timed = ring(100, 60.0, false, now);
        timed.commit(0, ids(0, 2), 0);
        now[0] += 30_000;
        timed.commit(1, ids(10, 1), 0);
        check("rows within the time kept", "10@1 0@0 1@0", kept(timed));
        now[0] += 31_000;  // batch 0 is 61 s old: gone when read, no batch needed
        check("rows older than the time kept are gone when read", "10@1", kept(timed));

        KeepNewest.Ring complete = ring(100, null, true, now);
        complete.commit(0, ids(0, 3), 0);
        complete.commit(1, ids(5, 2), 0);
        check("complete mode keeps the latest result only", "5@1 6@1", kept(complete));
        complete.commit(2, ids(0, 0), 0);
        check("complete mode: an empty result is the result", "", kept(complete));

        List<InternalRow[]> partitions = Arrays.asList(ids(0, 10).toArray(new InternalRow[0]),
                ids(100, 2).toArray(new InternalRow[0]), ids(200, 10).toArray(new InternalRow[0]));
        check("a batch larger than the ring keeps the newest rows of each partition, in turn",
              "7 8 9 100 101 208 209", longs(KeepNewest.RingWrite.newest(partitions, 7)));

        KeepNewest.Ring narrow = new KeepNewest.Ring("narrow", "q", SCHEMA, 100, null, false, () -> now[0], null,
                new Lifetime(new String[] {"ana", "8ba8e485-3677-4945-a9de-3ee7e1b7f173"}, now[0], 0, false),
                new Limits(1_000_000, 1000, 64, 4 * ROW_BYTES, 1L << 40, 0));
        narrow.commit(0, ids(0, 3), 3);
        narrow.commit(1, ids(10, 3), 3);
        check("a ring keeps the newest rows that fit in the bytes its owner may keep", "10@1 11@1 12@1 2@0",
              kept(narrow));
        check("... says which limit cut it, and counts the bytes it keeps",
              Limits.BYTES + " " + 4 * ROW_BYTES, narrow.apply(new Object[] {"describe", now[0], null}) instanceof Map
              ? ((Map<?, ?>) narrow.apply(new Object[] {"describe", now[0], null})).get("trimmed_by") + " "
                + narrow.apply(new Object[] {"bytes"}) : "no description");

        DataWriter<InternalRow> wide = new NewestRows(1000, 2 * ROW_BYTES).createWriter(0, 0, 0);
        for (long id = 0; id < 100; id++) {
            wide.write(id(id));
        }
        check("a writer task keeps no more than its share of the bytes", "98 99",
              longs(Arrays.asList(((PackedRowCommitMessage) wide.commit()).rows())));

        DataWriter<InternalRow> writer = new NewestRows(3, Long.MAX_VALUE).createWriter(0, 0, 0);
        UnsafeRow reused = id(0);
        for (long id = 0; id < 1000; id++) {  // as Spark's writers do: one row object, its contents changed
            reused.setLong(0, id);
            writer.write(reused);
        }
        check("a writer task keeps its partition's newest rows, no more than the ring keeps", "997 998 999",
              longs(Arrays.asList(((PackedRowCommitMessage) writer.commit()).rows())));
        checkLatency(now);

        DataWriter<InternalRow> none = new NewestRows(0, Long.MAX_VALUE).createWriter(0, 0, 0);
        none.write(id(1));
        check("a ring of no rows has its writers send nothing", "0",
              String.valueOf(((PackedRowCommitMessage) none.commit()).rows().length));

        // A ring that makes its query's checkpoint: named by the ring, gone when it is freed, and only it
        Path outside = Files.createTempDirectory("keep-newest-check-");
        Files.writeString(outside.resolve("kept"), "not the ring's");
        KeepNewest.Ring scratched = new KeepNewest.Ring("check", "q", SCHEMA, 5, null, false, () -> now[0],
                KeepNewest.Scratch.make("check"), new Lifetime(null, now[0], 0, false), UNBOUNDED);
        Path folder = Paths.get((String) scratched.apply(new Object[] {"scratch"}));
        Files.createDirectories(folder.resolve("offsets"));
        Files.writeString(folder.resolve("offsets").resolve("0"), "v1");
        Files.createSymbolicLink(folder.resolve("link"), outside);
        Path temporary = Paths.get(System.getProperty("java.io.tmpdir")).toRealPath();
        check("the scratch checkpoint is a folder of the temporary folder", "true",
              String.valueOf(Files.isDirectory(folder) && folder.toRealPath().startsWith(temporary)));
        scratched.apply(new Object[] {"free"});
        check("a freed ring's checkpoint is gone", "false", String.valueOf(Files.exists(folder)));
        check("a link inside it is removed, never followed", "true", String.valueOf(Files.exists(outside.resolve("kept"))));
        Files.delete(outside.resolve("kept"));
        Files.delete(outside);

        // A make past a limit makes nothing; a second make of a name keeps the first (and its one folder)
        int before = folders(temporary);
        try {
            KeepNewest.make("huge", "q", SCHEMA, 2_000_000_000L, null, false, -1, true, null);
            check("a ring of 2,000,000,000 rows is refused", "refused", "made");
        } catch (IllegalArgumentException refused) {
            check("a ring of 2,000,000,000 rows is refused, naming the setting", "true", String.valueOf(
                    refused.getMessage().startsWith(Limits.CODE + ": a ring keeps at most 1,000,000 rows")
                    && refused.getMessage().endsWith("(" + Limits.ROWS + " on the server raises it)")));
        }
        check("... and leaves no folder behind", String.valueOf(before), String.valueOf(folders(temporary)));
        try {
            KeepNewest.make("forever", "q", SCHEMA, 10, null, false, 10_000_000_000_000L, true, null);
            check("a grace of 10^13 ms is refused", "refused", "made");
        } catch (IllegalArgumentException refused) {
            check("a grace of 10^13 ms is refused, naming the setting", "true", String.valueOf(
                    refused.getMessage().contains("a grace period is at most 7 days on this server")
                    && refused.getMessage().endsWith("(" + Limits.GRACE + " on the server raises it)")));
        }
        String twice = KeepNewest.make("twice", "q", SCHEMA, 10, null, false, 0, true, null);
        String again = KeepNewest.make("twice", "q", SCHEMA, 10, null, false, 0, true, null);
        check("a name made twice keeps the first ring and its one checkpoint folder", "true " + (before + 1),
              twice.equals(again) + " " + folders(temporary));
        sparkscope.v3.Holdings.forget(sparkscope.v3.Holdings.key(null, "twice"));
        check("forgetting it removes its folder", String.valueOf(before), String.valueOf(folders(temporary)));

        // Two class loaders (two sessions that each got the jar as an artifact) share the registry
        URL jar = KeepNewest.class.getProtectionDomain().getCodeSource().getLocation();
        ClassLoader parent = KeepNewest.class.getClassLoader();
        try (URLClassLoader one = new OwnCopy(jar, parent); URLClassLoader two = new OwnCopy(jar, parent)) {
            Class<?> first = one.loadClass("sparkscope.v3.Holdings");
            Class<?> second = two.loadClass("sparkscope.v3.Holdings");
            check("each loader has a class of its own", "true", String.valueOf(first != second));
            Map<?, ?> made = (Map<?, ?>) first.getMethod("all").invoke(null);
            Map<?, ?> seen = (Map<?, ?>) second.getMethod("all").invoke(null);
            check("one registry for every loader", "true",
                  String.valueOf(seen == made && made == sparkscope.v3.Holdings.all()));
        }
        System.exit(failed == 0 ? 0 : 1);
    }

    /** Loads the jar's classes from the jar itself, as Spark's session class loader loads an artifact's. */
    static final class OwnCopy extends URLClassLoader {
        OwnCopy(URL jar, ClassLoader parent) {
            super(new URL[] {jar}, parent);
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.startsWith("sparkscope.")) {
                return super.loadClass(name, resolve);
            }
            synchronized (getClassLoadingLock(name)) {
                Class<?> found = findLoadedClass(name);
                return found != null ? found : findClass(name);
            }
        }
    }
}
