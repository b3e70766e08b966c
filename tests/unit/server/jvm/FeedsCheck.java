/*
 * The memory source's feed, checked in a JVM of its own (tests/unit/server/test_jar.py): its batches, that a batch
 * is let go of once every running query that reads the feed has committed it, and that a batch past the bytes its
 * owner may keep is refused.
 * Prints one line per check, "ok NAME" or "FAIL NAME: why", and exits 1 when one failed.
 */
package sparkscope.v3.feed;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import sparkscope.v3.Lifetime;
import sparkscope.v3.Limits;

public final class FeedsCheck {
    static int failed = 0;

    static void check(String name, Object expected, Object actual) {
        if (String.valueOf(expected).equals(String.valueOf(actual))) {
            System.out.println("ok " + name);
        } else {
            failed++;
            System.out.println("FAIL " + name + ": expected [" + expected + "] got [" + actual + "]");
        }
    }

    static InternalRow[] batch(long... ids) {
        InternalRow[] rows = new InternalRow[ids.length];
        for (int i = 0; i < ids.length; i++) {
            rows[i] = new GenericInternalRow(new Object[] {ids[i]});
        }
        return rows;
    }

    static String rows(Feeds.Feed feed, long from, long to) {
        List<String> out = new ArrayList<>();
        for (InternalRow row : (InternalRow[]) feed.apply(new Object[] {"rows", from, to})) {
            out.add(String.valueOf(row.getLong(0)));
        }
        return String.join(" ", out);
    }

    static Thread waiting(CountDownLatch until) {
        Thread thread = new Thread(() -> {
            try {
                until.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        thread.start();
        return thread;
    }

    public static void main(String[] args) throws Exception {
        Feeds.Feed feed = new Feeds.Feed("check", new StructType().add("id", DataTypes.LongType),
                new Lifetime(null, 0, 0, true), new Limits(100, 1000, 10, 1L << 40, 1L << 40, 0));
        feed.apply(new Object[] {"add", batch(1, 2)});
        feed.apply(new Object[] {"add", batch(3)});
        check("batches added, counted from the first", 2L, feed.apply(new Object[] {"batches"}));
        check("the rows of batches 1 and 2", "1 2 3", rows(feed, 0, 2));
        CountDownLatch end = new CountDownLatch(1);
        CountDownLatch endOther = new CountDownLatch(1);
        Thread one = waiting(end);
        Thread two = waiting(endOther);
        feed.apply(new Object[] {"attach", one, "q1"});
        feed.apply(new Object[] {"attach", two, "q2"});
        feed.apply(new Object[] {"commit", one, 2L});
        check("a batch one query committed stays while another reads it", "1 2 3", rows(feed, 0, 2));
        feed.apply(new Object[] {"commit", two, 1L});
        check("a batch every query committed is let go of", "3", rows(feed, 0, 2));
        check("the count of batches stays what was added", 2L, feed.apply(new Object[] {"batches"}));
        feed.apply(new Object[] {"add", batch(4)});
        endOther.countDown();
        two.join();
        feed.apply(new Object[] {"commit", one, 3L});
        check("a query that ended holds nothing back", "", rows(feed, 0, 3));
        check("batch numbers go on after what was let go of", 3L, feed.apply(new Object[] {"batches"}));
        end.countDown();
        one.join();

        // rows of one long, as GenericInternalRows: SizeEstimator's size, plus 64 a row
        long rowBytes = 64 + org.apache.spark.util.SizeEstimator.estimate(batch(1)[0]);
        Feeds.Feed small = new Feeds.Feed("small", new StructType().add("id", DataTypes.LongType),
                new Lifetime(new String[] {"ana", "8ba8e485-3677-4945-a9de-3ee7e1b7f173"}, 0, 0, true),
                new Limits(100, 1000, 10, 3 * rowBytes, 1L << 40, 0));
        small.apply(new Object[] {"add", batch(1, 2)});
        check("a batch within the owner's bytes is added", rowBytes * 2, small.apply(new Object[] {"bytes"}));
        try {
            small.apply(new Object[] {"add", batch(3, 4)});
            check("a batch past the owner's bytes is refused", "refused", "added");
        } catch (IllegalArgumentException refused) {
            check("a batch past the owner's bytes is refused, naming the setting", true,
                  refused.getMessage().startsWith(Limits.CODE + ": this batch takes ")
                  && refused.getMessage().endsWith("(" + Limits.BYTES + " on the server raises it)"));
        }
        check("... and nothing of it is kept", "1 2", rows(small, 0, 5));
        System.exit(failed == 0 ? 0 : 1);
    }
}
