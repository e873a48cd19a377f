"""ctypes bindings to the mock-cluster API of the librdkafka bundled with confluent-kafka.

Only functions exported by librdkafka are used (the experimental ``rd_kafka_mock_*`` API and a
handful of ordinary ``rd_kafka_*`` calls); nothing here reads or writes librdkafka's private
structures.

The library is the one that the installed ``confluent_kafka`` package loads, so that the
embedded cluster and any ``confluent_kafka`` client share a single copy of librdkafka.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import importlib
import importlib.metadata
import os
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

__all__ = [
    "ConfluentKafkaMissingError",
    "LibrdkafkaNotFoundError",
    "Librdkafka",
    "RawRequest",
    "load_librdkafka",
]

INSTALL_HINT = "pip install rackafka[testing]  (or: pip install confluent-kafka)"

# rd_kafka_type_t
RD_KAFKA_PRODUCER = 0

# The mock-cluster functions the embedded cluster cannot work without.
_REQUIRED_SYMBOLS = (
    "rd_kafka_mock_cluster_new",
    "rd_kafka_mock_cluster_destroy",
    "rd_kafka_mock_cluster_bootstraps",
    "rd_kafka_mock_topic_create",
    "rd_kafka_mock_partition_set_leader",
    "rd_kafka_mock_partition_set_follower",
    "rd_kafka_mock_partition_set_follower_wmarks",
    "rd_kafka_mock_broker_set_rack",
    "rd_kafka_mock_broker_set_down",
    "rd_kafka_mock_broker_set_up",
)


class ConfluentKafkaMissingError(ImportError):
    """``confluent-kafka`` (which ships the librdkafka that runs the cluster) is not installed."""


class LibrdkafkaNotFoundError(ImportError):
    """No librdkafka with the mock-cluster API could be loaded."""


def _import_confluent_kafka() -> Any:
    try:
        return importlib.import_module("confluent_kafka")
    except ImportError as exc:
        raise ConfluentKafkaMissingError(
            "rackafka.testing needs the confluent-kafka package, whose bundled librdkafka "
            f"runs the embedded Kafka cluster: {INSTALL_HINT}"
        ) from exc


def _loaded_librdkafka_paths() -> list[str]:
    """Paths of librdkafka images already mapped into this process (Linux only)."""
    paths: list[str] = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                parts = line.split(None, 5)
                if len(parts) == 6:
                    path = parts[5].strip()
                    base = os.path.basename(path)
                    if base.startswith("librdkafka") and path not in paths:
                        paths.append(path)
    except OSError:
        pass
    return paths


_LIB_PATTERNS = ("librdkafka*.so*", "librdkafka*.dylib", "librdkafka*.dll", "rdkafka*.dll")


def _candidate_paths(package_file: str | None) -> Iterator[str]:
    """Yield possible locations of the librdkafka that ``confluent_kafka`` uses, best first."""
    override = os.environ.get("RACKAFKA_LIBRDKAFKA")
    if override:
        yield override
    yield from _loaded_librdkafka_paths()
    if package_file:
        pkg_dir = os.path.dirname(os.path.abspath(package_file))
        site_dir = os.path.dirname(pkg_dir)
        # auditwheel (Linux) and delvewheel (Windows) put vendored libraries in
        # "<package>.libs" next to the package; delocate (macOS) in "<package>/.dylibs".
        for directory in (
            os.path.join(site_dir, "confluent_kafka.libs"),
            os.path.join(pkg_dir, ".dylibs"),
            pkg_dir,
        ):
            for pattern in _LIB_PATTERNS:
                yield from sorted(glob.glob(os.path.join(directory, pattern)))
    try:
        files = importlib.metadata.files("confluent-kafka") or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for file in files:
        if os.path.basename(str(file)).lower().startswith(("librdkafka", "rdkafka")):
            yield str(file.locate())
    system = ctypes.util.find_library("rdkafka")
    if system:
        yield system


def _open(path: str) -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return None
    if all(hasattr(lib, name) for name in _REQUIRED_SYMBOLS):
        return lib
    return None


class RawRequest:
    """One request seen by the mock cluster while request tracking was on."""

    __slots__ = ("api_key", "broker_id", "timestamp_us")

    def __init__(self, broker_id: int, api_key: int, timestamp_us: int) -> None:
        self.broker_id = broker_id
        self.api_key = api_key
        self.timestamp_us = timestamp_us


_vp = ctypes.c_void_p
_str = ctypes.c_char_p
_i16 = ctypes.c_int16
_i32 = ctypes.c_int32
_i64 = ctypes.c_int64
_int = ctypes.c_int
_size = ctypes.c_size_t
_err = ctypes.c_int  # rd_kafka_resp_err_t is a C enum

# name: (restype, argtypes); argtypes of variadic functions list the fixed arguments only,
# so that ctypes uses the variadic calling convention for the extra ones.
_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "rd_kafka_version_str": (_str, []),
    "rd_kafka_err2str": (_str, [_err]),
    "rd_kafka_err2name": (_str, [_err]),
    "rd_kafka_conf_new": (_vp, []),
    "rd_kafka_conf_destroy": (None, [_vp]),
    "rd_kafka_conf_set": (_int, [_vp, _str, _str, _str, _size]),
    "rd_kafka_new": (_vp, [_int, _vp, _str, _size]),
    "rd_kafka_destroy": (None, [_vp]),
    "rd_kafka_mock_cluster_new": (_vp, [_vp, _int]),
    "rd_kafka_mock_cluster_destroy": (None, [_vp]),
    "rd_kafka_mock_cluster_bootstraps": (_str, [_vp]),
    "rd_kafka_mock_topic_create": (_err, [_vp, _str, _int, _int]),
    "rd_kafka_mock_topic_set_error": (None, [_vp, _str, _err]),
    "rd_kafka_mock_partition_set_leader": (_err, [_vp, _str, _i32, _i32]),
    "rd_kafka_mock_partition_set_follower": (_err, [_vp, _str, _i32, _i32]),
    "rd_kafka_mock_partition_set_follower_wmarks": (_err, [_vp, _str, _i32, _i64, _i64]),
    "rd_kafka_mock_partition_delete_records": (_err, [_vp, _str, _i32, _i64]),
    "rd_kafka_mock_partition_push_request_errors": (_err, [_vp, _str, _i32, _i16, _size]),
    "rd_kafka_mock_broker_set_down": (_err, [_vp, _i32]),
    "rd_kafka_mock_broker_set_up": (_err, [_vp, _i32]),
    "rd_kafka_mock_broker_set_rtt": (_err, [_vp, _i32, _int]),
    "rd_kafka_mock_broker_set_rack": (_err, [_vp, _i32, _str]),
    "rd_kafka_mock_push_request_errors_array": (
        None,
        [_vp, _i16, _size, ctypes.POINTER(_err)],
    ),
    "rd_kafka_mock_broker_push_request_error_rtts": (_err, [_vp, _i32, _i16, _size]),
    "rd_kafka_mock_broker_error_stack_cnt": (_err, [_vp, _i32, _i16, ctypes.POINTER(_size)]),
    "rd_kafka_mock_clear_request_errors": (None, [_vp, _i16]),
    "rd_kafka_mock_set_apiversion": (_err, [_vp, _i16, _i16, _i16]),
    "rd_kafka_mock_coordinator_set": (_err, [_vp, _str, _str, _i32]),
    "rd_kafka_mock_group_initial_rebalance_delay_ms": (None, [_vp, _i32]),
    # KIP-848 consumer groups (librdkafka >= 2.4).
    "rd_kafka_mock_set_group_consumer_session_timeout_ms": (None, [_vp, _int]),
    "rd_kafka_mock_set_group_consumer_heartbeat_interval_ms": (None, [_vp, _int]),
    # librdkafka >= 2.16; its result (if any) is not used.
    "rd_kafka_mock_set_controller_id": (None, [_vp, _i32]),
    "rd_kafka_mock_start_request_tracking": (None, [_vp]),
    "rd_kafka_mock_stop_request_tracking": (None, [_vp]),
    "rd_kafka_mock_clear_requests": (None, [_vp]),
    "rd_kafka_mock_get_requests": (ctypes.POINTER(_vp), [_vp, ctypes.POINTER(_size)]),
    "rd_kafka_mock_request_destroy_array": (None, [ctypes.POINTER(_vp), _size]),
    "rd_kafka_mock_request_id": (_i32, [_vp]),
    "rd_kafka_mock_request_api_key": (_i16, [_vp]),
    "rd_kafka_mock_request_timestamp": (_i64, [_vp]),
}


class Librdkafka:
    """Typed access to the librdkafka functions used by the embedded cluster.

    Missing optional functions (for an older librdkafka) make the corresponding method raise
    :class:`NotImplementedError` with the function's name.
    """

    def __init__(self, lib: ctypes.CDLL, path: str) -> None:
        self.path = path
        self._lib = lib
        self._fns: dict[str, Any] = {}
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(lib, name, None)
            if fn is None:
                continue
            fn.restype = restype
            fn.argtypes = argtypes
            self._fns[name] = fn

    def has(self, name: str) -> bool:
        """Whether the loaded library exports ``name``."""
        return name in self._fns

    def _fn(self, name: str) -> Any:
        try:
            return self._fns[name]
        except KeyError:
            raise NotImplementedError(
                f"the librdkafka at {self.path} does not export {name}(); upgrade confluent-kafka"
            ) from None

    # -- generic ---------------------------------------------------------------------------
    def version(self) -> str:
        """librdkafka's version string, e.g. ``"2.16.0"``."""
        raw = self._fn("rd_kafka_version_str")()
        return raw.decode() if raw else "?"

    def err2str(self, err: int) -> str:
        """Human-readable description of a librdkafka/Kafka error code."""
        raw = self._fn("rd_kafka_err2str")(err)
        return raw.decode(errors="replace") if raw else f"error {err}"

    def err2name(self, err: int) -> str:
        """Symbolic name of a librdkafka/Kafka error code (``"NOT_LEADER_OR_FOLLOWER"``)."""
        raw = self._fn("rd_kafka_err2name")(err)
        return raw.decode(errors="replace") if raw else str(err)

    def new_producer_handle(self, conf: dict[str, str]) -> int:
        """Create an ``rd_kafka_t`` producer handle (it never produces; it hosts the cluster)."""
        handle_conf = self._fn("rd_kafka_conf_new")()
        if not handle_conf:
            raise MemoryError("rd_kafka_conf_new() failed")
        errstr = ctypes.create_string_buffer(512)
        for key, value in conf.items():
            res = self._fn("rd_kafka_conf_set")(
                handle_conf, key.encode(), value.encode(), errstr, len(errstr)
            )
            if res != 0:  # RD_KAFKA_CONF_OK
                self._fn("rd_kafka_conf_destroy")(handle_conf)
                raise ValueError(f"librdkafka rejected {key}={value!r}: {errstr.value.decode()}")
        # On success rd_kafka_new() takes ownership of the conf object, on failure we keep it.
        rk = self._fn("rd_kafka_new")(RD_KAFKA_PRODUCER, handle_conf, errstr, len(errstr))
        if not rk:
            self._fn("rd_kafka_conf_destroy")(handle_conf)
            raise RuntimeError(f"rd_kafka_new() failed: {errstr.value.decode(errors='replace')}")
        return int(rk)

    def destroy_handle(self, rk: int) -> None:
        """``rd_kafka_destroy``."""
        self._fn("rd_kafka_destroy")(rk)

    # -- cluster ---------------------------------------------------------------------------
    def cluster_new(self, rk: int, broker_count: int) -> int:
        """``rd_kafka_mock_cluster_new``; raises when it returns NULL."""
        mc = self._fn("rd_kafka_mock_cluster_new")(rk, broker_count)
        if not mc:
            raise RuntimeError(
                f"rd_kafka_mock_cluster_new(broker_cnt={broker_count}) failed "
                "(could not open loopback listeners?)"
            )
        return int(mc)

    def cluster_destroy(self, mc: int) -> None:
        """``rd_kafka_mock_cluster_destroy``."""
        self._fn("rd_kafka_mock_cluster_destroy")(mc)

    def bootstraps(self, mc: int) -> str:
        """The cluster's ``host:port,...`` list, in broker-id order."""
        raw = self._fn("rd_kafka_mock_cluster_bootstraps")(mc)
        return raw.decode() if raw else ""

    # -- calls returning rd_kafka_resp_err_t -------------------------------------------------
    def call(self, name: str, *args: Any) -> int:
        """Call an exported function by name and return its (integer) result."""
        return int(self._fn(name)(*args))

    def call_void(self, name: str, *args: Any) -> None:
        """Call an exported function that returns nothing."""
        self._fn(name)(*args)

    def push_request_errors(self, mc: int, api_key: int, errors: Sequence[int]) -> None:
        """``rd_kafka_mock_push_request_errors_array``."""
        array = (_err * max(1, len(errors)))(*errors)
        self._fn("rd_kafka_mock_push_request_errors_array")(mc, api_key, len(errors), array)

    def broker_push_request_error_rtts(
        self, mc: int, broker_id: int, api_key: int, pairs: Sequence[tuple[int, int]]
    ) -> int:
        """``rd_kafka_mock_broker_push_request_error_rtts`` with (error, rtt_ms) pairs."""
        varargs: list[Any] = []
        for err, rtt in pairs:
            varargs.extend((_int(err), _int(rtt)))
        return int(
            self._fn("rd_kafka_mock_broker_push_request_error_rtts")(
                mc, broker_id, api_key, len(pairs), *varargs
            )
        )

    def partition_push_request_errors(
        self, mc: int, topic: str, partition: int, api_key: int, errors: Sequence[int]
    ) -> int:
        """``rd_kafka_mock_partition_push_request_errors`` (variadic)."""
        varargs = [_int(err) for err in errors]
        return int(
            self._fn("rd_kafka_mock_partition_push_request_errors")(
                mc, topic.encode(), partition, api_key, len(errors), *varargs
            )
        )

    def broker_error_stack_count(self, mc: int, broker_id: int, api_key: int) -> tuple[int, int]:
        """(error, count) from ``rd_kafka_mock_broker_error_stack_cnt``."""
        count = _size(0)
        err = self._fn("rd_kafka_mock_broker_error_stack_cnt")(
            mc, broker_id, api_key, ctypes.byref(count)
        )
        return int(err), int(count.value)

    def get_requests(self, mc: int) -> list[RawRequest]:
        """Copy the tracked requests out of the cluster and free librdkafka's copies."""
        count = _size(0)
        array = self._fn("rd_kafka_mock_get_requests")(mc, ctypes.byref(count))
        n = int(count.value)
        if not array or n == 0:
            return []
        try:
            get_id = self._fn("rd_kafka_mock_request_id")
            get_key = self._fn("rd_kafka_mock_request_api_key")
            get_ts = self._fn("rd_kafka_mock_request_timestamp")
            out = []
            for i in range(n):
                req = array[i]
                out.append(RawRequest(int(get_id(req)), int(get_key(req)), int(get_ts(req))))
            return out
        finally:
            self._fn("rd_kafka_mock_request_destroy_array")(array, n)


_load_lock = threading.Lock()
_loaded: Librdkafka | None = None


def load_librdkafka() -> Librdkafka:
    """Load (once) the librdkafka that ``confluent_kafka`` uses.

    Raises:
        ConfluentKafkaMissingError: confluent-kafka is not installed.
        LibrdkafkaNotFoundError: no loadable librdkafka exports the mock-cluster API.
    """
    global _loaded
    # Checked on every call, so that a missing confluent-kafka is reported the same way
    # whether or not the library was loaded before.
    module = _import_confluent_kafka()
    with _load_lock:
        if _loaded is not None:
            return _loaded
        tried: list[str] = []
        for path in _dedupe(_candidate_paths(getattr(module, "__file__", None))):
            tried.append(path)
            lib = _open(path)
            if lib is not None:
                _loaded = Librdkafka(lib, path)
                return _loaded
        where = ", ".join(tried) if tried else "nowhere"
        raise LibrdkafkaNotFoundError(
            "could not load a librdkafka that exports the mock-cluster API "
            f"(rd_kafka_mock_cluster_new); tried: {where}. The confluent-kafka wheels from PyPI "
            f"bundle one: {INSTALL_HINT}; or point RACKAFKA_LIBRDKAFKA at a librdkafka >= 2.16"
        )


def _dedupe(paths: Iterable[str]) -> Iterator[str]:
    seen: set[str] = set()
    for path in paths:
        key = os.path.realpath(path) if os.path.exists(path) else path
        if key not in seen:
            seen.add(key)
            yield path


if sys.platform == "darwin":  # pragma: no cover - platform specific
    _CLOCK = "wall"
elif sys.platform == "win32":  # pragma: no cover - platform specific
    _CLOCK = "perf_counter"
else:
    _CLOCK = "monotonic"


def mock_clock_kind() -> str:
    """Which Python clock librdkafka's ``rd_clock()`` matches on this platform.

    ``"monotonic"`` (Linux: ``CLOCK_MONOTONIC``), ``"wall"`` (macOS: ``gettimeofday``) or
    ``"perf_counter"`` (Windows: ``QueryPerformanceCounter``).
    """
    return _CLOCK
