"""Internals of the ``toolcode`` command line (see :mod:`toolcode.cli`)."""
