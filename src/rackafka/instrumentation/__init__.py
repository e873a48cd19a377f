"""Instrumentation of the clients for observability systems (floor 4: above the roles).

Nothing here is imported by ``rackafka`` itself: import the module of the system you use,
such as :mod:`rackafka.instrumentation.opentelemetry`.
"""
