"""A ticket's life above GitHub: its record in Redis (store, lock, memo, live set),
the ticket service that runs the pure core under the ticket's lock, and the
interpreter that turns the core's effects into forge calls and session launches.
"""
