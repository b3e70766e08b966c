/*
 * How much one user may keep on this server, enforced here, in the JVM, whatever a client sends: the client's own
 * checks (sparkscope/client/queries/planning.py) are the friendlier first line, never the bound. Each limit is a
 * server setting; past one, the answer is one line (SPARKSCOPE_LIMIT) naming the limit, its value and the setting.
 *
 *   spark.sparkscope.limit.rows        rows one ring keeps                         1000000
 *   spark.sparkscope.limit.grace       the longest grace period a client may ask  7d
 *   spark.sparkscope.limit.holdings    rings and feeds of one user at once        64
 *   spark.sparkscope.limit.bytes       the heap one user's rings and feeds take    an eighth of the driver's heap
 *   spark.sparkscope.limit.totalBytes  the heap every user's take together         a quarter of the driver's heap
 *   spark.sparkscope.grace             the grace period when a client asks none   15min
 *
 * The bytes are a bound in every batch: a ring's writers send the driver at most the user's bytes (shared among the
 * batch's tasks), and a ring whose batch would take the user past either byte limit keeps its newest rows that fit.
 * A feed's batch that would is refused.
 */
package sparkscope.v3;

import java.text.NumberFormat;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;

public final class Limits {
    public static final String CODE = "SPARKSCOPE_LIMIT";
    public static final String ROWS = "spark.sparkscope.limit.rows";
    public static final String GRACE = "spark.sparkscope.limit.grace";
    public static final String HOLDINGS = "spark.sparkscope.limit.holdings";
    public static final String BYTES = "spark.sparkscope.limit.bytes";
    public static final String TOTAL_BYTES = "spark.sparkscope.limit.totalBytes";
    public static final String DEFAULT_GRACE = "spark.sparkscope.grace";
    static final int MAX_NAME = 200;  // characters of a name: the client's own limit for a query's name

    final long rows;
    final long graceMs;
    public final int holdings;
    final long bytes;
    final long totalBytes;
    final long defaultGraceMs;

    public Limits(long rows, long graceMs, int holdings, long bytes, long totalBytes, long defaultGraceMs) {
        this.rows = rows;
        this.graceMs = graceMs;
        this.holdings = holdings;
        this.bytes = bytes;
        this.totalBytes = totalBytes;
        this.defaultGraceMs = Math.min(defaultGraceMs, graceMs);
    }

    /** This server's limits: its settings, else the defaults (the byte limits from the driver's heap). */
    public static Limits server() {
        SparkEnv env = SparkEnv.get();
        SparkConf conf = env == null ? new SparkConf(false) : env.conf();
        long heap = Runtime.getRuntime().maxMemory();
        return new Limits(conf.getLong(ROWS, 1_000_000L), conf.getTimeAsMs(GRACE, "7d"), conf.getInt(HOLDINGS, 64),
                conf.getSizeAsBytes(BYTES, String.valueOf(heap / 8)),
                conf.getSizeAsBytes(TOTAL_BYTES, String.valueOf(heap / 4)),
                conf.getTimeAsMs(DEFAULT_GRACE, "15min"));
    }

    /** The limits as a listing shows them (`hello`, `sparkscope server check`). */
    public Map<String, Object> describe() {
        Map<String, Object> facts = new LinkedHashMap<>();
        facts.put(ROWS, rows);
        facts.put(GRACE + "_ms", graceMs);
        facts.put(HOLDINGS, holdings);
        facts.put(BYTES, bytes);
        facts.put(TOTAL_BYTES, totalBytes);
        return facts;
    }

    static String number(long value) {
        return NumberFormat.getIntegerInstance(Locale.ROOT).format(value);
    }

    static IllegalArgumentException past(String what, String setting) {
        return new IllegalArgumentException(CODE + ": " + what + " (" + setting + " on the server raises it)");
    }

    /** The rows a ring may keep: `asked`, or a refusal past the limit. */
    public int rows(long asked) {
        if (asked < 0 || asked > rows) {
            throw past("a ring keeps at most " + number(rows) + " rows on this server, and " + number(asked)
                    + " were asked for", ROWS);
        }
        return (int) asked;
    }

    /** The grace period of a holding: `askedMs` when the client gave one (0 or more), else the server's default. */
    public long graceMs(long askedMs) {
        if (askedMs < 0) {
            return defaultGraceMs;
        }
        if (askedMs > graceMs) {
            throw past("a grace period is at most " + duration(graceMs) + " on this server, and "
                    + duration(askedMs) + " was asked for", GRACE);
        }
        return askedMs;
    }

    void checkName(String name) {
        if (name.length() > MAX_NAME || name.contains(Holdings.KEY_SEPARATOR)) {
            throw past("a name has at most " + MAX_NAME + " characters and no NUL, and this one has "
                    + number(name.length()), "no setting");
        }
    }

    void checkCount(int held) {
        if (held >= holdings) {
            throw past("one user keeps at most " + number(holdings) + " rings and feeds at once on this server, and "
                    + "you keep " + number(held) + " (sparkscope server kept --free frees those that ended)", HOLDINGS);
        }
    }

    /** The bytes `holding` of `user` may take: what the others leave of both byte limits. */
    public long bytesFor(String user, Object holding) {
        long[] others = Holdings.bytesHeld(user, holding);
        return Math.max(0, Math.min(bytes - others[0], totalBytes - others[1]));
    }

    /**
     * The bytes `holding` of `user` may take when it needs `wanted`: first the user's holdings that nothing uses any
     * more (ended, in their grace period) are freed, the longest ended first, as far as that makes room for it.
     */
    public long roomFor(String user, Object holding, long wanted) {
        long allowed = bytesFor(user, holding);
        if (wanted > allowed) {
            Holdings.freeEnded(user, holding, Integer.MAX_VALUE, wanted - allowed);
            allowed = bytesFor(user, holding);
        }
        return allowed;
    }

    /** Which byte limit leaves `holding` of `user` the least room now: its setting's name. */
    public String tighterBytes(String user, Object holding) {
        long[] others = Holdings.bytesHeld(user, holding);
        return bytes - others[0] <= totalBytes - others[1] ? BYTES : TOTAL_BYTES;
    }

    /** A refusal of `adding` more bytes for `user`, who holds `held` now. */
    public IllegalArgumentException tooManyBytes(String user, Object holding, long adding) {
        String setting = tighterBytes(user, holding);
        long limit = BYTES.equals(setting) ? bytes : totalBytes;
        return past("this batch takes " + number(adding) + " bytes, more than is left of the " + number(limit)
                + "-byte limit of what " + (BYTES.equals(setting) ? "one user keeps" : "all users keep together")
                + " on this server", setting);
    }

    static String duration(long ms) {
        long[] sizes = {86_400_000L, 3_600_000L, 60_000L, 1000L};
        String[] units = {" days", " h", " min", " s"};
        for (int i = 0; i < sizes.length; i++) {
            if (ms >= sizes[i]) {
                return ms % sizes[i] == 0 ? number(ms / sizes[i]) + units[i]
                        : String.format(Locale.ROOT, "%,.1f", (double) ms / sizes[i]) + units[i];
            }
        }
        return ms + " ms";
    }
}
