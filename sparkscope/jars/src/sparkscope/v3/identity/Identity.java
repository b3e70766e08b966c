/*
 * Who a request is, on a server sparkscope started: the users file the server reads, and what a request with a given
 * token may say of its user. The interceptor (UserTokens.java) applies it to every request; this class holds no gRPC
 * type, so the rest of the jar (Holdings, Control) asks it without loading gRPC, also on a server without the
 * interceptor (where `active()` is false and a user id is a label).
 *
 * The users file (`spark.sparkscope.users` names it; sparkscope/server/users.py writes it, mode 0600): one line per
 * token holder, `NAME <TAB> SHA-256 of the token, hex [<TAB> when it was added]`. NAME `*` is the server's own token
 * (its owner's, the admin's). Only hashes are kept: a token is 32 random bytes, so its hash cannot be turned back.
 *
 * What a request may say of its user (decide):
 *   - a user's token: the request runs as that user. A request that names another user of this server is refused
 *     (SPARKSCOPE_NOT_YOUR_USER); any other id it names (pyspark sends the login name, $USER) is taken as the token's
 *     user: it is rewritten, so the session the server opens or joins is always the token's user's.
 *   - the server's token: the request runs as the id it names, unless that id is a user's of this file (refused):
 *     the admin reaches no user's sessions, and everything that used one token before users existed goes on as it was.
 *   - the worker token: Spark's own Python workers (foreachBatch, listeners) that the server started call back into
 *     their query's session with it; it is never sent to a client (UserTokens.java).
 */
package sparkscope.v3.identity;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

public final class Identity {
    public static final String USERS_CONF = "spark.sparkscope.users";
    public static final String ADMIN = "*";
    public static final String WORKER = "*worker";
    public static final String NOT_YOUR_USER = "SPARKSCOPE_NOT_YOUR_USER";
    public static final String NO_TOKEN = "SPARKSCOPE_NO_TOKEN";
    public static final String UNKNOWN_TOKEN = "SPARKSCOPE_UNKNOWN_TOKEN";

    /** {user, session} of the request this thread runs (set by the interceptor around each request it passes on). */
    static final ThreadLocal<String[]> CURRENT = new ThreadLocal<>();
    private static volatile Users users;  // set by the interceptor: null where there is none

    private Identity() {
    }

    /** Whether this server checks who calls (the interceptor runs): a user id is then an identity, not a label. */
    public static boolean active() {
        return users != null;
    }

    static void use(Users known) {
        users = known;
    }

    /** The request of this thread, {user, session}, where the interceptor passed it on; else null. */
    public static String[] current() {
        String[] current = CURRENT.get();
        return current == null ? null : current.clone();
    }

    /**
     * Whether `user` is the server's owner here: on a server that checks who calls, any id that is no user's of the
     * users file is one only the server's own token (or its Python workers) can act as.
     */
    public static boolean isAdmin(String user) {
        Users known = users;
        return known != null && user != null && !known.names.contains(user);
    }

    /** The users of this server now (names only), or an empty set where it does not check who calls. */
    public static Set<String> userNames() {
        Users known = users;
        return known == null ? Collections.emptySet() : Collections.unmodifiableSet(known.names);
    }

    /** The hex SHA-256 of a token, as the users file keeps it. */
    public static String hash(String token) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8));
            StringBuilder hex = new StringBuilder();
            for (byte b : digest) {
                hex.append(String.format("%02x", b & 0xff));
            }
            return hex.toString();
        } catch (NoSuchAlgorithmException never) {
            throw new IllegalStateException(never);
        }
    }

    /** The users file read: who each token hash belongs to. */
    public static final class Users {
        final Map<String, String> byHash;
        final Set<String> names;

        Users(Map<String, String> byHash) {
            this.byHash = byHash;
            Set<String> named = new HashSet<>(byHash.values());
            named.remove(ADMIN);
            this.names = named;
        }

        /** The file's users; an unreadable or missing file knows nobody (every token is then refused). */
        public static Users read(Path file) {
            Map<String, String> byHash = new HashMap<>();
            try {
                for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                    String[] fields = line.split("\t");
                    if (line.startsWith("#") || fields.length < 2 || fields[1].length() != 64) {
                        continue;
                    }
                    byHash.put(fields[1].toLowerCase(), fields[0]);
                }
            } catch (IOException unreadable) {
                return new Users(Collections.emptyMap());
            }
            return new Users(byHash);
        }

        /** Who holds `token`: a user's name, ADMIN, or null for a token this file does not know. */
        public String holder(String token) {
            String found = null;
            String wanted = hash(token);
            for (Map.Entry<String, String> entry : byHash.entrySet()) {  // every hash compared in full, in constant time
                if (MessageDigest.isEqual(entry.getKey().getBytes(StandardCharsets.US_ASCII),
                        wanted.getBytes(StandardCharsets.US_ASCII))) {
                    found = entry.getValue();
                }
            }
            return found;
        }

        public Set<String> names() {
            return Collections.unmodifiableSet(names);
        }
    }

    /** What a request may do: run as `user`, or be refused with `refusal` (one line). */
    public static final class Verdict {
        public final String user;
        public final String refusal;

        private Verdict(String user, String refusal) {
            this.user = user;
            this.refusal = refusal;
        }

        static Verdict runAs(String user) {
            return new Verdict(user, null);
        }

        static Verdict refused(String why) {
            return new Verdict(null, why);
        }
    }

    /** What a request of `holder` (a user's name, ADMIN or WORKER) that names user `claimed` ("" for none) may do. */
    public static Verdict decide(String holder, String claimed, Set<String> names) {
        String named = claimed == null ? "" : claimed;
        if (WORKER.equals(holder)) {
            return Verdict.runAs(named);
        }
        if (ADMIN.equals(holder)) {
            return names.contains(named)
                    ? Verdict.refused(NOT_YOUR_USER + ": '" + named + "' is a user of this server with a token of "
                        + "their own, and only that token acts as '" + named + "'; connect with another user_id")
                    : Verdict.runAs(named);
        }
        if (named.equals(holder) || !names.contains(named)) {
            return Verdict.runAs(holder);
        }
        return Verdict.refused(NOT_YOUR_USER + ": this token is user '" + holder + "''s, and the request names "
                + "user '" + named + "'; connect as " + holder + " (;user_id=" + holder + "), or without a user_id");
    }
}
