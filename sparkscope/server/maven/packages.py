"""Spark's packages (`spark.jars.packages`, `--kafka`'s connector) resolved into a cache of sparkscope's own.

Spark resolves packages with Ivy, and its default resolvers read `~/.m2/repository` first: a POM there without its
jar (an interrupted `mvn`) fails every start with `download failed: …jar`, and Ivy's own cache in `~/.ivy2` then
keeps the failure, until both are cleaned by hand. So a server sparkscope starts gets Ivy settings of its own
(`spark.jars.ivySettings`): Maven Central (or the mirror the user's `~/.m2/settings.xml` names for it) as the only
resolver, and a cache under sparkscope's cache dir (`spark.jars.ivy`). The user's Maven proxy, where settings.xml has
an active one without a password, reaches the JVM as Java's proxy properties. Once resolved, a package is read from
that cache: a later start works offline.

Where a package's version is not published, `published_versions` reads Maven's own list of its versions, so that
one line can name those there are.
"""

from __future__ import annotations

import urllib.request
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

from ...client.logs import log
from ...client.paths import cache_dir, write_private

CENTRAL = "https://repo1.maven.org/maven2/"
_MAVEN = "{http://maven.apache.org/SETTINGS/1.0.0}"


@dataclass(frozen=True)
class MavenSettings:
    """What sparkscope takes of `~/.m2/settings.xml`: the mirror of Maven Central, and the proxy (Java properties)."""

    repository: str = CENTRAL
    proxy: dict[str, str] = field(default_factory=dict)


def maven_settings(home: Path | None = None) -> MavenSettings:
    """The user's Maven settings (`~/.m2/settings.xml`): its mirror of central (mirrorOf `*`, `central` or
    `external:*`) and its first active proxy without a password; Maven Central and no proxy without them."""
    path = (home or Path.home()) / ".m2" / "settings.xml"
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError):
        return MavenSettings()

    def text(node: ElementTree.Element, name: str) -> str:
        found = node.find(f"{_MAVEN}{name}")
        if found is None:
            found = node.find(name)
        return (found.text or "").strip() if found is not None else ""

    def each(parent: str, child: str) -> list[ElementTree.Element]:
        return root.findall(f"{_MAVEN}{parent}/{_MAVEN}{child}") + root.findall(f"{parent}/{child}")

    repository = next((text(mirror, "url") for mirror in each("mirrors", "mirror")
                       if {part.strip() for part in text(mirror, "mirrorOf").split(",")} & {"*", "central", "external:*"}
                       and text(mirror, "url")), CENTRAL)
    proxy: dict[str, str] = {}
    for given in each("proxies", "proxy"):
        if text(given, "active").lower() == "false":
            continue
        if text(given, "password"):
            log.warning("~/.m2/settings.xml's proxy %s needs a password, which sparkscope does not put on a command "
                        "line: Spark's downloads go without it", text(given, "host"))
            break
        scheme = text(given, "protocol") or "http"
        proxy = {f"{scheme}.proxyHost": text(given, "host"), f"{scheme}.proxyPort": text(given, "port") or "80"}
        if text(given, "nonProxyHosts"):
            proxy["http.nonProxyHosts"] = text(given, "nonProxyHosts")
        break
    return MavenSettings(repository if repository.endswith("/") else repository + "/", proxy)


IVY_SETTINGS = """<ivysettings>
  <!-- sparkscope's own (server/maven/packages.py): one resolver, Maven Central or its mirror; no ~/.m2, no ~/.ivy2 -->
  <settings defaultResolver="central"/>
  <resolvers>
    <ibiblio name="central" m2compatible="true" usepoms="true" root="{root}"/>
  </resolvers>
</ivysettings>
"""


def package_conf(conf: dict[str, str], *, home: Path | None = None, cache: Path | None = None) -> dict[str, str]:
    """`conf` with Spark's package resolution made sparkscope's own: its Ivy settings and cache, and the user's Maven
    proxy as the JVM's proxy properties. `conf` unchanged when it asks for no package, or gives Ivy settings of its
    own."""
    if not conf.get("spark.jars.packages") or conf.get("spark.jars.ivySettings"):
        return conf
    settings = maven_settings(home)
    folder = cache or cache_dir() / "ivy"
    folder.mkdir(parents=True, exist_ok=True)
    ivy_settings = folder / "ivysettings.xml"
    write_private(ivy_settings, IVY_SETTINGS.format(root=settings.repository))
    made = {**conf, "spark.jars.ivySettings": str(ivy_settings), "spark.jars.ivy": conf.get("spark.jars.ivy") or str(folder)}
    if settings.proxy:
        options = " ".join(f"-D{key}={value}" for key, value in settings.proxy.items())
        made["spark.driver.extraJavaOptions"] = " ".join(filter(None, [conf.get("spark.driver.extraJavaOptions", ""),
                                                                      options]))
    return made


def published_versions(group: str, artifact: str, *, repository: str = CENTRAL, timeout: float = 10.0) -> list[str]:
    """The versions of a package the repository publishes (its maven-metadata.xml), oldest first; [] when it cannot
    be asked."""
    url = f"{repository.rstrip('/')}/{group.replace('.', '/')}/{artifact}/maven-metadata.xml"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:  # noqa: S310 - an https URL of ours or the user's
            root = ElementTree.fromstring(answer.read())
    except (OSError, ElementTree.ParseError, ValueError):
        return []
    return [version.text.strip() for version in root.iter("version") if version.text]
