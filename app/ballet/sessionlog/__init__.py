"""A session's log: captured and redacted as it runs, live in Redis, then in an object store."""
