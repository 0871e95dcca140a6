"""Benchmark tooling: a load generator, the peers it compares against, and the comparison runner.

Never part of the test suite: `python -m bench.load --help` is the entry point.
"""
