"""Spark's packages (--kafka) resolved with Ivy settings and a cache of sparkscope's own (server/maven/packages.py):
the user's Maven mirror and proxy are honoured, ~/.m2 is never read, and the versions a repository publishes are read
from its own metadata (served here by a local HTTP server)."""

from __future__ import annotations

import http.server
import threading

from sparkscope.server.maven.packages import CENTRAL, maven_settings, package_conf, published_versions

SETTINGS = """<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">
  <mirrors>
    <mirror><id>other</id><mirrorOf>snapshots</mirrorOf><url>https://not.this.one/maven</url></mirror>
    <mirror><id>company</id><mirrorOf>central</mirrorOf><url>https://nexus.example.com/repository/maven</url></mirror>
  </mirrors>
  <proxies>
    <proxy><id>off</id><active>false</active><protocol>https</protocol><host>old.example.com</host></proxy>
    <proxy><id>on</id><active>true</active><protocol>https</protocol><host>proxy.example.com</host><port>3128</port>
      <nonProxyHosts>localhost|*.example.com</nonProxyHosts></proxy>
  </proxies>
</settings>
"""


def test_the_user_s_maven_mirror_and_proxy_are_honoured_and_m2_is_never_a_resolver(tmp_path):
    (tmp_path / ".m2").mkdir()
    (tmp_path / ".m2" / "settings.xml").write_text(SETTINGS)
    found = maven_settings(tmp_path)
    assert found.repository == "https://nexus.example.com/repository/maven/"
    assert found.proxy == {"https.proxyHost": "proxy.example.com", "https.proxyPort": "3128",
                           "http.nonProxyHosts": "localhost|*.example.com"}
    conf = package_conf({"spark.jars.packages": "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"}, home=tmp_path,
                        cache=tmp_path / "cache" / "ivy")
    settings = (tmp_path / "cache" / "ivy" / "ivysettings.xml").read_text()
    assert conf["spark.jars.ivySettings"] == str(tmp_path / "cache" / "ivy" / "ivysettings.xml")
    assert conf["spark.jars.ivy"] == str(tmp_path / "cache" / "ivy")
    assert 'root="https://nexus.example.com/repository/maven/"' in settings
    resolvers = settings.split("<resolvers>")[1].split("</resolvers>")[0]
    assert resolvers.count("<") == 1 and "<ibiblio " in resolvers  # the one resolver: no ~/.m2, no local Ivy
    assert conf["spark.driver.extraJavaOptions"] == ("-Dhttps.proxyHost=proxy.example.com -Dhttps.proxyPort=3128 "
                                                    "-Dhttp.nonProxyHosts=localhost|*.example.com")


def test_without_settings_it_is_maven_central_and_a_conf_without_packages_is_left_alone(tmp_path):
    assert maven_settings(tmp_path).repository == CENTRAL
    assert package_conf({"spark.sql.shuffle.partitions": "2"}, home=tmp_path, cache=tmp_path / "c") == {
        "spark.sql.shuffle.partitions": "2"}
    own = {"spark.jars.packages": "a:b:1", "spark.jars.ivySettings": "/theirs.xml"}
    assert package_conf(own, home=tmp_path, cache=tmp_path / "c") == own  # the user's own Ivy settings stay


def test_a_proxy_with_a_password_is_left_out_not_put_on_a_command_line(tmp_path):
    (tmp_path / ".m2").mkdir()
    (tmp_path / ".m2" / "settings.xml").write_text(
        "<settings><proxies><proxy><active>true</active><host>p</host><port>1</port><username>u</username>"
        "<password>secret-in-settings</password></proxy></proxies></settings>")
    conf = package_conf({"spark.jars.packages": "a:b:1"}, home=tmp_path, cache=tmp_path / "c")
    assert "secret-in-settings" not in str(conf) and "spark.driver.extraJavaOptions" not in conf


def test_the_versions_a_repository_publishes_are_read_from_its_metadata(tmp_path):
    metadata = (b"<metadata><groupId>org.apache.spark</groupId><artifactId>spark-sql-kafka-0-10_2.13</artifactId>"
                b"<versioning><versions><version>4.0.0</version><version>4.1.0</version><version>4.2.0</version>"
                b"</versions></versioning></metadata>")
    asked = []

    class Repository(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the standard library's name
            asked.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(metadata)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Repository)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/maven2"
        assert published_versions("org.apache.spark", "spark-sql-kafka-0-10_2.13", repository=url) == [
            "4.0.0", "4.1.0", "4.2.0"]
        assert asked == ["/maven2/org/apache/spark/spark-sql-kafka-0-10_2.13/maven-metadata.xml"]
    finally:
        server.shutdown()
        server.server_close()
    assert published_versions("a", "b", repository=url, timeout=2) == []  # nothing answers now: no versions
