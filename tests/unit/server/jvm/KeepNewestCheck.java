/*
 * The bounded sink's ring, checked in a JVM of its own (tests/unit/server/test_sink_jar.py compiles and runs it):
 * what it keeps across batches, a retried batch, complete mode, time, the newest rows of each partition, the
 * checkpoint a ring makes and removes, and one
 * registry for every class loader that loads the jar (a session artifact is loaded once per session).
 * Prints one line per check, "ok NAME" or "FAIL NAME: why", and exits 1 when one failed.
 */
package sparkscope.sink;

import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

public final class KeepNewestCheck {
    static final StructType SCHEMA = new StructType().add("id", DataTypes.LongType);
    static int failed = 0;

    static List<Row> ids(long first, int count) {
        List<Row> rows = new ArrayList<>();
        for (long id = first; id < first + count; id++) {
            rows.add(RowFactory.create(id));
        }
        return rows;
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
        KeepNewest.Ring ring = new KeepNewest.Ring(SCHEMA, 5, null, false, () -> now[0]);
        ring.commit(0, ids(0, 3));
        ring.commit(1, ids(10, 3));
        check("the newest rows, newest batch first, the oldest batch cut to fit", "10@1 11@1 12@1 1@0 2@0", kept(ring));
        ring.commit(1, ids(20, 2));
        check("a batch run again replaces its first run (what its first run pushed out stays out)",
              "20@1 21@1 1@0 2@0", kept(ring));
        ring.commit(2, ids(30, 0));
        check("an empty batch keeps what was kept", "20@1 21@1 1@0 2@0", kept(ring));
        check("a read of one batch", "1@0 2@0", kept(ring, 0L, Integer.MAX_VALUE));
        check("a read with a limit takes the newest", "20@1 21@1 1@0", kept(ring, null, 3));

        KeepNewest.Ring timed = new KeepNewest.Ring(SCHEMA, 100, 60.0, false, () -> now[0]);
        timed.commit(0, ids(0, 2));
        now[0] += 30_000;
        timed.commit(1, ids(10, 1));
        check("rows within the time kept", "10@1 0@0 1@0", kept(timed));
        now[0] += 31_000;  // batch 0 is 61 s old: gone when read, no batch needed
        check("rows older than the time kept are gone when read", "10@1", kept(timed));

        KeepNewest.Ring complete = new KeepNewest.Ring(SCHEMA, 100, null, true, () -> now[0]);
        complete.commit(0, ids(0, 3));
        complete.commit(1, ids(5, 2));
        check("complete mode keeps the latest result only", "5@1 6@1", kept(complete));
        complete.commit(2, ids(0, 0));
        check("complete mode: an empty result is the result", "", kept(complete));

        List<List<Row>> partitions = Arrays.asList(ids(0, 10), ids(100, 2), ids(200, 10));
        List<String> newest = new ArrayList<>();
        for (Row row : KeepNewest.RingWrite.newest(partitions, 7)) {
            newest.add(String.valueOf(row.getLong(0)));
        }
        check("a batch larger than the ring keeps the newest rows of each partition, in turn",
              "7 8 9 100 101 208 209", String.join(" ", newest));

        // A ring that makes its query's checkpoint: named in its schema, gone when forgotten, and only it
        java.nio.file.Path outside = java.nio.file.Files.createTempDirectory("keep-newest-check-");
        java.nio.file.Files.writeString(outside.resolve("kept"), "not the ring's");
        KeepNewest.Ring scratched = new KeepNewest.Ring(SCHEMA, 5, null, false, KeepNewest.Scratch.make("check"));
        String named = ((StructType) scratched.apply(new Object[] {"schema"})).apply(KeepNewest.BATCH_COLUMN)
                .metadata().getString(KeepNewest.CHECKPOINT_KEY);
        java.nio.file.Path folder = java.nio.file.Paths.get(named);
        java.nio.file.Files.createDirectories(folder.resolve("offsets"));
        java.nio.file.Files.writeString(folder.resolve("offsets").resolve("0"), "v1");
        java.nio.file.Files.createSymbolicLink(folder.resolve("link"), outside);
        check("the scratch checkpoint is a folder of the temporary folder", "true",
              String.valueOf(java.nio.file.Files.isDirectory(folder)
                             && folder.startsWith(java.nio.file.Paths.get(System.getProperty("java.io.tmpdir"))
                                                  .toRealPath())));
        scratched.apply(new Object[] {"forget"});
        check("a forgotten ring's checkpoint is gone", "false", String.valueOf(java.nio.file.Files.exists(folder)));
        check("a link inside it is removed, never followed", "true",
              String.valueOf(java.nio.file.Files.exists(outside.resolve("kept"))));
        java.nio.file.Files.delete(outside.resolve("kept"));
        java.nio.file.Files.delete(outside);

        // Two class loaders (two sessions that each got the jar as an artifact) share the rings
        URL jar = KeepNewest.class.getProtectionDomain().getCodeSource().getLocation();
        ClassLoader parent = KeepNewest.class.getClassLoader();
        try (URLClassLoader one = new OwnCopy(jar, parent); URLClassLoader two = new OwnCopy(jar, parent)) {
            Class<?> first = one.loadClass("sparkscope.sink.KeepNewest");
            Class<?> second = two.loadClass("sparkscope.sink.KeepNewest");
            check("each loader has a class of its own", "true", String.valueOf(first != second));
            Map<?, ?> made = registry(first);
            Map<?, ?> seen = registry(second);
            check("one registry for every loader", "true", String.valueOf(seen == made && made == KeepNewest.rings()));
        }
        System.exit(failed == 0 ? 0 : 1);
    }

    static Map<?, ?> registry(Class<?> sink) throws Exception {
        java.lang.reflect.Method rings = sink.getDeclaredMethod("rings");
        rings.setAccessible(true);  // package-private, and another loader's package
        return (Map<?, ?>) rings.invoke(null);
    }

    /** Loads the sink's classes from the jar itself, as Spark's session class loader loads an artifact's. */
    static final class OwnCopy extends URLClassLoader {
        OwnCopy(URL jar, ClassLoader parent) {
            super(new URL[] {jar}, parent);
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.startsWith("sparkscope.sink.")) {
                return super.loadClass(name, resolve);
            }
            synchronized (getClassLoadingLock(name)) {
                Class<?> found = findLoadedClass(name);
                return found != null ? found : findClass(name);
            }
        }
    }
}
