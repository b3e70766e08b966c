/*
 * Who a request is and whose a holding is, checked in a JVM of its own (tests/unit/server/test_jar.py): the users
 * file and its token hashes, what a request with each kind of token may say of its user, and that a holding's name
 * is its owner's (two users may have the same name; neither finds the other's), with the limits on names and counts.
 * Prints one line per check, "ok NAME" or "FAIL NAME: why", and exits 1 when one failed.
 */
package sparkscope.v3.identity;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.function.Function;

import sparkscope.v3.Holdings;
import sparkscope.v3.Limits;

public final class IdentityCheck {
    static int failed = 0;
    static final String ANA_SESSION = "8ba8e485-3677-4945-a9de-3ee7e1b7f173";
    static final String BOB_SESSION = "0c0e2f5e-1b1d-4c3e-9a7e-2f4d5e6a7b8c";

    static void check(String name, Object expected, Object actual) {
        if (String.valueOf(expected).equals(String.valueOf(actual))) {
            System.out.println("ok " + name);
        } else {
            failed++;
            System.out.println("FAIL " + name + ": expected [" + expected + "] got [" + actual + "]");
        }
    }

    static String verdict(String holder, String claimed, Set<String> names) {
        Identity.Verdict verdict = Identity.decide(holder, claimed, names);
        return verdict.refusal != null ? "refused: " + verdict.refusal : "runs as '" + verdict.user + "'";
    }

    /** A holding of `kind` that answers what Holdings asks. */
    static Function<Object[], Object> holding(String kind) {
        return call -> "kind".equals(call[0]) ? kind : "bytes".equals(call[0]) ? 0L : null;
    }

    static String refusal(Runnable action) {
        try {
            action.run();
            return "done";
        } catch (RuntimeException refused) {
            return refused.getMessage();
        }
    }

    public static void main(String[] args) throws Exception {
        check("a token's hash is its hex SHA-256", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
              Identity.hash("abc"));

        Path file = Files.createTempFile("users-", "");
        Files.writeString(file, "# the server's users\n*\t" + Identity.hash("the-admin-token") + "\t1\n"
                + "ana\t" + Identity.hash("ana-token") + "\t2\nbob\t" + Identity.hash("bob-token") + "\n"
                + "broken line\n");
        Identity.Users users = Identity.Users.read(file);
        check("the users file: each token names its holder, the server's own token the admin", "* ana bob null",
              users.holder("the-admin-token") + " " + users.holder("ana-token") + " " + users.holder("bob-token")
              + " " + users.holder("ana-token "));
        check("the users' names, without the admin", "[ana, bob]", new java.util.TreeSet<>(users.names()));
        Files.delete(file);
        check("a missing users file knows no token", null, Identity.Users.read(file).holder("the-admin-token"));

        Set<String> names = users.names();
        check("bob's token naming user ana is refused, in one line naming both",
              "refused: " + Identity.NOT_YOUR_USER + ": this token is user 'bob''s, and the request names user 'ana'; "
              + "connect as bob (;user_id=bob), or without a user_id", verdict("bob", "ana", names));
        check("bob's token naming bob runs as bob", "runs as 'bob'", verdict("bob", "bob", names));
        check("bob's token naming no user runs as bob", "runs as 'bob'", verdict("bob", "", names));
        check("bob's token naming a login name no user has runs as bob (it is rewritten)", "runs as 'bob'",
              verdict("bob", "root", names));
        check("the server's token naming a user of the server is refused", true,
              verdict(Identity.ADMIN, "ana", names).startsWith("refused: " + Identity.NOT_YOUR_USER
                      + ": 'ana' is a user of this server with a token of their own"));
        check("the server's token naming any other id runs as that id", "runs as 'root'",
              verdict(Identity.ADMIN, "root", names));
        check("Spark's Python workers run as their query's user", "runs as 'ana'",
              verdict(Identity.WORKER, "ana", names));

        check("a server without the interceptor has no identities", "false false",
              Identity.active() + " " + Identity.isAdmin("root"));
        Identity.use(users);
        check("with it: an id no user has is the admin's, a user's is not", "true true false",
              Identity.active() + " " + Identity.isAdmin("root") + " " + Identity.isAdmin("ana"));

        Limits limits = new Limits(1000, 1000, 3, 1L << 40, 1L << 40, 0);
        Function<Object[], Object> anas = holding("ring");
        Function<Object[], Object> bobs = holding("ring");
        Holdings.add(new String[] {"ana", ANA_SESSION}, "orders", "ring", limits, () -> anas);
        Holdings.add(new String[] {"ana", ANA_SESSION}, "ana_only", "ring", limits, () -> holding("ring"));
        Holdings.add(new String[] {"bob", BOB_SESSION}, "orders", "ring", limits, () -> bobs);
        Identity.CURRENT.set(new String[] {"bob", BOB_SESSION});
        check("two users may both have a ring named orders: each finds their own", "true",
              Holdings.use("orders", "ring", "gone", true) == bobs);
        check("another user's name is, for bob, a name nobody has", "gone",
              refusal(() -> Holdings.use("ana_only", "ring", "gone", false)));
        Identity.CURRENT.set(new String[] {"ana", ANA_SESSION});
        check("... and ana finds hers", "true", Holdings.use("orders", "ring", "gone", true) == anas);
        Identity.CURRENT.set(null);
        check("a caller this JVM cannot tell may read no rows", "gone",
              refusal(() -> Holdings.use("ana_only", "ring", "gone", true)));
        check("... but finds the schema of the one holding of a name", "true",
              Holdings.use("ana_only", "ring", "gone", false) != null);
        check("... and not of a name two users have", "gone", refusal(() -> Holdings.use("orders", "ring", "gone",
              false)));

        String taken = refusal(() -> Holdings.add(new String[] {"bob", BOB_SESSION}, "orders", "feed", limits,
                () -> holding("feed")));
        check("a feed cannot take the name of the user's own ring", "SPARKSCOPE_NAME_TAKEN: you already have a ring "
              + "named 'orders', so no feed can have that name", taken);
        Holdings.add(new String[] {"bob", BOB_SESSION}, "second", "ring", limits, () -> holding("ring"));
        Holdings.add(new String[] {"bob", BOB_SESSION}, "third", "ring", limits, () -> holding("ring"));
        check("one user's holdings past the limit are refused, naming the setting", true,
              refusal(() -> Holdings.add(new String[] {"bob", BOB_SESSION}, "fourth", "ring", limits,
                      () -> holding("ring"))).startsWith(Limits.CODE + ": one user keeps at most 3 rings and feeds"));
        check("... while another user's count is their own", "done",
              refusal(() -> Holdings.add(new String[] {"ana", ANA_SESSION}, "third", "ring", limits,
                      () -> holding("ring"))));
        boolean[] freed = {false};
        Function<Object[], Object> ended = call -> {
            switch ((String) call[0]) {
                case "kind":
                    return "ring";
                case "ended":
                    return 5L;  // nothing has used it since then: its grace period is all it has left
                case "free":
                    freed[0] = true;
                    return null;
                default:
                    return 0L;
            }
        };
        Holdings.add(new String[] {"cleo", ANA_SESSION}, "done", "ring", limits, () -> ended);
        Holdings.add(new String[] {"cleo", ANA_SESSION}, "one", "ring", limits, () -> holding("ring"));
        Holdings.add(new String[] {"cleo", ANA_SESSION}, "two", "ring", limits, () -> holding("ring"));
        check("at the limit, a holding that ended makes room for a new one (the rows of a stopped query)", "done true",
              refusal(() -> Holdings.add(new String[] {"cleo", ANA_SESSION}, "three", "ring", limits,
                      () -> holding("ring"))) + " " + freed[0]);
        check("a name of 201 characters is refused", true, refusal(() -> Holdings.add(
                new String[] {"ana", ANA_SESSION}, "n".repeat(201), "ring", limits, () -> holding("ring")))
                .startsWith(Limits.CODE + ": a name has at most 200 characters"));
        System.exit(failed == 0 ? 0 : 1);
    }
}
