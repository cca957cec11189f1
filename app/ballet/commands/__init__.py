"""One module per `ballet` subcommand: `add_arguments(parser)` and `run(args) -> int`."""
