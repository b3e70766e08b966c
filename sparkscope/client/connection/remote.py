"""Where to connect: `sc://` URL parsing, profiles, and the precedence flag > env > profile > local.

Pure logic, no pyspark import, so the REPL can resolve its target before pyspark has loaded.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import ConfigError
from ..logs import log
from ..secrets import REDACTED, redact, remember_secret
from .config import load_profiles
from ..paths import config_file

DEFAULT_PORT = 15002
TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
REMOTE_ENV = "SPARK_REMOTE"
PROFILE_ENV = "SPARKSCOPE_PROFILE"
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")  # the names of this machine a URL may give


@dataclass(frozen=True)
class Target:
    """A resolved Spark Connect endpoint. `source` says which setting chose it."""

    host: str
    port: int = DEFAULT_PORT
    token: str | None = field(default=None, repr=False)
    session_id: str | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    source: str = "flag"  # flag | env | profile | local
    # Where the token came from (url | argument | env | profile | state), so a hint can say where to
    # find it again without ever printing it; `profile` names the profile that chose this target.
    token_source: str | None = None
    profile: str | None = None
    # A PEM file of the CAs to trust for TLS (profile key ca_file); None: gRPC's default roots, which
    # GRPC_DEFAULT_SSL_ROOTS_FILE_PATH replaces for the whole process.
    ca_file: str | None = None

    def root_certificates(self) -> bytes | None:
        if not self.ca_file:
            return None
        path = Path(self.ca_file).expanduser()
        try:
            return path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"Cannot read the CA file {path} ({exc.strerror})",
                              "Fix ca_file in the profile: a PEM file of the CA that signed the server's "
                              "certificate", code="bad_ca_file", data={"path": str(path)}) from None

    def __post_init__(self) -> None:
        if self.token:
            remember_secret(self.token)

    @property
    def use_ssl(self) -> bool:
        return str(self.params.get("use_ssl", "")).lower() == "true"

    def url(self, *, with_token: bool = False, with_session: bool = True) -> str:
        """The sc:// URL. The token is left out (or shown as ***) unless asked for."""
        parts = [f"{k}={v}" for k, v in self.params.items()]
        if with_session and self.session_id:
            parts.append(f"session_id={self.session_id}")
        if self.token:
            # pyspark unquotes parameter values, so a token with '=' or ';' (base64) travels quoted
            parts.append(f"token={urllib.parse.quote(self.token, safe='') if with_token else REDACTED}")
        tail = "/;" + ";".join(parts) if parts else ""
        return f"sc://{self.host}:{self.port}{tail}"

    @property
    def display(self) -> str:
        """The URL to show: token=*** when the user gave a token, nothing for our own server's token
        (read from the state dir, it was never part of what they typed)."""
        if self.token_source == "state":
            return replace(self, token=None).url()
        return self.url(with_token=False)

    @property
    def bare_url(self) -> str:
        """The URL without token and session: safe to print in a command the user runs again."""
        return replace(self, token=None, session_id=None).url()

    @property
    def on_this_machine(self) -> bool:
        """The server runs here, so it sees this machine's files (relative paths need making absolute)."""
        return self.host in LOCAL_HOSTS

    @property
    def token_in_clear(self) -> bool:
        """pyspark's rule (ChannelBuilder.toChannel, checked against 4.3.0): a token goes over TLS,
        except to host 'localhost' without use_ssl, where gRPC's local credentials carry it in clear
        over loopback. Anything else with a token means TLS."""
        return bool(self.token) and not self.use_ssl and self.host == "localhost"

    @property
    def needs_tls(self) -> bool:
        return self.use_ssl or (bool(self.token) and self.host != "localhost")

    def with_session(self, session_id: str | None) -> Target:
        return replace(self, session_id=session_id)


MAX_HOST, MAX_LABEL = 253, 63  # DNS: a name, and each dot-separated part of it


def check_host(host: str) -> None:
    """A host name a resolver can take (Python's idna codec fails on longer ones with a traceback)."""
    if ":" in host:  # an IPv6 address
        return
    if len(host) > MAX_HOST or any(len(label) > MAX_LABEL for label in host.split(".")):
        raise ConfigError(f"The host name in the Spark Connect URL is too long ({len(host):,} characters)",
                          f"A host name has at most {MAX_HOST} characters, {MAX_LABEL} between dots: check the URL")


def parse_url(url: str, *, source: str = "flag") -> Target:
    """Parse `sc://host[:port][/;key=value;…]` the way pyspark's ChannelBuilder does."""
    text = url.strip()
    if not text.startswith("sc://"):
        raise ConfigError(
            f"'{redact(text)}' is not a Spark Connect URL",
            "Use sc://host:port, e.g. sc://localhost:15002",
        )
    rest = text[len("sc://"):]
    address, _, param_text = rest.partition("/")
    if not address:
        raise ConfigError("The Spark Connect URL has no host", "Use sc://host:port")
    host, sep, port_text = address.rpartition(":")
    if not sep:
        host, port_text = address, str(DEFAULT_PORT)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    check_host(host)
    try:
        port = int(port_text)
        if not 0 < port < 65536:
            raise ValueError
    except ValueError:
        raise ConfigError(f"'{port_text}' is not a valid port in {redact(text)}", "Use a number from 1 to 65535") from None
    params: dict[str, str] = {}
    for item in param_text.lstrip(";").split(";"):
        if not item:
            continue
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ConfigError(f"Bad parameter '{redact(item)}' in the Spark Connect URL", "Parameters look like ;key=value")
        params[key.strip()] = urllib.parse.unquote(value.strip())
    token = params.pop("token", None)
    session_id = params.pop("session_id", None)
    if session_id is not None:
        validate_session_id(session_id)
    return Target(host=host, port=port, token=token or None, session_id=session_id, params=params, source=source,
                  token_source="url" if token else None)


def validate_session_id(session_id: str) -> str:
    import uuid  # here: uuid loads platform and ctypes, which the prompt need not wait for

    try:
        uuid.UUID(session_id)
    except ValueError:
        raise ConfigError(f"'{session_id}' is not a session id", "A session id is a UUID, as in Session.session_id",
                          code="bad_session_id", data={"value": session_id}) from None
    return session_id


def resolve(
    remote: str | None = None,
    *,
    profile: str | None = None,
    token: str | None = None,
    session_id: str | None = None,
    env: Mapping[str, str] | None = None,
    config_path: Path | None = None,
) -> Target | None:
    """Pick the target: flag > SPARK_REMOTE > profile > None (meaning: the embedded local server).

    The token comes from the URL, then the `token` argument, then SPARK_CONNECT_AUTHENTICATE_TOKEN,
    then the profile.
    """
    env = os.environ if env is None else env
    target: Target | None = None
    profile_data: dict = {}
    profile_name = profile or env.get(PROFILE_ENV)
    if remote:
        target = parse_url(remote, source="flag")
    elif env.get(REMOTE_ENV):
        target = parse_url(env[REMOTE_ENV], source="env")
    else:
        profiles = load_profiles(config_path)
        if not profile_name and "__default__" in profiles:
            profile_name = profiles["__default__"]["name"]
        if profile_name:
            if profile_name not in profiles:
                known = ", ".join(sorted(k for k in profiles if k != "__default__")) or "none"
                raise ConfigError(
                    f"No profile named '{profile_name}' in {config_path or config_file()}",
                    f"Known profiles: {known}",
                )
            profile_data = profiles[profile_name]
            if "remote" not in profile_data:
                raise ConfigError(f"Profile '{profile_name}' has no 'remote' key", "Add remote = \"sc://host:port\"")
            target = parse_url(str(profile_data["remote"]), source="profile")
    if target is None:
        if profile and not profile_data:
            raise ConfigError(f"No profile named '{profile}'", "Add it to config.toml")
        return None
    candidates = [(target.token, "url"), (token, "argument"), (env.get(TOKEN_ENV), "env"),
                  (profile_data.get("token"), "profile")]
    if profile_data.get("token_env"):
        candidates.append((env.get(str(profile_data["token_env"])), "profile"))
        if not env.get(str(profile_data["token_env"])) and not any(t for t, _ in candidates):
            log.warning("profile '%s' takes its token from $%s, which is not set: connecting without a token",
                        profile_name, profile_data["token_env"])
    chosen_token, token_source = next(((t, s) for t, s in candidates if t), (None, None))
    if session_id:
        validate_session_id(session_id)
    return replace(target, token=chosen_token or None, token_source=token_source,
                   profile=profile_name if profile_data else None,
                   ca_file=str(profile_data["ca_file"]) if profile_data.get("ca_file") else None,
                   session_id=session_id or target.session_id)


def local_target(port: int, token: str | None = None, session_id: str | None = None,
                 token_source: str | None = "state") -> Target:
    """The embedded server. Host 'localhost' lets pyspark send a token without TLS (loopback only)."""
    return Target(host="localhost", port=port, token=token, session_id=session_id, source="local",
                  token_source=token_source if token else None)
