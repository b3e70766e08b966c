/*
 * The gRPC interceptor of every Spark Connect server sparkscope starts (spark.connect.grpc.interceptor.classes): each
 * request's bearer token names its user, and the request may act only as that user (Identity.decide). So Spark
 * Connect's own isolation of sessions by user becomes real: a token of bob's can open, join, interrupt or release no
 * session of ana's, whatever session id it sends.
 *
 * The server runs without Spark's own token check (its PreSharedKeyAuthenticationInterceptor would refuse every
 * token but one): this interceptor refuses a request without a token this server knows, and knows the server's own
 * token (its owner's) by its hash in the users file, beside the users'. The users file is read again when it changes,
 * so adding or removing a user takes effect at once; a removed user's sessions are closed (their queries stop).
 *
 * Spark's own Python workers (foreachBatch, query listeners) call back into their query's session with the token
 * Spark gives them: the URL it builds for them carries spark.connect.authenticate.token. That setting is given,
 * once the gRPC server runs (Spark decided on its own check at its start), a worker token: SPARKSCOPE_WORKER_TOKEN
 * from the server's environment (so its log writer can mask it), else a random one. It is never sent to a client,
 * no session's conf holds it (sessions copy the server's conf when its shared state is made, which is first), and it
 * works only from this machine (loopback), where the workers run.
 */
package sparkscope.v3.identity;

import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.nio.charset.StandardCharsets;

import org.apache.spark.SparkEnv;
import org.apache.spark.connect.proto.UserContext;
import org.sparkproject.connect.grpc.ForwardingServerCallListener;
import org.sparkproject.connect.grpc.Grpc;
import org.sparkproject.connect.grpc.Metadata;
import org.sparkproject.connect.grpc.ServerCall;
import org.sparkproject.connect.grpc.ServerCallHandler;
import org.sparkproject.connect.grpc.ServerInterceptor;
import org.sparkproject.connect.grpc.Status;

import scala.jdk.javaapi.CollectionConverters;

public final class UserTokens implements ServerInterceptor {
    public static final String WORKER_TOKEN_ENV = "SPARKSCOPE_WORKER_TOKEN";
    static final String SPARK_TOKEN_CONF = "spark.connect.authenticate.token";
    static final Metadata.Key<String> AUTHORIZATION = Metadata.Key.of("Authorization", Metadata.ASCII_STRING_MARSHALLER);

    private final Path file;
    private final byte[] workerToken;
    private volatile Identity.Users users;
    private volatile List<Object> stamp;  // the users file's identity, time and size when it was read
    private volatile boolean published;

    public UserTokens() {
        String path = SparkEnv.get().conf().get(Identity.USERS_CONF, "");
        if (path.isEmpty()) {  // the server does not start: it must never run without a check
            throw new IllegalStateException("sparkscope's interceptor needs " + Identity.USERS_CONF
                    + ": the file of the server's users");
        }
        this.file = Paths.get(path);
        String given = System.getenv(WORKER_TOKEN_ENV);
        this.workerToken = (given != null && !given.isEmpty() ? given : random()).getBytes(StandardCharsets.UTF_8);
        reload();
    }

    static String random() {
        byte[] bytes = new byte[32];
        new SecureRandom().nextBytes(bytes);
        StringBuilder hex = new StringBuilder();
        for (byte b : bytes) {
            hex.append(String.format("%02x", b & 0xff));
        }
        return hex.toString();
    }

    /** The users file, read again when it changed since (a stat per request: no timer, no thread). */
    private Identity.Users known() {
        List<Object> now = stampOf(file);
        if (!Objects.equals(now, stamp)) {
            synchronized (this) {
                if (!Objects.equals(stampOf(file), stamp)) {
                    reload();
                }
            }
        }
        return users;
    }

    private void reload() {
        List<Object> now = stampOf(file);
        Identity.Users read = Identity.Users.read(file);
        Identity.Users before = users;
        users = read;
        stamp = now;
        Identity.use(read);
        if (before != null) {
            Set<String> removed = new HashSet<>(before.names);
            removed.removeAll(read.names);
            if (!removed.isEmpty()) {
                closeSessionsOf(removed);
            }
        }
    }

    static List<Object> stampOf(Path file) {
        try {
            BasicFileAttributes attributes = Files.readAttributes(file, BasicFileAttributes.class);
            List<Object> stamp = new ArrayList<>();
            stamp.add(attributes.fileKey());
            stamp.add(attributes.lastModifiedTime().toMillis());
            stamp.add(attributes.size());
            return stamp;
        } catch (java.io.IOException missing) {
            return null;
        }
    }

    /** A removed user's sessions end now (their queries stop with them), as their token no longer works. */
    static void closeSessionsOf(Set<String> removed) {
        try {
            Class<?> service = Class.forName("org.apache.spark.sql.connect.service.SparkConnectService$");
            Object module = service.getField("MODULE$").get(null);
            Object manager = service.getMethod("sessionManager").invoke(module);
            Object listed = manager.getClass().getMethod("listActiveSessions").invoke(manager);
            Class<?> keyClass = Class.forName("org.apache.spark.sql.connect.service.SessionKey");
            Method close = null;
            for (Method method : manager.getClass().getMethods()) {
                if (method.getName().equals("closeSession") && method.getParameterCount() >= 1
                        && method.getParameterTypes()[0] == keyClass && (close == null
                        || method.getParameterCount() < close.getParameterCount())) {
                    close = method;
                }
            }
            if (close == null) {
                return;
            }
            for (Object info : CollectionConverters.asJava((scala.collection.Iterable<?>) listed)) {
                String user = (String) info.getClass().getMethod("userId").invoke(info);
                if (removed.contains(user)) {
                    Object key = keyClass.getConstructor(String.class, String.class).newInstance(user,
                            info.getClass().getMethod("sessionId").invoke(info));
                    close.invoke(manager, close.getParameterCount() == 1 ? new Object[] {key}
                            : new Object[] {key, Boolean.TRUE});
                }
            }
        } catch (ReflectiveOperationException | LinkageError | ClassCastException notThisSpark) {
            System.err.println("sparkscope: could not close the sessions of removed users " + removed + ": "
                    + notThisSpark);
        }
    }

    /**
     * Give Spark's Python workers their token (once, at the first request: the gRPC server runs, so Spark's own check
     * was left out at its start). The shared state of the server's sessions is made first: a session copies the
     * server's conf from it, so no session's spark.conf shows the token.
     */
    private void publishWorkerToken() {
        if (published) {
            return;
        }
        synchronized (this) {
            if (published) {
                return;
            }
            try {
                Class<?> sessions = Class.forName("org.apache.spark.sql.SparkSession$");
                Object module = sessions.getField("MODULE$").get(null);
                scala.Option<?> root = (scala.Option<?>) sessions.getMethod("getDefaultSession").invoke(module);
                if (root.isEmpty()) {
                    return;  // no session yet: the next request tries again
                }
                root.get().getClass().getMethod("sharedState").invoke(root.get());
            } catch (ReflectiveOperationException | LinkageError | ClassCastException notThisSpark) {
                System.err.println("sparkscope: Python workers get no token on this server: " + notThisSpark);
                published = true;
                return;
            }
            SparkEnv.get().conf().set(SPARK_TOKEN_CONF, new String(workerToken, StandardCharsets.UTF_8));
            published = true;
        }
    }

    /** Who holds the request's token: a user's name, Identity.ADMIN or Identity.WORKER; null for none or unknown. */
    String holderOf(String authorization, Identity.Users known) {
        if (authorization == null || !authorization.startsWith("Bearer ")) {
            return null;
        }
        String token = authorization.substring("Bearer ".length()).trim();
        if (MessageDigest.isEqual(token.getBytes(StandardCharsets.UTF_8), workerToken)) {
            return Identity.WORKER;
        }
        return token.isEmpty() ? null : known.holder(token);
    }

    static boolean fromThisMachine(ServerCall<?, ?> call) {
        java.net.SocketAddress remote = call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
        return remote instanceof java.net.InetSocketAddress
                && ((java.net.InetSocketAddress) remote).getAddress() != null
                && ((java.net.InetSocketAddress) remote).getAddress().isLoopbackAddress();
    }

    @Override
    public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call, Metadata headers,
                                                                 ServerCallHandler<ReqT, RespT> next) {
        publishWorkerToken();
        Identity.Users known = known();
        String authorization = headers.get(AUTHORIZATION);
        String holder = holderOf(authorization, known);
        if (Identity.WORKER.equals(holder) && !fromThisMachine(call)) {
            holder = null;
        }
        if (holder == null) {
            call.close(Status.UNAUTHENTICATED.withDescription(authorization == null
                    ? Identity.NO_TOKEN + ": this server needs a token; ask its owner for one (sparkscope server users "
                      + "add NAME), and pass it with ;token=… or SPARK_CONNECT_AUTHENTICATE_TOKEN"
                    : Identity.UNKNOWN_TOKEN + ": this server does not know that token (it may have been removed); "
                      + "ask its owner for one: sparkscope server users add NAME"), new Metadata());
            return new ServerCall.Listener<ReqT>() {
            };
        }
        return new Checked<>(next.startCall(call, headers), call, holder, known.names);
    }

    /** A call whose every request is checked (and its user rewritten where the token decides it) before it runs. */
    static final class Checked<ReqT> extends ForwardingServerCallListener.SimpleForwardingServerCallListener<ReqT> {
        private final ServerCall<ReqT, ?> call;
        private final String holder;
        private final Set<String> names;
        private String[] caller;
        private boolean refused;

        Checked(ServerCall.Listener<ReqT> delegate, ServerCall<ReqT, ?> call, String holder, Set<String> names) {
            super(delegate);
            this.call = call;
            this.holder = holder;
            this.names = names;
        }

        @Override
        public void onMessage(ReqT message) {
            if (refused) {
                return;
            }
            Requests.Parts parts = Requests.of(message.getClass());
            boolean anyone = Identity.ADMIN.equals(holder) || Identity.WORKER.equals(holder);
            Identity.Verdict verdict = parts != null ? Identity.decide(holder, parts.user(message), names)
                    : anyone ? null : Identity.Verdict.refused(Identity.NOT_YOUR_USER + ": this request does not say "
                      + "which user makes it, and only the server's own token may send such requests");
            if (verdict != null && verdict.refusal != null) {
                refused = true;
                call.close(Status.PERMISSION_DENIED.withDescription(verdict.refusal), new Metadata());
                return;
            }
            ReqT passed = parts == null || verdict.user.equals(parts.user(message)) ? message
                    : parts.withUser(message, verdict.user);
            caller = parts == null ? null : new String[] {verdict.user, parts.session(message)};
            String[] before = Identity.CURRENT.get();
            Identity.CURRENT.set(caller);
            try {
                super.onMessage(passed);
            } finally {
                Identity.CURRENT.set(before);
            }
        }

        @Override
        public void onHalfClose() {
            if (refused) {
                return;
            }
            String[] before = Identity.CURRENT.get();
            Identity.CURRENT.set(caller);
            try {
                super.onHalfClose();
            } finally {
                Identity.CURRENT.set(before);
            }
        }
    }

    /** How a Spark Connect request names its user and session, found once per request class. */
    static final class Requests {
        private static final ClassValue<Parts> PARTS = new ClassValue<Parts>() {
            @Override
            protected Parts computeValue(Class<?> type) {
                try {
                    Method context = type.getMethod("getUserContext");
                    Method session = type.getMethod("getSessionId");
                    Method toBuilder = type.getMethod("toBuilder");
                    Method set = toBuilder.getReturnType().getMethod("setUserContext", UserContext.class);
                    Method build = toBuilder.getReturnType().getMethod("build");
                    return context.getReturnType() == UserContext.class ? new Parts(context, session, toBuilder, set,
                            build) : null;
                } catch (NoSuchMethodException notARequest) {
                    return null;
                }
            }
        };

        static Parts of(Class<?> type) {
            return PARTS.get(type);
        }

        static final class Parts {
            private final Method context;
            private final Method session;
            private final Method toBuilder;
            private final Method set;
            private final Method build;

            Parts(Method context, Method session, Method toBuilder, Method set, Method build) {
                this.context = context;
                this.session = session;
                this.toBuilder = toBuilder;
                this.set = set;
                this.build = build;
            }

            String user(Object request) {
                return ((UserContext) invoke(context, request)).getUserId();
            }

            String session(Object request) {
                return (String) invoke(session, request);
            }

            @SuppressWarnings("unchecked")
            <T> T withUser(T request, String user) {
                UserContext context = ((UserContext) invoke(this.context, request)).toBuilder().setUserId(user).build();
                Object builder = invoke(toBuilder, request);
                invoke(set, builder, context);
                return (T) invoke(build, builder);
            }

            private static Object invoke(Method method, Object target, Object... args) {
                try {
                    return method.invoke(target, args);
                } catch (ReflectiveOperationException unexpected) {
                    throw new IllegalStateException(unexpected);
                }
            }
        }
    }
}
