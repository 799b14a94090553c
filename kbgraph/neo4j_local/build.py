"""The jar folder of the local Neo4j: the tools it needs (Java 17+, Maven) and the one-off Maven build.

``kbgraph/resources/neo4j-local/pom.xml`` (package data of ``kbgraph.resources``) lists the Neo4j kernel, its
HTTP server and Neo4j Browser; ``mvn dependency:copy-dependencies`` copies those jars (about 214, 137 MB) into
one folder, in about a minute and a half on an empty ``~/.m2``. A marker file in the folder
(``.kbgraph-complete.json``: the pom's sha256 and the jar names) records a complete jar set, so the build
runs once per pom. Every failure raises :class:`kbgraph.errors.Neo4jLocalError` naming the fix.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

from filelock import FileLock, Timeout

from kbgraph.errors import Neo4jLocalError
from kbgraph.neo4j_local.logs import log_line
from kbgraph.resources import resource

__all__ = ["MARKER", "MAVEN_TIMEOUT", "MIN_JAVA", "build_jars", "check_tools", "is_built", "java_major", "pom_text"]

MIN_JAVA = 17
MARKER = ".kbgraph-complete.json"
MAVEN_TIMEOUT = 1800.0  # seconds


def pom_text() -> str:
    """The bundled pom.xml (package data of ``kbgraph.resources``). Raises Neo4jLocalError if it is missing."""
    try:
        return resource("neo4j-local", "pom.xml").read_text(encoding="utf-8")
    except OSError:
        raise Neo4jLocalError(
            "the Neo4j pom.xml is missing from the kbgraph installation; reinstall kbgraph "
            "(pip install --force-reinstall kbgraph)"
        ) from None


def java_major(java: str) -> int | None:
    """Major version from ``java -version`` (``"17.0.15"`` -> 17, ``"1.8.0_402"`` -> 8), None if unreadable."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        return None
    major = int(m.group(1))
    if major == 1 and m.group(2):
        major = int(m.group(2))
    return major


def check_tools(need_maven: bool) -> str:
    """Path of a java >= 17 on PATH; also checks mvn if ``need_maven``. Raises Neo4jLocalError naming the fix."""
    java = shutil.which("java")
    mvn = shutil.which("mvn") if need_maven else "not needed"
    if java is None and mvn is None:
        raise Neo4jLocalError(
            f"java (JDK {MIN_JAVA}+) and mvn (Maven) are not on PATH; install them "
            f"(e.g. apt-get install openjdk-{MIN_JAVA}-jdk-headless maven) or run Neo4j with Docker "
            "(docker compose -f docker/docker-compose.yml up) and set KBGRAPH_URI"
        )
    if java is None:
        raise Neo4jLocalError(
            f"java (JDK {MIN_JAVA}+) is not on PATH; install a JDK {MIN_JAVA} or newer "
            f"(e.g. apt-get install openjdk-{MIN_JAVA}-jdk-headless) or run Neo4j with Docker and set KBGRAPH_URI"
        )
    major = java_major(java)
    if major is None or major < MIN_JAVA:
        found = "an unreadable version" if major is None else f"Java {major}"
        raise Neo4jLocalError(
            f"Neo4j 5 needs Java {MIN_JAVA} or newer but {java} is {found}; install a JDK {MIN_JAVA}+ "
            f"(e.g. apt-get install openjdk-{MIN_JAVA}-jdk-headless) and put it first on PATH"
        )
    if mvn is None:
        raise Neo4jLocalError(
            "mvn (Maven) is not on PATH; it is needed once to fetch Neo4j from Maven Central: install it "
            "(e.g. apt-get install maven) or run Neo4j with Docker and set KBGRAPH_URI"
        )
    return java


def is_built(lib_dir: Path) -> bool:
    """True if ``lib_dir`` holds the complete jar set for the bundled pom.xml."""
    try:
        marker = json.loads((lib_dir / MARKER).read_text())
    except (OSError, ValueError):
        return False
    if marker.get("pom_sha256") != hashlib.sha256(pom_text().encode()).hexdigest():
        return False
    jars = marker.get("jars") or []
    return bool(jars) and all((lib_dir / j).is_file() for j in jars)


def build_jars(lib_dir: Path, force: bool = False) -> Path:
    """Copy the Neo4j jars from Maven Central into ``lib_dir`` once; return that folder.

    Reuses a complete folder unless ``force``. Raises Neo4jLocalError if java (>= 17) or mvn is missing,
    if Maven fails (e.g. no access to Maven Central), or if another process holds the build lock for
    ``MAVEN_TIMEOUT`` seconds."""
    if not force and is_built(lib_dir):
        return lib_dir
    check_tools(need_maven=True)
    lib_dir.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(lib_dir.parent / f".{lib_dir.name}.build.lock"), timeout=MAVEN_TIMEOUT)
    try:
        with lock:
            if not force and is_built(lib_dir):  # built by another process meanwhile
                return lib_dir
            _run_maven(lib_dir)
    except Timeout:
        raise Neo4jLocalError(
            f"another process has been building {lib_dir} for {MAVEN_TIMEOUT:.0f} s; wait for it "
            "or delete its .build.lock file"
        ) from None
    return lib_dir


def _run_maven(lib_dir: Path) -> None:
    mvn = shutil.which("mvn")
    assert mvn is not None
    stage = lib_dir.parent / f".{lib_dir.name}.building"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    pom = stage / "pom.xml"
    text = pom_text()
    pom.write_text(text, encoding="utf-8")
    jars_dir = stage / "lib"
    cmd = [
        mvn,
        "-q",
        "-B",
        "-f",
        str(pom),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={jars_dir}",
        "-DincludeScope=runtime",
    ]
    try:
        out = subprocess.run(cmd, cwd=stage, capture_output=True, text=True, timeout=MAVEN_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise Neo4jLocalError(
            f"the Maven build of Neo4j took over {MAVEN_TIMEOUT:.0f} s; check access to Maven Central "
            f"(repo.maven.apache.org) and retry"
        ) from None
    jars = sorted(p.name for p in jars_dir.glob("*.jar")) if jars_dir.is_dir() else []
    if out.returncode != 0 or not jars:
        output = out.stdout + "\n" + out.stderr
        errors = [ln for ln in output.splitlines() if ln.startswith("[ERROR]") and ln[7:].strip()]
        why = log_line(errors[0] if errors else (output.strip().splitlines() or ["no output"])[-1])
        raise Neo4jLocalError(
            f"the Maven build of Neo4j failed ({why}); check access to Maven Central and "
            f"~/.m2/settings.xml, then retry (run by hand: {' '.join(cmd)})"
        )
    shutil.rmtree(lib_dir, ignore_errors=True)
    jars_dir.rename(lib_dir)
    marker = {
        "pom_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "jars": jars,
    }
    (lib_dir / MARKER).write_text(json.dumps(marker, indent=1))
    shutil.rmtree(stage, ignore_errors=True)
