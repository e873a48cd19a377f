"""Apache Kafka's broker jars from Maven Central, resolved once into a local cache.

:func:`kafka_libs` returns a directory of jars that ``java -cp 'DIR/*' kafka.Kafka`` runs.
The first call for a version asks Maven (``mvn``, the registry's own client) to copy the
runtime dependencies of ``org.apache.kafka:kafka_2.13:VERSION`` (plus the SLF4J binding of
log4j 2, so that the brokers write their logs) with strict checksum checks, then checks every
jar against the SHA-256 list pinned in this package (``kafka-VERSION.sha256``). Later calls
only check the cache, without the network.

The version is :data:`DEFAULT_KAFKA_VERSION` unless ``RACKAFKA_KAFKA_VERSION`` (or an
argument) names another, 3.7 or newer (KRaft; see :mod:`~rackafka.testing.kafka_versions`).
:data:`PINNED_KAFKA_VERSIONS` have a pinned list; another version is accepted on Maven's own
checksums (its ``.sha1`` files), and the list made then is checked on every later use.
Kafka 3.x ships no log4j 2: its jars get log4j 2's core and SLF4J binding (a pinned
version), so that every version logs with the same configuration. The
cache is ``RACKAFKA_KAFKA_CACHE``, else ``$XDG_CACHE_HOME/rackafka/kafka``, else
``~/.cache/rackafka/kafka``; each version lives in ``<cache>/<version>/libs``.

``python -m rackafka.testing kafka-jars`` fills the cache (``make kafka-jars``).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from .kafka_versions import MIN_KAFKA_VERSION

__all__ = [
    "DEFAULT_KAFKA_VERSION",
    "ENV_KAFKA_CACHE",
    "ENV_KAFKA_VERSION",
    "JavaNotFoundError",
    "KafkaJarsError",
    "PINNED_KAFKA_VERSIONS",
    "find_java",
    "kafka_cache_dir",
    "kafka_libs",
    "kafka_version",
]

#: The Apache Kafka release the tests run, unless ``RACKAFKA_KAFKA_VERSION`` names another.
DEFAULT_KAFKA_VERSION = "4.1.1"
#: The releases the project tests, each with a pinned SHA-256 list (``kafka-VERSION.sha256``).
PINNED_KAFKA_VERSIONS: tuple[str, ...] = ("3.7.2", "3.9.1", "4.1.1", "4.4.0")
ENV_KAFKA_VERSION = "RACKAFKA_KAFKA_VERSION"
ENV_KAFKA_CACHE = "RACKAFKA_KAFKA_CACHE"
#: Maven's executable (default ``mvn`` on the PATH).
ENV_MAVEN = "RACKAFKA_MAVEN"

_MIN_JAVA = 17
_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
_MANIFEST = "SHA256SUMS"
#: The log4j 2 that the brokers of Kafka 3.x log with (they ship no log4j 2 of their own).
_LOG4J2_VERSION = "2.24.3"
_VERSION_RE = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+([.-][A-Za-z0-9.-]+)?$")
_verified: set[Path] = set()
_lock = threading.Lock()


class KafkaJarsError(RuntimeError):
    """The Kafka jars are not cached and cannot be downloaded, or fail their checksums."""


class JavaNotFoundError(RuntimeError):
    """No Java runtime (17 or newer) to run the brokers."""


def kafka_version(version: str | None = None) -> str:
    """The Kafka version to use: ``version``, else ``RACKAFKA_KAFKA_VERSION``, else the pin."""
    chosen = version or os.environ.get(ENV_KAFKA_VERSION, "").strip() or DEFAULT_KAFKA_VERSION
    if not _VERSION_RE.match(chosen):
        raise ValueError(f"not a Kafka version: {chosen!r} (expected e.g. {DEFAULT_KAFKA_VERSION})")
    major, minor = (int(x) for x in chosen.split(".")[:2])
    if (major, minor) < MIN_KAFKA_VERSION:
        oldest = ".".join(map(str, MIN_KAFKA_VERSION))
        raise ValueError(
            f"Kafka {chosen}: the test engine needs Kafka {oldest} or newer (KRaft only)"
        )
    return chosen


def kafka_cache_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The cache root: ``cache_dir``, ``RACKAFKA_KAFKA_CACHE``, or the user's cache."""
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get(ENV_KAFKA_CACHE, "").strip()
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "rackafka" / "kafka"


def _pinned(version: str) -> dict[str, str] | None:
    path = Path(__file__).with_name(f"kafka-{version}.sha256")
    if not path.is_file():
        return None
    return _read_manifest(path)


def _read_manifest(path: Path) -> dict[str, str]:
    sums: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        digest, _, name = line.partition("  ")
        sums[name.strip()] = digest.strip().lower()
    return sums


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _check(libs: Path, sums: dict[str, str], what: str) -> None:
    present = {p.name for p in libs.glob("*.jar")}
    missing = sorted(set(sums) - present)
    extra = sorted(present - set(sums))
    if missing or extra:
        raise KafkaJarsError(
            f"{what}: the jars in {libs} are not the pinned set "
            f"(missing: {', '.join(missing) or '-'}; unexpected: {', '.join(extra) or '-'})"
        )
    for name, digest in sorted(sums.items()):
        actual = _sha256(libs / name)
        if actual != digest:
            raise KafkaJarsError(
                f"{what}: checksum mismatch for {name} in {libs}: "
                f"sha256 {actual}, expected {digest}"
            )


def kafka_libs(
    version: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    download: bool = True,
) -> Path:
    """The directory of the broker's jars, downloading them with Maven the first time.

    Arguments:
        version: the Kafka version (default: ``RACKAFKA_KAFKA_VERSION`` or
            :data:`DEFAULT_KAFKA_VERSION`).
        cache_dir: the cache root (default: ``RACKAFKA_KAFKA_CACHE`` or the user's cache).
        download: False to only use the cache.

    Raises:
        KafkaJarsError: not cached and Maven could not get them (no ``mvn``, no network),
            or a jar fails its checksum.
    """
    version = kafka_version(version)
    root = kafka_cache_dir(cache_dir) / version
    libs = root / "libs"
    with _lock:
        if libs in _verified:
            return libs
        manifest = root / _MANIFEST
        pinned = _pinned(version)
        if libs.is_dir() and manifest.is_file():
            sums = pinned if pinned is not None else _read_manifest(manifest)
            _check(libs, sums, f"cached Kafka {version}")
            _verified.add(libs)
            return libs
        if not download:
            raise KafkaJarsError(f"Kafka {version} jars are not in the cache {root}")
        _download(version, root, pinned)
        _verified.add(libs)
        return libs


def _maven() -> str:
    exe = os.environ.get(ENV_MAVEN, "").strip() or shutil.which("mvn")
    if not exe:
        raise KafkaJarsError(
            f"Maven (mvn) is needed to download the Kafka jars once; install it or set {ENV_MAVEN}"
        )
    return exe


_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>rackafka.testing</groupId>
  <artifactId>kafka-broker-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{deps}
  </dependencies>
</project>
"""


def _dep(group: str, artifact: str, version: str) -> str:
    return (
        f"    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
        f"<version>{version}</version></dependency>"
    )


def _copy_dependencies(deps: list[tuple[str, str, str]], out: Path, work: Path) -> None:
    pom = work / "pom.xml"
    pom.write_text(_POM.format(deps="\n".join(_dep(*d) for d in deps)))
    cmd = [
        _maven(),
        "-B",
        "-q",
        "-C",  # fail on a checksum mismatch (Maven checks the repository's .sha1 files)
        "-f",
        str(pom),
        f"{_DEPENDENCY_PLUGIN}:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={out}",
    ]
    try:
        proc = subprocess.run(
            cmd, cwd=work, capture_output=True, text=True, timeout=900, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KafkaJarsError(f"running Maven failed: {exc}") from exc
    if proc.returncode != 0:
        lines = [
            ln.strip()
            for ln in (proc.stdout + "\n" + proc.stderr).splitlines()
            if "[ERROR]" in ln and ln.strip() != "[ERROR]"
        ]
        reason = lines[0].replace("[ERROR]", "").strip() if lines else f"exit {proc.returncode}"
        raise KafkaJarsError(
            f"the Kafka jars are not cached and Maven could not download them "
            f"(no network to Maven Central?): {reason[:400]}"
        )


def _download(version: str, root: Path, pinned: dict[str, str] | None) -> None:
    root.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=root.parent))
    try:
        out = work / "libs"
        _copy_dependencies([("org.apache.kafka", "kafka_2.13", version)], out, work)
        # The broker logs through SLF4J; bind it to the log4j 2 it ships with (4.x), or to
        # a pinned log4j 2 where it ships none (3.x's reload4j binding is optional), so that
        # every version reads the same log4j2.properties.
        cores = [p.name for p in out.glob("log4j-core-*.jar")]
        if not list(out.glob("log4j-slf4j*-impl-*.jar")):
            log4j = cores[0][len("log4j-core-") : -len(".jar")] if cores else _LOG4J2_VERSION
            slf4j = [p.name for p in out.glob("slf4j-api-*.jar")]
            binding = (
                "log4j-slf4j2-impl"
                if slf4j and slf4j[0].startswith("slf4j-api-2")
                else ("log4j-slf4j-impl")
            )
            _copy_dependencies(
                [
                    ("org.apache.kafka", "kafka_2.13", version),
                    ("org.apache.logging.log4j", binding, log4j),
                    ("org.apache.logging.log4j", "log4j-core", log4j),
                ],
                out,
                work,
            )
        if pinned is not None:
            _check(out, pinned, f"Kafka {version} from Maven")
            sums = pinned
        else:
            sums = {p.name: _sha256(p) for p in sorted(out.glob("*.jar"))}
        manifest = work / _MANIFEST
        manifest.write_text("".join(f"{d}  {n}\n" for n, d in sorted(sums.items())))
        (work / "pom.xml").unlink(missing_ok=True)
        if root.exists():
            shutil.rmtree(root)
        os.replace(work, root)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def find_java(java: str | None = None) -> str:
    """The ``java`` executable (``java``, ``$JAVA_HOME/bin/java`` or the PATH's), checked to
    be version 17 or newer.

    Raises:
        JavaNotFoundError: there is none, or it is older than 17.
    """
    exe = java
    if exe is None:
        home = os.environ.get("JAVA_HOME", "").strip()
        candidate = Path(home) / "bin" / "java" if home else None
        exe = str(candidate) if candidate and candidate.is_file() else shutil.which("java")
    if not exe:
        raise JavaNotFoundError(
            "no Java runtime: real Kafka brokers need Java 17+ (java on the PATH or JAVA_HOME)"
        )
    try:
        proc = subprocess.run(
            [exe, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaNotFoundError(
            f"cannot run {exe} ({exc.__class__.__name__}): real Kafka brokers need Java 17+"
        ) from exc
    match = re.search(r'version "(\d+)(?:\.(\d+))?', proc.stderr + proc.stdout)
    if proc.returncode != 0 or not match:
        raise JavaNotFoundError(f"{exe} -version did not report a Java version")
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0" style
        major = int(match.group(2))
    if major < _MIN_JAVA:
        raise JavaNotFoundError(f"{exe} is Java {major}; real Kafka brokers need Java 17+")
    return exe
