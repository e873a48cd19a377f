"""Helpers with aiokafka's names: :func:`create_ssl_context` for TLS connections.

Never logs key passwords or certificate contents.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable
from os import PathLike
from typing import Union

log = logging.getLogger(__name__)

_Path = Union[str, bytes, "PathLike[str]", "PathLike[bytes]"]


def create_ssl_context(
    *,
    cafile: _Path | None = None,
    capath: _Path | None = None,
    cadata: str | bytes | None = None,
    certfile: _Path | None = None,
    keyfile: _Path | None = None,
    password: Callable[[], str | bytes | bytearray] | str | bytes | bytearray | None = None,
) -> ssl.SSLContext:
    """Make an :class:`ssl.SSLContext` for connections to brokers (aiokafka's signature).

    The context verifies the broker's certificate and host name (``check_hostname`` is
    always on).  Without ``cafile``, ``capath`` or ``cadata`` the system's CAs are
    trusted, which is what Amazon MSK, Confluent Cloud and Aiven (with its CA file)
    need.

    Arguments:
        cafile: a PEM file of the CA certificates that sign the brokers' certificates.
        capath: a directory of CA certificates (as OpenSSL's ``c_rehash`` lays them out).
        cadata: CA certificates as PEM text or DER bytes.
        certfile: the client certificate (PEM) for mutual TLS, with any intermediate
            certificates.
        keyfile: the client private key (PEM), when not in ``certfile``.
        password: the private key's password, or a function that returns it.

    Returns:
        a client-side :class:`ssl.SSLContext`.

    Raises:
        FileNotFoundError: a file does not exist.
        ssl.SSLError: a certificate or key cannot be loaded (wrong password, bad PEM).
    """
    if cafile or capath:
        log.debug("trusting the CA certificates of %s", cafile or capath)
    context = ssl.create_default_context(
        ssl.Purpose.SERVER_AUTH, cafile=cafile, capath=capath, cadata=cadata
    )
    if certfile is not None:
        log.debug("loading the client certificate %s", certfile)
        context.load_cert_chain(certfile, keyfile, password)
    return context


__all__ = ["create_ssl_context"]
