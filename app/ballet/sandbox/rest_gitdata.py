"""Git's data API: read a commit, create a commit from a tree (Ballet's seed commits)."""

from __future__ import annotations

import zlib

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ballet.sandbox import gitcache, gitrepo, shapes
from ballet.sandbox.errors import not_found, unprocessable
from ballet.sandbox.handler import body_of, field, repo_for, respond
from ballet.sandbox.state import Repo, Sandbox


def git_commit(sb: Sandbox, repo: Repo, info: gitrepo.CommitInfo) -> shapes.JSON:
    api = f"{shapes.repo_api(sb, repo)}/git/commits/{info.sha}"
    return {
        "sha": info.sha,
        "node_id": shapes.node_id("Commit", zlib.crc32(info.sha.encode())),
        "url": api,
        "html_url": f"{shapes.repo_html(sb, repo)}/commit/{info.sha}",
        "author": shapes.git_actor(info.author_name, info.author_email, info.timestamp),
        "committer": shapes.git_actor(info.committer_name, info.committer_email, info.timestamp),
        "message": info.message,
        "tree": {"sha": info.tree, "url": f"{shapes.repo_api(sb, repo)}/git/trees/{info.tree}"},
        "parents": [
            {
                "sha": p,
                "url": f"{shapes.repo_api(sb, repo)}/git/commits/{p}",
                "html_url": f"{shapes.repo_html(sb, repo)}/commit/{p}",
            }
            for p in info.parents
        ],
        "verification": {
            "verified": False,
            "reason": "unsigned",
            "signature": None,
            "payload": None,
            "verified_at": None,
        },
    }


async def get_commit(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    found = gitrepo.object_at(repo.path, request.path_params["sha"], "")
    sha = gitcache.commit(repo, request.path_params["sha"])
    if found is None or sha is None:
        raise not_found()
    return respond(git_commit(sb, repo, gitcache.commit_info(repo, sha)))


async def create_commit(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "write")
    data = await body_of(request)
    message = field(data, "message", str, required=True)
    tree = field(data, "tree", str, required=True)
    parents = field(data, "parents", list) or []
    found = gitrepo.object_at(repo.path, tree, "")
    if found is None or found[0] != "tree":
        raise unprocessable("Tree SHA does not exist", field="tree")
    for parent in parents:
        if not isinstance(parent, str) or gitrepo.resolve(repo.path, parent) is None:
            raise unprocessable(
                "Parent SHA does not exist or is not a commit object", field="parents"
            )
    env = {
        "GIT_AUTHOR_NAME": actor.login,
        "GIT_AUTHOR_EMAIL": f"{actor.login}@users.noreply.github.com",
        "GIT_COMMITTER_NAME": actor.login,
        "GIT_COMMITTER_EMAIL": f"{actor.login}@users.noreply.github.com",
    }
    sha = gitrepo.commit_tree(repo.path, found[1], [str(p) for p in parents], message, env)
    return respond(git_commit(sb, repo, gitrepo.commit_info(repo.path, sha)), 201)


ROUTES = [
    Route("/repos/{owner}/{repo}/git/commits", create_commit, methods=["POST"]),
    Route("/repos/{owner}/{repo}/git/commits/{sha}", get_commit),
]
