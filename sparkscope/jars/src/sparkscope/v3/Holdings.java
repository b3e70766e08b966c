/*
 * What sparkscope keeps on a server: the rings of its bounded sink (sink/KeepNewest.java) and the feeds of its
 * memory source (feed/Feeds.java), each a "holding". This class is their registry, keyed by owner, and the sweeper
 * that ends what nothing uses any more, without waiting for a client to come back.
 *
 * A holding's name is its owner's: two users may both have a ring named `orders`, and a caller only ever finds its
 * own user's holdings (so asking for another user's name is the same as asking for a name nobody has). The owner is
 * the Spark Connect user of the operation that made it (Holdings.caller). On a server sparkscope started, that user
 * is an identity: the jar's interceptor (identity/UserTokens.java) lets a request name only its token's user. On
 * any other server it is a label the client picks (docs/security.md says what then still holds).
 *
 * Where the registry lives: on a server that has this jar on its class path (every server sparkscope starts), in
 * this class's own fields, one registry per JVM. Where the jar came as a session artifact (a server sparkscope did
 * not start), each session loads these classes in a class loader of its own, yet a user's sessions must all see the
 * same holdings (a second REPL's :peek): there the registry is kept in the JVM's system properties, under JDK types
 * only. Either way a holding is used only through a JDK interface (Function<Object[], Object>).
 *
 * The protocol between the client and this jar is in the package's name (sparkscope.v3): a server where another
 * protocol's jar is loaded too keeps that one's classes and registry apart, so both work side by side. A client
 * asks `hello` first (Control.java) and compares PROTOCOL.
 *
 * Every holding answers these calls (the kinds add their own):
 *   {"kind"}                      "ring" or "feed"
 *   {"owner"}                     String[] {user, session}: who made it (null when that was not known)
 *   {"bytes"}                     Long: the heap its rows take now (kept as they come: no row is walked to answer)
 *   {"ended", now, open}          Long: since when nothing uses it, or -1 while something does (never waits for
 *                                  the holding's own lock: another holding asks it while it holds its own)
 *   {"sweep", now, open}          Boolean: it is over (unused for its grace period); open: Holdings.openSessions()
 *   {"describe", now, open}       Map<String, Object> of JDK values: what a listing shows
 *   {"free"}                      let go of everything it holds (its rows, its scratch checkpoint)
 */
package sparkscope.v3;

import java.lang.reflect.Method;
import java.net.URI;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.SparkEnv;
import org.apache.spark.sql.SparkSession;

import scala.jdk.javaapi.CollectionConverters;
import sparkscope.v3.identity.Identity;

public final class Holdings {
    /** The protocol this jar speaks; the package is named after it. */
    public static final int PROTOCOL = 3;
    /** The error codes a client reads (sparkscope/client/errors.py). */
    public static final String NOT_OWNER = "SPARKSCOPE_NOT_OWNER";

    static final String REGISTRY = "sparkscope.v3.holdings";
    static final String LEARNED = "sparkscope.v3.sessions";
    static final String SWEEPER = "sparkscope.v3.sweeper";
    static final long SWEEP_EVERY_MS = 1000;
    static final String KEY_SEPARATOR = "\u0000";
    static final String ANYONE = "\u0001";  // the owner part of a key for a holding made where no caller was known

    /** Spark Connect's job tag of an operation (ExecuteJobTag): it names the user and the session. */
    private static final Pattern OPERATION_TAG =
            Pattern.compile("SparkConnect_OperationTag_User_(.*)_Session_([0-9a-fA-F-]{36})_Operation_[^,]*");

    /** True where this jar is on the server's class path (one copy of these classes for the JVM). */
    public static final boolean ON_CLASS_PATH = onClassPath();
    private static final Map<String, Function<Object[], Object>> HOLDINGS =
            jvmWide(REGISTRY, ConcurrentHashMap::new);
    private static final Map<Object, String[]> CALLERS =
            jvmWide(LEARNED, () -> Collections.synchronizedMap(new WeakHashMap<>()));
    private static final AtomicReference<ScheduledExecutorService> SWEEPING = jvmWide(SWEEPER, AtomicReference::new);

    private Holdings() {
    }

    /** One object for the whole JVM: this class's own where it is on the class path, else the system properties'. */
    @SuppressWarnings("unchecked")
    static <T> T jvmWide(String key, Supplier<T> made) {
        if (ON_CLASS_PATH) {
            return made.get();
        }
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

    /** Whether these classes come from a jar in the server's spark.jars (not from a session's artifact). */
    static boolean onClassPath() {
        try {
            URI here = Holdings.class.getProtectionDomain().getCodeSource().getLocation().toURI();
            Path jar = Paths.get(here).toRealPath();
            SparkEnv env = SparkEnv.get();
            if (env == null) {
                return false;
            }
            for (String listed : env.conf().get("spark.jars", "").split(",")) {
                String path = listed.trim().startsWith("file:") ? Paths.get(URI.create(listed.trim())).toString()
                        : listed.trim();
                if (!path.isEmpty() && Paths.get(path).toRealPath().equals(jar)) {
                    return true;
                }
            }
            return false;
        } catch (Exception | LinkageError unknown) {
            return false;
        }
    }

    /** Every holding of this server, by key (owner and name). */
    public static Map<String, Function<Object[], Object>> all() {
        return HOLDINGS;
    }

    /** The registry's key of `owner`'s holding `name` (owner null: made where no caller was known). */
    public static String key(String owner, String name) {
        return (owner == null ? ANYONE : owner) + KEY_SEPARATOR + name;
    }

    /** The user part of a key (null for a holding of no known owner). */
    static String ownerOfKey(String key) {
        String owner = key.substring(0, key.indexOf(KEY_SEPARATOR));
        return ANYONE.equals(owner) ? null : owner;
    }

    /**
     * Keep a new holding `name` for `owner` ({user, session} or null), made by `make` once the owner's limits allow
     * it (nothing is made when they do not: no folder, no hook). A name the owner already has keeps the first.
     */
    public static Function<Object[], Object> add(String[] owner, String name, String kind, Limits limits,
                                                 Supplier<Function<Object[], Object>> make) {
        String user = owner == null ? null : owner[0];
        String key = key(user, name);
        limits.checkName(name);
        Function<Object[], Object> kept;
        synchronized (HOLDINGS) {
            kept = HOLDINGS.get(key);
            if (kept == null) {
                int held = countOf(user);
                if (held >= limits.holdings) {  // what ended (in its grace period) makes room for what is new
                    freeEnded(user, null, held - limits.holdings + 1, Long.MAX_VALUE);
                    held = countOf(user);
                }
                limits.checkCount(held);
                kept = make.get();
                HOLDINGS.put(key, kept);
            }
        }
        if (!kind.equals(kept.apply(new Object[] {"kind"}))) {
            throw new IllegalStateException("SPARKSCOPE_NAME_TAKEN: you already have a " + kept.apply(
                    new Object[] {"kind"}) + " named '" + name + "', so no " + kind + " can have that name");
        }
        sweeping();
        return kept;
    }

    /**
     * Free `user`'s holdings that nothing uses any more (ended, in their grace period), the longest ended first,
     * besides `besides`: until `count` were freed or `bytes` were. What they keep was only there for a :peek of a
     * stopped query; a new query's rows need the room. Returns the bytes freed.
     */
    public static long freeEnded(String user, Object besides, int count, long bytes) {
        long now = System.currentTimeMillis();
        Set<String> open = openSessions();
        String prefix = key(user, "");
        List<Map.Entry<String, Function<Object[], Object>>> ended = new ArrayList<>();
        Map<Object, Long> since = new java.util.IdentityHashMap<>();
        for (Map.Entry<String, Function<Object[], Object>> entry : HOLDINGS.entrySet()) {
            if (entry.getKey().startsWith(prefix) && entry.getValue() != besides) {
                long at = endedAt(entry.getValue(), now, open);
                if (at >= 0) {
                    ended.add(entry);
                    since.put(entry.getValue(), at);
                }
            }
        }
        ended.sort(java.util.Comparator.comparingLong(entry -> since.get(entry.getValue())));
        long freed = 0;
        int done = 0;
        for (Map.Entry<String, Function<Object[], Object>> entry : ended) {
            if (done >= count || freed >= bytes) {
                break;
            }
            long size = bytesOf(entry.getValue());
            if (HOLDINGS.remove(entry.getKey(), entry.getValue())) {
                entry.getValue().apply(new Object[] {"free"});
                freed += size;
                done++;
            }
        }
        return freed;
    }

    static long endedAt(Function<Object[], Object> holding, long now, Set<String> open) {
        try {
            return ((Number) holding.apply(new Object[] {"ended", now, open})).longValue();
        } catch (RuntimeException | LinkageError unknown) {
            return -1;  // an error is not an end
        }
    }

    /** How many holdings `user` has now. */
    static int countOf(String user) {
        String prefix = key(user, "");
        int count = 0;
        for (String key : HOLDINGS.keySet()) {
            if (key.startsWith(prefix)) {
                count++;
            }
        }
        return count;
    }

    /**
     * The holding `name` of `kind` of the caller of this thread, or `gone` (an IllegalStateException) when the caller
     * has none of that name and kind. Another user's holding of the same name is never found. A caller this JVM
     * cannot tell (an untagged analysis on a server that does not say who calls) finds a holding of no known owner,
     * or the only holding of that name when it only asks for the schema (`rows` false).
     */
    public static Function<Object[], Object> use(String name, String kind, String gone, boolean rows) {
        String[] caller = caller();
        Function<Object[], Object> holding = caller != null ? HOLDINGS.get(key(caller[0], name)) : null;
        if (holding == null) {
            holding = HOLDINGS.get(key(null, name));
        }
        if (holding == null && caller == null && !rows) {
            holding = onlyOneNamed(name);
        }
        if (holding == null || !kind.equals(holding.apply(new Object[] {"kind"}))) {
            throw new IllegalStateException(gone);
        }
        return holding;
    }

    private static Function<Object[], Object> onlyOneNamed(String name) {
        Function<Object[], Object> found = null;
        for (Map.Entry<String, Function<Object[], Object>> entry : HOLDINGS.entrySet()) {
            if (entry.getKey().endsWith(KEY_SEPARATOR + name)) {
                if (found != null) {
                    return null;
                }
                found = entry.getValue();
            }
        }
        return found;
    }

    /**
     * Who makes the call running in this thread: {user, session} of its Spark Connect session, or null when that
     * is not known. Spark Connect tags every operation it executes with them (a streaming query's thread keeps the
     * tag of the operation that started it). An analysis runs untagged: the jar's interceptor names its caller where
     * it runs, and elsewhere it is known by its Spark session when an earlier operation of that session was seen here.
     */
    public static String[] caller() {
        SparkSession active;
        try {
            active = SparkSession.active();
        } catch (Exception none) {  // no Spark session in this thread (SparkException)
            return Identity.current();
        }
        String[] tagged = ownerOfTags(active.sparkContext().getLocalProperty("spark.job.tags"));
        if (tagged != null) {
            CALLERS.put(active, tagged);
            return tagged;
        }
        String[] current = Identity.current();
        return current != null ? current : CALLERS.get(active);
    }

    /** {user, session} of the Spark Connect operation among a thread's job tags (comma-separated), or null. */
    public static String[] ownerOfTags(String tags) {
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

    /** Drop the holding under `key` now: what it holds is let go of. Whether it was there. */
    public static boolean forget(String key) {
        Function<Object[], Object> holding = HOLDINGS.remove(key);
        if (holding != null) {
            holding.apply(new Object[] {"free"});
        }
        return holding != null;
    }

    /** The heap that `user`'s holdings but `besides` take now, and all of them together: {user's, everyone's}. */
    public static long[] bytesHeld(String user, Object besides) {
        String prefix = key(user, "");
        long mine = 0;
        long everyone = 0;
        for (Map.Entry<String, Function<Object[], Object>> entry : HOLDINGS.entrySet()) {
            if (entry.getValue() == besides) {
                continue;
            }
            long bytes = bytesOf(entry.getValue());
            everyone += bytes;
            if (entry.getKey().startsWith(prefix)) {
                mine += bytes;
            }
        }
        return new long[] {mine, everyone};
    }

    static long bytesOf(Function<Object[], Object> holding) {
        try {
            return ((Number) holding.apply(new Object[] {"bytes"})).longValue();
        } catch (RuntimeException | LinkageError unknown) {
            return 0;
        }
    }

    /**
     * The sweeper: one scheduled thread per JVM and protocol, while there is something to sweep. It stops when the
     * registry is empty, so that no thread (nor the class loader it runs from) is left once everything ended; the
     * next holding starts it again.
     */
    static void sweeping() {
        synchronized (SWEEPING) {
            ScheduledExecutorService running = SWEEPING.get();
            if (running != null && !running.isShutdown()) {
                return;
            }
            ScheduledExecutorService sweeper = Executors.newSingleThreadScheduledExecutor(task -> {
                Thread thread = new Thread(null, task, "sparkscope-v3-sweeper", 0, false);
                thread.setDaemon(true);
                thread.setContextClassLoader(Holdings.class.getClassLoader());
                return thread;
            });
            sweeper.scheduleWithFixedDelay(Holdings::sweepOrStop, SWEEP_EVERY_MS, SWEEP_EVERY_MS,
                    TimeUnit.MILLISECONDS);
            SWEEPING.set(sweeper);
        }
    }

    private static void sweepOrStop() {
        synchronized (SWEEPING) {
            if (HOLDINGS.isEmpty()) {
                ScheduledExecutorService sweeper = SWEEPING.getAndSet(null);
                if (sweeper != null) {
                    sweeper.shutdown();
                }
                return;
            }
        }
        sweep(System.currentTimeMillis(), openSessions());
    }

    /**
     * End every holding that is over: removed from the registry, then freed. Returns how many ended. Only a
     * holding's own answer ends it (its query ended, its session closed, and its grace period passed): a holding that
     * fails to answer is kept, and asked again at the next sweep (an error is not an end: an OutOfMemoryError in a
     * sweep must not free the rows of a query that still runs).
     */
    public static int sweep(long now, Set<String> open) {
        int ended = 0;
        List<String> failed = new ArrayList<>();
        for (Map.Entry<String, Function<Object[], Object>> entry : HOLDINGS.entrySet()) {
            Function<Object[], Object> holding = entry.getValue();
            boolean over;
            try {
                over = Boolean.TRUE.equals(holding.apply(new Object[] {"sweep", now, open}));
            } catch (Throwable unanswered) {
                failed.add(entry.getKey().replace(KEY_SEPARATOR, "/"));
                continue;
            }
            if (over && HOLDINGS.remove(entry.getKey(), holding)) {
                ended++;
                try {
                    holding.apply(new Object[] {"free"});
                } catch (Throwable unusable) {
                    // nothing more can be done for it: the registry no longer holds it
                }
            }
        }
        if (!failed.isEmpty()) {
            System.err.println("sparkscope: these holdings did not answer the sweep and are kept: " + failed);
        }
        return ended;
    }
}
