"""Make the test CA and the broker certificate of docker-compose.yml's SASL_SSL listener.

Writes ``compose/certs/ca.pem`` (trust it in clients) and ``compose/certs/broker.pem`` (the
brokers' PEM key store: an unencrypted PKCS#8 key and the certificate for ``localhost`` and
127.0.0.1).  Test material only: never use these certificates for anything real.

Usage: ``python compose/make_certs.py`` (needs ``trustme``, in the ``test`` extra).
"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> int:
    """Write the certificates next to this script."""
    import trustme

    out = Path(__file__).resolve().parent / "certs"
    out.mkdir(exist_ok=True)
    ca = trustme.CA(organization_name="rackafka compose test CA")
    broker = ca.issue_cert("localhost", "127.0.0.1", "kafka-1", "kafka-2", "kafka-3")
    ca.cert_pem.write_to_path(str(out / "ca.pem"))
    broker.private_key_and_cert_chain_pem.write_to_path(str(out / "broker.pem"))
    (out / "broker.pem").chmod(0o644)  # read by the container's kafka user
    print(f"wrote {out / 'ca.pem'} and {out / 'broker.pem'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
