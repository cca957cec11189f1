"""First-run setup: register Ballet's GitHub App through GitHub's App manifest flow
(`flow.SetupFlow`, served by `ballet serve` at `/setup`)."""
