"""A real, local Neo4j 5 Community server for machines without Docker.

The server is assembled from Maven Central, not downloaded as a tarball: ``build`` copies the jars that
``kbgraph/resources/neo4j-local/pom.xml`` lists (the Neo4j kernel, its HTTP server and Neo4j Browser) into one
``lib`` folder, once. ``logs`` reads the cause of a failure out of Java's output; ``server`` runs the server.

:class:`Neo4jLocal` then runs ``java -cp '<lib>/*' org.neo4j.server.CommunityEntryPoint`` detached from the
calling process, with its own configuration written to ``<neo4j_dir>/conf/neo4j.conf``: it listens on
127.0.0.1 only (Bolt on ``neo4j_bolt_port``, HTTP and the Browser on ``neo4j_http_port``), with
authentication on and the initial password set from ``neo4j_password`` before the first start. Data, logs,
run, import and plugins folders live under ``<neo4j_dir>`` (default ``~/.kbgraph/neo4j-local``); the console
output goes to ``<neo4j_dir>/logs/console.log``. The server outlives the Python process that started it:
:meth:`Neo4jLocal.stop` stops it. A file lock (``<neo4j_dir>/launcher.lock``) and a pid file keep two callers
from launching two servers on one folder.

The jar folder defaults to ``<neo4j_dir>/lib``; ``Neo4jLocal(settings, lib_dir=...)`` or the environment
variable ``KBGRAPH_NEO4J_LIB`` point several instances (e.g. tests) at one shared, already-built folder.

Needs: a JDK/JRE 17 or newer (``java``) and, for the one-off build, Maven (``mvn``) with access to Maven Central.
Every failure raises :class:`kbgraph.errors.Neo4jLocalError` with a one-line message that names the fix.
The graph it serves is the one of PIKE-RAG §3.1 (Fig. 3), explored in Neo4j Browser (``kbgraph.browse``).
"""

from kbgraph.neo4j_local.build import MIN_JAVA
from kbgraph.neo4j_local.server import LIB_ENV, Neo4jLocal, Neo4jStatus

__all__ = ["LIB_ENV", "MIN_JAVA", "Neo4jLocal", "Neo4jStatus"]
