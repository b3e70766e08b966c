/*
 * The bounded sink's ring and writers, checked in a JVM of their own (tests/unit/server/test_jar.py compiles and runs
 * it): what a ring keeps across batches, a retried batch, complete mode, time, the newest rows of each partition, a
 * writer task that keeps only its partition's newest rows, the checkpoint a ring makes and removes, and one registry
 * for every class loader that loads the jar (a session artifact is loaded once per session).
 * Prints one line per check, "ok NAME" or "FAIL NAME: why", and exits 1 when one failed.
 */
package sparkscope.v2.sink;

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

import sparkscope.v2.Lifetime;

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

    static KeepNewest.Ring ring(int rows, Double seconds, boolean replace, long[] now) {
        return new KeepNewest.Ring("check", "q", SCHEMA, rows, seconds, replace, () -> now[0], null,
                new Lifetime(null, now[0], 0, false));
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

        DataWriter<InternalRow> writer = new NewestRows(3).createWriter(0, 0, 0);
        UnsafeRow reused = id(0);
        for (long id = 0; id < 1000; id++) {  // as Spark's writers do: one row object, its contents changed
            reused.setLong(0, id);
            writer.write(reused);
        }
        check("a writer task keeps its partition's newest rows, no more than the ring keeps", "997 998 999",
              longs(Arrays.asList(((PackedRowCommitMessage) writer.commit()).rows())));
        DataWriter<InternalRow> none = new NewestRows(0).createWriter(0, 0, 0);
        none.write(id(1));
        check("a ring of no rows has its writers send nothing", "0",
              String.valueOf(((PackedRowCommitMessage) none.commit()).rows().length));

        // A ring that makes its query's checkpoint: named by the ring, gone when it is freed, and only it
        Path outside = Files.createTempDirectory("keep-newest-check-");
        Files.writeString(outside.resolve("kept"), "not the ring's");
        KeepNewest.Ring scratched = new KeepNewest.Ring("check", "q", SCHEMA, 5, null, false, () -> now[0],
                KeepNewest.Scratch.make("check"), new Lifetime(null, now[0], 0, false));
        Path folder = Paths.get((String) scratched.apply(new Object[] {"scratch"}));
        Files.createDirectories(folder.resolve("offsets"));
        Files.writeString(folder.resolve("offsets").resolve("0"), "v1");
        Files.createSymbolicLink(folder.resolve("link"), outside);
        check("the scratch checkpoint is a folder of the temporary folder", "true",
              String.valueOf(Files.isDirectory(folder)
                             && folder.startsWith(Paths.get(System.getProperty("java.io.tmpdir")).toRealPath())));
        scratched.apply(new Object[] {"free"});
        check("a freed ring's checkpoint is gone", "false", String.valueOf(Files.exists(folder)));
        check("a link inside it is removed, never followed", "true", String.valueOf(Files.exists(outside.resolve("kept"))));
        Files.delete(outside.resolve("kept"));
        Files.delete(outside);

        // Two class loaders (two sessions that each got the jar as an artifact) share the registry
        URL jar = KeepNewest.class.getProtectionDomain().getCodeSource().getLocation();
        ClassLoader parent = KeepNewest.class.getClassLoader();
        try (URLClassLoader one = new OwnCopy(jar, parent); URLClassLoader two = new OwnCopy(jar, parent)) {
            Class<?> first = one.loadClass("sparkscope.v2.Holdings");
            Class<?> second = two.loadClass("sparkscope.v2.Holdings");
            check("each loader has a class of its own", "true", String.valueOf(first != second));
            Map<?, ?> made = (Map<?, ?>) first.getMethod("all").invoke(null);
            Map<?, ?> seen = (Map<?, ?>) second.getMethod("all").invoke(null);
            check("one registry for every loader", "true",
                  String.valueOf(seen == made && made == sparkscope.v2.Holdings.all()));
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
