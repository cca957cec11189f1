"""What the worker runs: deliveries, stage sessions, ticket events, the reconciler,
heartbeats and artifacts, and the registry of them all (`registry.queue_specs`).

`services` is the bottom: the types every job shares; job modules import it, never
the composition root (`ballet.wiring`) that builds it.
"""
