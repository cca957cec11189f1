"""The core's test builders live in `core_kit` (a unique module name, so they
never clash with another area's conftest); tests import them from there."""
