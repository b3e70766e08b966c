"""The users of a server sparkscope starts: a token each, bound by the server to that user's id.

The server's own token (the one it was started with) is its owner's, the admin's. `sparkscope server users add NAME`
gives NAME a token of their own, shown once; the server keeps only its SHA-256, in the users file of the state dir
(mode 0600), which the jar's interceptor reads again whenever it changes (sparkscope/jars/…/identity/): adding or
removing a user takes effect without a restart, and a removed user's sessions end.

The file, one line per token holder: `NAME <TAB> hex SHA-256 of the token <TAB> when it was added (epoch seconds)`;
NAME `*` is the server's own token. A token is 32 random bytes (as the server's own), so its plain hash is safe to
keep: it cannot be turned back into the token.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from ...client import file_lock
from ...client.errors import ConfigError
from ...client.paths import write_private
from ...client.secrets import remember_secret

USERS_FILE = "users"
USERS_CONF = "spark.sparkscope.users"
INTERCEPTOR = "sparkscope.v3.identity.UserTokens"
INTERCEPTOR_CONF = "spark.connect.grpc.interceptor.classes"
WORKER_TOKEN_ENV = "SPARKSCOPE_WORKER_TOKEN"  # the token Spark's Python workers call back with (UserTokens.java)
ADMIN = "*"
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class User:
    name: str
    added: float


class Users:
    """A users file: the state dir's, for the server sparkscope starts there, or one a cluster mounts
    (docker-compose.yml)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = path.with_name(f".{path.name}.lock")

    def _read(self) -> list[tuple[str, str, float]]:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return []
        rows = []
        for line in text.splitlines():
            fields = line.split("\t")
            if len(fields) >= 2 and not line.startswith("#"):
                rows.append((fields[0], fields[1], float(fields[2]) if len(fields) > 2 and fields[2] else 0.0))
        return rows

    def _write(self, rows: list[tuple[str, str, float]]) -> None:
        write_private(self.path, "".join(f"{name}\t{digest}\t{added:.0f}\n" for name, digest, added in rows))

    def list(self) -> list[User]:
        """The users, oldest first: names and when each was added, never a token."""
        return [User(name, added) for name, _, added in self._read() if name != ADMIN]

    def owner_set(self) -> bool:
        """Whether the file names the server's own token (without it, only users' tokens work)."""
        return any(row[0] == ADMIN for row in self._read())

    def set_admin(self, token: str) -> None:
        """The server's own token (at its start): its hash replaces the one before; the users stay."""
        with file_lock.held(self._lock, 30):
            rows = [row for row in self._read() if row[0] != ADMIN]
            self._write([(ADMIN, token_hash(token), time.time()), *rows])

    def add(self, name: str) -> str:
        """A new token for `name` (a new user), returned once: only its hash is kept."""
        if not NAME.fullmatch(name) or name.lower().startswith("sparkscope"):
            raise ConfigError(f"'{name}' cannot be a user's name",
                              "Use up to 64 letters, digits, '_', '.', '@' or '-', starting with a letter, digit or "
                              "'_' (names starting with sparkscope are the server's own)", code="bad_user_name")
        with file_lock.held(self._lock, 30):
            rows = self._read()
            if any(row[0] == name for row in rows):
                raise ConfigError(f"'{name}' is already a user of this server",
                                  f"To give them a new token: sparkscope server users remove {name}, then add them "
                                  "again", code="user_exists")
            token = secrets.token_urlsafe(32)
            remember_secret(token)
            self._write([*rows, (name, token_hash(token), time.time())])
        return token

    def remove(self, name: str) -> bool:
        """Take `name` away: their token stops working, and the server ends their sessions. Whether they were a user."""
        with file_lock.held(self._lock, 30):
            rows = self._read()
            kept = [row for row in rows if row[0] != name or name == ADMIN]
            if len(kept) == len(rows):
                return False
            self._write(kept)
        return True
