"""Ballet's web face: ticket pages and their session logs, behind "Sign in with GitHub".

Modelled on Prow's Deck and Spyglass: server-rendered pages, one per ticket and
one per session, logs by link, and what a person may see decided by GitHub
(`access.py`: read access to the ticket's repository, asked with the App's
installation). `routes.py` is the table of every URL; `state.py` what the web
app's lifespan builds for these handlers.
"""
