"""``python -m rackafka <command>``: ``doctor`` checks that reads stay in the zone."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run a command: ``doctor`` (see :mod:`rackafka.doctor`)."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print("usage: python -m rackafka doctor --bootstrap-servers HOST:PORT --topic T ...")
        return 0 if args else 2
    if args[0] != "doctor":
        print(f"unknown command {args[0]!r}; the commands are: doctor", file=sys.stderr)
        return 2
    from rackafka.doctor import main as doctor

    return doctor(args[1:])


if __name__ == "__main__":
    sys.exit(main())
