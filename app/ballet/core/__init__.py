"""The pure core: pipeline semantics as values in, values out.

Nothing here does I/O, reads the environment or the clock, or imports a
network, queue, process or web library; tests/core/test_purity.py checks it.
"""
