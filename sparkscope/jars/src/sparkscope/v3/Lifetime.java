/*
 * When a holding (Holdings.java) ends, without the client: its owner, the queries that use it, and its grace period.
 *
 * A holding is in use while a streaming query that uses it runs (the query's own thread is alive: a stopped,
 * failed or abandoned query's thread ends, whoever stopped it), and, before any query used it, while the session
 * that made it is open on the server. A feed is also in use while that session is open: a test may start a query
 * on it later. Once not in use for its grace period, it is over, and the sweeper frees it.
 */
package sparkscope.v3;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;

public final class Lifetime {
    final String user;
    final String session;
    final long created;
    final long graceMs;
    private final boolean whileSessionOpen;
    private final Map<Thread, String> queries = new WeakHashMap<>();  // the thread of each query run that used it
    private String lastQuery = "";
    private long endedAt = -1;

    /**
     * `owner`: {user, session} of its maker (null: not known, then anyone may use it; Spark Connect's user "" is a
     * user like any other). `whileSessionOpen`: in use while its session is open, even after queries used it (a
     * feed); otherwise only until the first query does.
     */
    public Lifetime(String[] owner, long created, long graceMs, boolean whileSessionOpen) {
        this.user = owner == null ? null : owner[0];
        this.session = owner == null ? null : owner[1];
        this.created = created;
        this.graceMs = graceMs;
        this.whileSessionOpen = whileSessionOpen;
    }

    /** The user that made it, or null when that was not known. */
    public String user() {
        return user;
    }

    /** {user, session} of its maker, or null when that was not known. */
    public String[] owner() {
        return user == null ? null : new String[] {user, session};
    }

    /** A query's thread uses it now (called from that thread). */
    public synchronized void attach(Thread thread, String queryId) {
        queries.put(thread, queryId);
        lastQuery = queryId == null ? "" : queryId;
    }

    /** The id of the query that used it last ("" before any). */
    public synchronized String lastQuery() {
        return lastQuery;
    }

    /** "running": a query that uses it runs; "waiting": none yet, its session is open; "open": a feed's session is
     * open; "ended": nothing uses it. `open`: Holdings.openSessions() (null: not known, taken as closed). */
    public synchronized String state(Set<String> open) {
        for (Thread thread : queries.keySet()) {
            if (thread.isAlive()) {
                return "running";
            }
        }
        boolean sessionOpen = open != null && user != null && open.contains(Holdings.sessionKey(user, session));
        if (sessionOpen && (whileSessionOpen || queries.isEmpty())) {
            return whileSessionOpen ? "open" : "waiting";
        }
        return "ended";
    }

    /** Over: not in use for its grace period. Its end is when a sweep or a listing first saw it unused. */
    public synchronized boolean over(long now, Set<String> open) {
        return "ended".equals(seen(now, open)) && now - endedAt >= graceMs;
    }

    /** Since when nothing uses it (the time a sweep, a listing or this call first saw it unused), or -1 while in use. */
    public synchronized long endedAt(long now, Set<String> open) {
        return "ended".equals(seen(now, open)) ? endedAt : -1;
    }

    private String seen(long now, Set<String> open) {
        String state = state(open);
        if (!"ended".equals(state)) {
            endedAt = -1;
        } else if (endedAt < 0) {
            endedAt = now;
        }
        return state;
    }

    /** What a listing shows of it, with the kind's own facts added after. */
    public synchronized Map<String, Object> describe(long now, Set<String> open) {
        Map<String, Object> facts = new LinkedHashMap<>();
        facts.put("user", user);
        facts.put("session", session);
        String state = seen(now, open);
        facts.put("state", state);
        facts.put("query_id", lastQuery);
        facts.put("age_ms", now - created);
        facts.put("ended_ms", "ended".equals(state) ? now - endedAt : null);
        facts.put("grace_ms", graceMs);
        return facts;
    }
}
