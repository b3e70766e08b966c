/*
 * What sparkscope keeps on a server: the rings of its bounded sink (sink/KeepNewest.java) and the feeds of its
 * memory source (feed/Feeds.java), each a "holding". This class is their registry, the owner check every use goes
 * through, and the sweeper that ends what nothing uses any more, without waiting for a client to come back.
 *
 * One registry per JVM and protocol, kept in the JVM's system properties: a server that got this jar as a session
 * artifact loads these classes once per session, and each session must see the holdings of the others (a second
 * REPL's :peek). So a holding is used only through a JDK interface (Function<Object[], Object>), never as a class of
 * this jar, and everything kept here is a JDK type.
 *
 * The protocol between the client and this jar is in the package's name (sparkscope.v2): a server where another
 * protocol's jar is loaded too keeps that one's classes and registry apart, so both work side by side. A client
 * asks `hello` first (Control.java) and compares PROTOCOL.
 *
 * Every holding answers these calls (the kinds add their own):
 *   {"kind"}                      "ring" or "feed"
 *   {"owner"}                     String[] {user, session}: who made it (null when that was not known)
 *   {"sweep", now, open}          Boolean: it is over (unused for its grace period); open: Holdings.openSessions()
 *   {"describe", now, open}       Map<String, Object> of JDK values: what a listing shows
 *   {"free"}                      let go of everything it holds (its rows, its scratch checkpoint)
 */
package sparkscope.v2;

import java.lang.reflect.Method;
import java.util.Collections;
import java.util.HashSet;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.SparkConf;
import org.apache.spark.sql.SparkSession;

import scala.jdk.javaapi.CollectionConverters;

public final class Holdings {
    /** The protocol this jar speaks; the package is named after it. */
    public static final int PROTOCOL = 2;
    /** The server's conf for how long a holding outlives its last use (Spark's time format: 15min, 30s). */
    public static final String GRACE_CONF = "spark.sparkscope.grace";
    static final String DEFAULT_GRACE = "15min";
    /** The error codes a client reads (sparkscope/client/errors.py). */
    public static final String NOT_OWNER = "SPARKSCOPE_NOT_OWNER";

    static final String REGISTRY = "sparkscope.v2.holdings";
    static final String LEARNED = "sparkscope.v2.sessions";
    static final String SWEEPER = "sparkscope.v2.sweeper";
    static final long SWEEP_EVERY_MS = 1000;
    static final String KEY_SEPARATOR = "\u0000";

    /** Spark Connect's job tag of an operation (ExecuteJobTag): it names the user and the session. */
    private static final Pattern OPERATION_TAG =
            Pattern.compile("SparkConnect_OperationTag_User_(.*)_Session_([0-9a-fA-F-]{36})_Operation_[^,]*");

    private Holdings() {
    }

    @SuppressWarnings("unchecked")
    static <T> T shared(String key, java.util.function.Supplier<T> made) {
        Properties properties = System.getProperties();
        synchronized (properties) {
            Object value = properties.get(key);
            if (value == null) {
                value = made.get();
                properties.put(key, value);
            }
            return (T) value;
        }
    }

    /** Every holding of this server, by name. */
    public static Map<String, Function<Object[], Object>> all() {
        return shared(REGISTRY, ConcurrentHashMap::new);
    }

    /** Keep a new holding (a name already taken keeps the first), and make sure the sweeper runs. */
    public static Function<Object[], Object> add(String name, Function<Object[], Object> holding) {
        Function<Object[], Object> kept = all().computeIfAbsent(name, key -> holding);
        sweeping();
        return kept;
    }

    /**
     * The holding `name` of `kind`, for the caller of this thread: refused (NOT_OWNER) to a caller of another user.
     * `rows`: the use reads or changes its contents, so a caller this JVM cannot tell is refused too; a use that
     * only asks for the schema (an analysis, which Spark Connect runs without naming its caller) is not.
     */
    public static Function<Object[], Object> use(String name, String kind, String gone, boolean rows) {
        Function<Object[], Object> holding = all().get(name);
        if (holding == null || !kind.equals(holding.apply(new Object[] {"kind"}))) {
            throw new IllegalStateException(gone);
        }
        check(holding, rows);
        return holding;
    }

    /** Refuse the caller of this thread a use of `holding` when another user made it (see use). */
    public static void check(Function<Object[], Object> holding, boolean rows) {
        String[] made = (String[]) holding.apply(new Object[] {"owner"});
        if (made == null) {  // made where no caller was known: anyone's
            return;
        }
        String owner = made[0];
        String[] caller = caller();
        if (caller == null ? rows : !owner.equals(caller[0])) {
            throw new SecurityException(NOT_OWNER + ": it belongs to user '" + owner + "'"
                    + (caller == null ? "; this call did not say which user makes it" : "")
                    + ": only that user's Spark Connect sessions read, change or drop it");
        }
    }

    /**
     * Who makes the call running in this thread: {user, session} of its Spark Connect session, or null when that
     * is not known. Spark Connect tags every operation it executes with them (a streaming query's thread keeps the
     * tag of the operation that started it); an analysis runs untagged, and is known by its Spark session when an
     * earlier operation of that session was seen here.
     */
    public static String[] caller() {
        SparkSession active;
        try {
            active = SparkSession.active();
        } catch (Exception none) {  // no Spark session in this thread (SparkException)
            return null;
        }
        String[] tagged = ownerOfTags(active.sparkContext().getLocalProperty("spark.job.tags"));
        Map<Object, String[]> learned = shared(LEARNED, () -> Collections.synchronizedMap(new WeakHashMap<>()));
        if (tagged != null) {
            learned.put(active, tagged);
            return tagged;
        }
        return learned.get(active);
    }

    /** {user, session} of the Spark Connect operation among a thread's job tags (comma-separated), or null. */
    static String[] ownerOfTags(String tags) {
        if (tags != null) {
            for (String tag : tags.split(",")) {
                Matcher match = OPERATION_TAG.matcher(tag.trim());
                if (match.matches()) {
                    return new String[] {match.group(1), match.group(2)};
                }
            }
        }
        return null;
    }

    /** The key openSessions() holds for a user's session. */
    public static String sessionKey(String user, String session) {
        return user + KEY_SEPARATOR + session;
    }

    /**
     * The Spark Connect sessions open on this server now (sessionKey each), or null when this server does not say.
     * Listing them does not touch them: an idle session still times out.
     */
    public static Set<String> openSessions() {
        try {
            Class<?> service = Class.forName("org.apache.spark.sql.connect.service.SparkConnectService$");
            Object module = service.getField("MODULE$").get(null);
            Object manager = service.getMethod("sessionManager").invoke(module);
            Object listed = manager.getClass().getMethod("listActiveSessions").invoke(manager);
            Set<String> open = new HashSet<>();
            Method user = null;
            Method session = null;
            for (Object info : CollectionConverters.asJava((scala.collection.Iterable<?>) listed)) {
                if (user == null) {
                    user = info.getClass().getMethod("userId");
                    session = info.getClass().getMethod("sessionId");
                }
                open.add(sessionKey((String) user.invoke(info), (String) session.invoke(info)));
            }
            return open;
        } catch (ReflectiveOperationException | LinkageError | ClassCastException notConnect) {
            return null;
        }
    }

    /** How long a holding outlives its last use: `givenMs` when the client gave one (0 or more), else the server's. */
    public static long graceMs(long givenMs) {
        if (givenMs >= 0) {
            return givenMs;
        }
        SparkConf conf = SparkSession.active().sparkContext().getConf();
        return conf.getTimeAsMs(GRACE_CONF, DEFAULT_GRACE);
    }

    /** Drop a holding now: what it holds is let go of. Whether it was there. */
    public static boolean forget(String name) {
        Function<Object[], Object> holding = all().remove(name);
        if (holding != null) {
            holding.apply(new Object[] {"free"});
        }
        return holding != null;
    }

    /**
     * The sweeper: one daemon thread per JVM and protocol, while there is something to sweep. It ends when the
     * registry is empty, so that no thread (nor the class loader it runs from) is left once everything ended; the
     * next holding starts another. It inherits nothing of the thread that starts it (no session, no class loader).
     */
    static void sweeping() {
        Properties properties = System.getProperties();
        synchronized (properties) {
            Object running = properties.get(SWEEPER);
            if (running instanceof Thread && ((Thread) running).isAlive()) {
                return;
            }
            Thread sweeper = new Thread(null, Holdings::sweepUntilEmpty, "sparkscope-v2-sweeper", 0, false);
            sweeper.setDaemon(true);
            sweeper.setContextClassLoader(Holdings.class.getClassLoader());
            properties.put(SWEEPER, sweeper);
            sweeper.start();
        }
    }

    private static void sweepUntilEmpty() {
        Properties properties = System.getProperties();
        while (true) {
            try {
                Thread.sleep(SWEEP_EVERY_MS);
            } catch (InterruptedException stop) {
                synchronized (properties) {
                    properties.remove(SWEEPER, Thread.currentThread());
                }
                return;
            }
            synchronized (properties) {
                if (all().isEmpty()) {
                    properties.remove(SWEEPER, Thread.currentThread());
                    return;
                }
            }
            sweep(System.currentTimeMillis(), openSessions());
        }
    }

    /** End every holding that is over: removed from the registry, then freed. Returns how many ended. */
    public static int sweep(long now, Set<String> open) {
        int ended = 0;
        for (Map.Entry<String, Function<Object[], Object>> entry : all().entrySet()) {
            Function<Object[], Object> holding = entry.getValue();
            boolean over;
            try {
                over = Boolean.TRUE.equals(holding.apply(new Object[] {"sweep", now, open}));
            } catch (Throwable unusable) {  // its class loader is gone (an artifact of a closed session): drop it
                over = true;
            }
            if (over && all().remove(entry.getKey(), holding)) {
                ended++;
                try {
                    holding.apply(new Object[] {"free"});
                } catch (Throwable unusable) {
                    // nothing more can be done for it: the registry no longer holds it
                }
            }
        }
        return ended;
    }
}
