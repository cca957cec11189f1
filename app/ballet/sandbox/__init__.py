"""GitHub on loopback: a stateful HTTP double of the GitHub that Ballet uses (DESIGN.md §7)."""
