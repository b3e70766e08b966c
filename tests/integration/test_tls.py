"""TLS and tokens end to end: the session's token-protected server behind a TLS-terminating proxy
(ALPN h2, a private CA made by trustme), reached through a profile with `token_env` and `ca_file`,
the way a laptop reaches a shared cluster. Then the five ways to get it wrong, each one line.

Everything stays on 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest
import trustme

import sparkscope
from sparkscope.client.errors import ConnectionFailed
from sparkscope.client.connection.probe import port_open
from sparkscope.server.ports import free_port
from tests.helpers import needs, run_sparkscope, wait_for
from tests.netproxy import TlsProxy

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


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
    return run_sparkscope(*args, env={"XDG_CONFIG_HOME": str(tmp_path / "config"), **(env or {})},
                          home=tmp_path / "state", drop=("GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",), timeout=60)


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
        "The token is neither the server's (spark.connect.authenticate.token) nor a user's it knows (sparkscope server "
        "users)."),
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


@needs("nginx is not installed (apt-get install nginx-light)" if shutil.which("nginx") is None else None)
def test_the_compose_nginx_config_carries_sparkscope_over_tls(server, tmp_path):
    """docker-compose's spark-connect-tls service, without Docker: the same nginx configuration in front
    of the session's server, with paths and ports made local (and `listen … http2` for nginx < 1.25)."""
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    certs = tmp_path / "certs"
    certs.mkdir()
    cert.cert_chain_pems[0].write_to_path(str(certs / "server.crt"))
    cert.private_key_pem.write_to_path(str(certs / "server.key"))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    port = free_port()
    version = subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr
    modern = tuple(int(x) for x in version.split("/")[-1].split(".")[:2]) >= (1, 25)
    conf = (ROOT / "server-config" / "nginx-grpc-tls.conf").read_text()
    conf = conf.replace("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl{'' if modern else ' http2'};")
    conf = conf if modern else conf.replace("    http2 on;\n", "")
    conf = conf.replace("/etc/nginx/certs", str(certs))
    conf = conf.replace("grpc://spark-connect:15002", f"grpc://127.0.0.1:{server.port}")
    conf = conf.replace("events {}", f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}")
    conf = conf.replace("http {", f"http {{\n  access_log {tmp_path}/access.log;")
    (tmp_path / "nginx.conf").write_text(conf)
    nginx = subprocess.Popen(["nginx", "-c", str(tmp_path / "nginx.conf"), "-g", "daemon off;"])
    try:
        wait_for(lambda: port_open("127.0.0.1", port), timeout=30, what="nginx listening")
        config = profile(f"sc://127.0.0.1:{port}/;use_ssl=true", token_env="CLUSTER_TOKEN",
                         ca_file=str(tmp_path / "ca.pem"))
        out = run(["--profile", "cluster", "-c", "ticks = spark.readStream.format('rate').load()",
                   "-c", ":start ticks; :sql select 6 * 7 as x; :stop ticks"], config=config,
                  tmp_path=tmp_path, env={"CLUSTER_TOKEN": server.token})
        assert out.returncode == 0, out.stderr
        assert "| 42 |" in out.stdout and "Stopped ticks" in out.stdout
        assert "SparkConnectService/ExecutePlan HTTP/2.0\" 200" in (tmp_path / "access.log").read_text()
    finally:
        nginx.terminate()
        nginx.wait(30)


def test_each_user_s_token_through_the_proxy_acts_as_that_user_only(tls, tmp_path):
    """The identities of a shared server (issue 61), as laptops reach it: through TLS, a profile's token_env."""
    from tests.identities import users

    proxy, ca_file, _ = tls
    url = f"sc://127.0.0.1:{proxy.port}/;use_ssl=true"
    with users("ana_tls", "bob_tls") as tokens:
        mine = run(["--profile", "cluster", "-c", ":session"], tmp_path=tmp_path, env={"CLUSTER_TOKEN": tokens["bob_tls"]},
                   config=profile(url, token_env="CLUSTER_TOKEN", ca_file=str(ca_file)))
        assert mine.returncode == 0, mine.stderr
        assert [line.split("|")[2].strip() for line in mine.stdout.splitlines()
                if line.startswith("| user ")] == ["bob_tls"]
        claimed = run(["--profile", "cluster", "-c", ":session"], tmp_path=tmp_path,
                      env={"CLUSTER_TOKEN": tokens["bob_tls"]},
                      config=profile(url + ";user_id=ana_tls", token_env="CLUSTER_TOKEN", ca_file=str(ca_file)))
        assert claimed.returncode == 2 and claimed.stderr.strip() == (
            "error: This token is user 'bob_tls''s, and the request names user 'ana_tls'. Connect as bob_tls "
            "(;user_id=bob_tls), or without a user_id.")
        assert tokens["bob_tls"] not in mine.stdout + mine.stderr + claimed.stdout + claimed.stderr
    assert proxy.handshake_errors == []
