"""The package's version, in a leaf module so that every floor can name it without importing
the package's public face (``rackafka/__init__.py`` imports the roles)."""

__version__ = "0.1.0.dev0"
