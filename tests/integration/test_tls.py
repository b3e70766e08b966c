"""TLS and tokens end to end: the session's token-protected server behind a TLS-terminating proxy
(ALPN h2, a private CA made by trustme), reached through a profile with `token_env` and `ca_file`,
the way a laptop reaches a shared cluster. Then the five ways to get it wrong, each one line.

Everything stays on 127.0.0.1.
"""

from __future__ import annotations

import os
import ssl
import subprocess

import pytest
import trustme

import sparkscope
from sparkscope.client.errors import ConnectionFailed
from tests.helpers import sparkscope_bin, wait_for
from tests.netproxy import TlsProxy

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tls(server, tmp_path_factory):
    """(proxy, ca_file, token): TLS on the proxy's port, plaintext behind it."""
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    folder = tmp_path_factory.mktemp("tls")
    ca_file = folder / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    with TlsProxy(server.port, context) as proxy:
        yield proxy, ca_file, server.token


def run(args, *, config: str, tmp_path, env=None):
    """The real `sparkscope` with its own config dir (the profile) and state dir (no token file)."""
    (tmp_path / "config" / "sparkscope").mkdir(parents=True, exist_ok=True)
    path = tmp_path / "config" / "sparkscope" / "config.toml"
    path.write_text(config)
    os.chmod(path, 0o600)
    full = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONNECT_AUTHENTICATE_TOKEN",
                                                             "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH")}
    full.update({"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_STATE_HOME": str(tmp_path / "state")})
    full.update(env or {})
    return subprocess.run([sparkscope_bin(), *args], capture_output=True, text=True, timeout=60, env=full)


def profile(url: str, **keys: str) -> str:
    lines = [f'[profiles.cluster]\nremote = "{url}"'] + [f'{key} = "{value}"' for key, value in keys.items()]
    return "\n".join(lines) + "\n"


def test_tls_and_token_through_a_proxy_from_a_profile(tls, tmp_path):
    proxy, ca_file, token = tls
    config = profile(f"sc://127.0.0.1:{proxy.port}/;use_ssl=true", token_env="CLUSTER_TOKEN", ca_file=str(ca_file))
    out = run(["--profile", "cluster", "-c", "spark.range(7).count(); :session"], config=config,
              tmp_path=tmp_path, env={"CLUSTER_TOKEN": token})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "7"
    assert f"sc://127.0.0.1:{proxy.port}/;use_ssl=true;token=***" in out.stdout
    assert token not in out.stdout + out.stderr
    assert proxy.handshake_errors == []


def test_the_sdk_trusts_the_profile_ca_and_streams_through_tls(tls, tmp_path, monkeypatch):
    proxy, ca_file, token = tls
    config = tmp_path / "sparkscope" / "config.toml"
    config.parent.mkdir()
    config.write_text(profile(f"sc://127.0.0.1:{proxy.port}/;use_ssl=true", token_env="CLUSTER_TOKEN",
                              ca_file=str(ca_file)))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("CLUSTER_TOKEN", token)
    with sparkscope.connect(profile="cluster") as ss:
        counts = ss.source.rate(rows_per_second=50).selectExpr("value % 3 AS k").groupBy("k").count()
        query = ss.start(counts, "tls_counts", mode="complete")
        try:
            wait_for(lambda: sorted(row[0] for row in ss.peek("tls_counts").rows) == [0, 1, 2], timeout=120,
                     what="the three keys in the sink")
        finally:
            query.stop()


# The five ways to get TLS and tokens wrong: (profile keys, env, the one line on stderr). `{tls}` is the
# proxy's port, `{plain}` the server's own plaintext port, `{ca}` the CA file.
WRONG = {
    "wrong token": (
        dict(remote="sc://127.0.0.1:{tls}/;use_ssl=true", token="not-the-token", ca_file="{ca}"),
        "error: sc://127.0.0.1:{tls}/;use_ssl=true;token=*** refused the connection: authentication failed. "
        "The token does not match the server's spark.connect.authenticate.token."),
    "missing token": (
        dict(remote="sc://127.0.0.1:{tls}/;use_ssl=true", ca_file="{ca}"),
        "error: sc://127.0.0.1:{tls}/;use_ssl=true refused the connection: authentication failed. "
        "Pass the server's token with ;token=… or SPARK_CONNECT_AUTHENTICATE_TOKEN."),
    "untrusted certificate": (
        dict(remote="sc://127.0.0.1:{tls}/;use_ssl=true", token_env="CLUSTER_TOKEN"),
        "error: The TLS certificate of 127.0.0.1:{tls} is not trusted. Trust the CA that signed it: "
        'ca_file = "/path/ca.pem" in the profile, or GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=/path/ca.pem.'),
    "plaintext to a TLS port": (
        dict(remote="sc://127.0.0.1:{tls}"),
        "error: 127.0.0.1:{tls} closed the connection without answering: it may expect TLS. "
        "Add ;use_ssl=true to the URL if it does."),
    "TLS to a plaintext port": (
        dict(remote="sc://127.0.0.1:{plain}/;use_ssl=true", token_env="CLUSTER_TOKEN", ca_file="{ca}"),
        "error: The TLS handshake with 127.0.0.1:{plain} failed (use_ssl=true was asked for). If the server "
        "speaks plaintext, connect to sc://localhost:PORT on this machine, or put a TLS proxy in front of it."),
}


@pytest.mark.parametrize("case", list(WRONG))
def test_each_wrong_tls_or_token_setting_is_one_clear_line(tls, server, tmp_path, case):
    proxy, ca_file, token = tls
    keys, expected = WRONG[case]
    values = {"tls": proxy.port, "plain": server.port, "ca": ca_file}
    filled = {key: value.format(**values) for key, value in keys.items()}
    config = profile(filled.pop("remote"), **filled)
    out = run(["--profile", "cluster", "-c", ":queries"], config=config, tmp_path=tmp_path,
              env={"CLUSTER_TOKEN": token})
    assert out.returncode == 2
    assert out.stderr.strip() == expected.format(**values)
    assert token not in out.stdout + out.stderr


def test_an_unreadable_ca_file_is_one_line(tls, tmp_path):
    proxy, _, token = tls
    missing = tmp_path / "no-such-ca.pem"
    with pytest.raises(sparkscope.SparkscopeError) as err:
        sparkscope.connect(f"sc://127.0.0.1:{proxy.port}/;use_ssl=true", token=token, ca_file=str(missing))
    assert str(err.value).startswith(f"Cannot read the CA file {missing} (No such file or directory)")
    assert not isinstance(err.value, ConnectionFailed)
