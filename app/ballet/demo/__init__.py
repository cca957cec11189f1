"""The offline demo: a repository, a scripted agent and an issue for `ballet sandbox demo`."""
