/*
 * What sparkscope keeps on a server, checked in a JVM of its own (tests/unit/server/test_jar.py): who calls, from
 * Spark Connect's job tags; when a holding is over (its query's thread, its session, its grace period); the sweeper,
 * which frees what is over, keeps what fails to answer, runs with no session's class loader and stops when nothing
 * is left; the answers' JSON. (Whose a holding is: identity/IdentityCheck.java.)
 * Prints one line per check, "ok NAME" or "FAIL NAME: why", and exits 1 when one failed.
 */
package sparkscope.v3;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.function.Function;

public final class HoldingsCheck {
    static int failed = 0;
    static final String SESSION = "8ba8e485-3677-4945-a9de-3ee7e1b7f173";

    static void check(String name, Object expected, Object actual) {
        if (String.valueOf(expected).equals(String.valueOf(actual))) {
            System.out.println("ok " + name);
        } else {
            failed++;
            System.out.println("FAIL " + name + ": expected [" + expected + "] got [" + actual + "]");
        }
    }

    /** A holding that says it is over when told, and counts its frees. */
    static final class Fake implements Function<Object[], Object> {
        volatile boolean over;
        volatile int freed;
        final String user;

        Fake(boolean over, String user) {
            this.over = over;
            this.user = user;
        }

        @Override
        public Object apply(Object[] call) {
            switch ((String) call[0]) {
                case "kind":
                    return "ring";
                case "owner":
                    return user == null ? null : new String[] {user, SESSION};
                case "sweep":
                    return over;
                case "free":
                    freed++;
                    return null;
                default:
                    return null;
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String[] who = Holdings.ownerOfTags("SparkConnect_OperationTag_User_ana_b_Session_" + SESSION
                + "_Operation_0c0e2f5e-1b1d-4c3e-9a7e-2f4d5e6a7b8c,spark-session-x-execution-root-id-0");
        check("the caller of an operation, from its job tags (a user name may hold underscores)",
              "ana_b " + SESSION, who == null ? null : who[0] + " " + who[1]);
        check("no Spark Connect tag: no caller", null, Holdings.ownerOfTags("spark-session-x"));

        Set<String> open = Set.of(Holdings.sessionKey("ana", SESSION));
        Set<String> closed = Set.of();
        Lifetime ring = new Lifetime(new String[] {"ana", SESSION}, 0, 1000, false);
        check("a ring no query used yet waits while its session is open", "waiting", ring.state(open));
        check("... and has ended once its session closed", "ended", ring.state(closed));
        check("... and when this server lists no sessions", "ended", ring.state(null));
        CountDownLatch stop = new CountDownLatch(1);
        Thread query = new Thread(() -> {
            try {
                stop.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        query.start();
        ring.attach(query, "q1");
        check("a ring runs while its query's thread does, whatever its session", "running", ring.state(closed));
        check("a running ring is not over", false, ring.over(10_000, closed));
        stop.countDown();
        query.join();
        check("its query ended: the ring has ended, though its session is open", "ended", ring.state(open));
        check("not over within its grace period", false, ring.over(20_000, open));
        check("still not over before the grace period ends", false, ring.over(20_999, open));
        check("over once its grace period passed", true, ring.over(21_000, open));
        check("a listing says since when it ended",
              "ended 1000", ring.describe(21_000, open).get("state") + " " + ring.describe(21_000, open).get("ended_ms"));

        Lifetime feed = new Lifetime(new String[] {"ana", SESSION}, 0, 0, true);
        Thread reader = new Thread(() -> { });
        reader.start();
        reader.join();
        feed.attach(reader, "q2");
        check("a feed stays open while its session is, after its queries ended", "open", feed.state(open));
        check("a feed of a closed session, with no query, has ended", "ended", feed.state(closed));
        check("a grace period of 0 frees it at the first sweep that sees it ended", true, feed.over(5, closed));

        Fake mine = new Fake(false, "ana");
        Fake over = new Fake(true, "ana");
        Function<Object[], Object> failing = call -> {
            if ("sweep".equals(call[0])) {
                throw new OutOfMemoryError("a sweep that fails");
            }
            return "kind".equals(call[0]) ? "ring" : null;
        };
        Holdings.all().put(Holdings.key("ana", "check-kept"), mine);
        Holdings.all().put(Holdings.key("ana", "check-over"), over);
        Holdings.all().put(Holdings.key("ana", "check-failing"), failing);
        check("a sweep frees what is over and keeps the rest", "1 1 0 true false",
              Holdings.sweep(0, open) + " " + over.freed + " " + mine.freed + " "
              + Holdings.all().containsKey(Holdings.key("ana", "check-kept")) + " "
              + Holdings.all().containsKey(Holdings.key("ana", "check-over")));
        check("a holding whose sweep fails (an error, not an end) is kept", true,
              Holdings.all().get(Holdings.key("ana", "check-failing")) == failing);
        Holdings.all().remove(Holdings.key("ana", "check-failing"));
        mine.over = true;

        // a session's thread, with a class loader of its own, makes the next holding: the sweeper starts from it
        ClassLoader session = new java.net.URLClassLoader(new java.net.URL[0], HoldingsCheck.class.getClassLoader());
        Fake later = new Fake(false, "ana");
        Thread maker = new Thread(() -> Holdings.add(new String[] {"ana", SESSION}, "check-later", "ring",
                new Limits(10, 1000, 64, 1L << 40, 1L << 40, 0), () -> later));
        maker.setContextClassLoader(session);
        maker.start();
        maker.join();
        Thread sweeper = null;
        for (Thread thread : Thread.getAllStackTraces().keySet()) {
            if (thread.getName().equals("sparkscope-v3-sweeper")) {
                sweeper = thread;
            }
        }
        check("a new holding starts the sweeper: a daemon thread with the jar's class loader, not the session's",
              "true true true", (sweeper != null && sweeper.isAlive()) + " " + (sweeper != null && sweeper.isDaemon())
              + " " + (sweeper != null && sweeper.getContextClassLoader() == Holdings.class.getClassLoader()));
        later.over = true;
        long deadline = System.currentTimeMillis() + 30_000;
        while (sweeper != null && sweeper.isAlive() && System.currentTimeMillis() < deadline) {
            sweeper.join(100);
        }
        check("the sweeper frees what is over, then stops when nothing is left", "0 1 1 false",
              Holdings.all().size() + " " + mine.freed + " " + later.freed + " " + (sweeper != null
              && sweeper.isAlive()));

        Map<String, Object> answer = new LinkedHashMap<>();
        List<Object> list = new ArrayList<>();
        list.add("a\"b\\c\n\u0001\u00e9");
        list.add(null);
        answer.put("list", list);
        answer.put("n", 3L);
        answer.put("yes", true);
        // Jackson's JSON: a quote, a backslash and a control character escaped, the rest as it is
        check("an answer's JSON", "{\"list\":[\"a\\\"b\\\\c\\n\\u0001\u00e9\",null],\"n\":3,\"yes\":true}",
              Control.json(answer));
        System.exit(failed == 0 ? 0 : 1);
    }
}
