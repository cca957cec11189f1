"""Repositories, contents, git refs, branches and collaborator permissions."""

from __future__ import annotations

import asyncio
import base64

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ballet.sandbox import gitcache, gitrepo, pushes, shapes
from ballet.sandbox.errors import ApiError, not_found, unprocessable
from ballet.sandbox.handler import body_of, field, repo_for, respond
from ballet.sandbox.state import Repo, Sandbox, permission_at_least


async def get_repo(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "read")
    shape = shapes.repository(sb, repo)
    if actor.kind == "user":
        shape["permissions"] = shapes.repo_permissions(repo, actor.login)
    return respond(shape)


async def get_contents(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    path = request.path_params["path"].strip("/")
    ref = request.query_params.get("ref") or repo.default_branch
    # Read off the event loop: nothing here depends on the sandbox's state meanwhile.
    found = await asyncio.to_thread(gitrepo.object_at, repo.path, ref, path)
    if found is None:
        raise not_found()
    kind, sha = found
    if kind == "tree":
        entries = await asyncio.to_thread(gitrepo.list_tree, repo.path, sha)
        return respond(
            [
                _content(
                    sb,
                    repo,
                    "file" if k == "blob" else "dir",
                    s,
                    f"{path}/{n}".lstrip("/"),
                    size,
                    ref,
                )
                for k, s, n, size in entries
            ]
        )
    data = await asyncio.to_thread(gitrepo.read_blob, repo.path, sha)
    shape = _content(sb, repo, "file", sha, path, len(data), ref)
    shape["encoding"] = "base64"
    shape["content"] = base64.encodebytes(data).decode()
    return respond(shape)


def _content(
    sb: Sandbox, repo: Repo, kind: str, sha: str, path: str, size: int, ref: str
) -> shapes.JSON:
    api = f"{shapes.repo_api(sb, repo)}/contents/{path}?ref={ref}"
    html = f"{shapes.repo_html(sb, repo)}/blob/{ref}/{path}"
    git_url = f"{shapes.repo_api(sb, repo)}/git/{'blobs' if kind == 'file' else 'trees'}/{sha}"
    return {
        "type": kind,
        "size": size,
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "sha": sha,
        "url": api,
        "git_url": git_url,
        "html_url": html,
        "download_url": f"{shapes.repo_html(sb, repo)}/raw/{ref}/{path}"
        if kind == "file"
        else None,
        "_links": {"self": api, "git": git_url, "html": html},
    }


async def get_ref(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    ref = "refs/" + request.path_params["ref"]
    sha = gitcache.refs(repo).get(ref)
    if sha is None:
        raise not_found()
    return respond(shapes.git_ref(sb, repo, ref, sha))


async def create_ref(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "write")
    data = await body_of(request)
    ref = field(data, "ref", str, required=True)
    sha = field(data, "sha", str, required=True)
    if not ref.startswith("refs/") or ref.count("/") < 2:
        raise unprocessable(f"{ref} is not a valid ref name.", field="ref")
    if gitcache.commit(repo, sha) is None:
        raise unprocessable("Object does not exist", field="sha")
    async with repo.ref_lock:
        if ref in gitrepo.refs(repo.path):
            raise unprocessable("Reference already exists", field="ref", code="already_exists")
        gitrepo.update_ref(repo.path, ref, sha)
        pushes.ref_moved(sb, repo, ref, gitrepo.ZERO_SHA, sha, actor.login)
    return respond(shapes.git_ref(sb, repo, ref, sha), 201)


async def update_ref(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "write")
    ref = "refs/" + request.path_params["ref"]
    data = await body_of(request)
    sha = field(data, "sha", str, required=True)
    force = bool(field(data, "force", bool))
    if gitcache.commit(repo, sha) is None:
        raise unprocessable("Object does not exist", field="sha")
    async with repo.ref_lock:
        old = gitrepo.refs(repo.path).get(ref)
        if old is None:
            raise unprocessable("Reference does not exist", field="ref")
        if not force and not gitrepo.is_ancestor(repo.path, old, sha):
            raise unprocessable("Update is not a fast forward", field="sha")
        gitrepo.update_ref(repo.path, ref, sha, old)
        pushes.ref_moved(sb, repo, ref, old, sha, actor.login)
    return respond(shapes.git_ref(sb, repo, ref, sha))


async def delete_ref(request: Request) -> Response:
    sb, repo, actor = repo_for(request, "write")
    ref = "refs/" + request.path_params["ref"]
    async with repo.ref_lock:
        old = gitrepo.refs(repo.path).get(ref)
        if old is None:
            raise unprocessable("Reference does not exist", field="ref")
        gitrepo.delete_ref(repo.path, ref)
        pushes.ref_moved(sb, repo, ref, old, gitrepo.ZERO_SHA, actor.login)
    return Response(status_code=204)


async def get_commit(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    sha = gitcache.commit(repo, request.path_params["ref"])
    if sha is None:
        raise ApiError(422, f"No commit found for SHA: {request.path_params['ref']}")
    return respond(shapes.commit(sb, repo, gitcache.commit_info(repo, sha)))


async def get_branch(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    name = request.path_params["branch"]
    sha = gitcache.refs(repo).get(f"refs/heads/{name}")
    if sha is None:
        raise ApiError(404, "Branch not found")
    return respond(shapes.branch(sb, repo, name, gitcache.commit_info(repo, sha)))


async def collaborator_permission(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "read")
    if actor.kind == "user" and not permission_at_least(repo.permission_of(actor.login), "write"):
        raise ApiError(403, "Must have push access to view collaborator permission.")
    login = request.path_params["username"]
    permission = repo.permission_of(login)
    # GitHub folds triage into read and maintain into write in `permission`.
    legacy = {"triage": "read", "maintain": "write"}.get(permission, permission)
    person = shapes.user(sb, login) | {"role_name": permission}
    return respond({"permission": legacy, "role_name": permission, "user": person})


ROUTES = [
    Route("/repos/{owner}/{repo}", get_repo),
    Route("/repos/{owner}/{repo}/contents/{path:path}", get_contents),
    Route("/repos/{owner}/{repo}/git/ref/{ref:path}", get_ref),
    Route("/repos/{owner}/{repo}/git/refs", create_ref, methods=["POST"]),
    Route("/repos/{owner}/{repo}/git/refs/{ref:path}", update_ref, methods=["PATCH"]),
    Route("/repos/{owner}/{repo}/git/refs/{ref:path}", delete_ref, methods=["DELETE"]),
    Route("/repos/{owner}/{repo}/branches/{branch:path}", get_branch),
    Route("/repos/{owner}/{repo}/commits/{ref}", get_commit),
    Route("/repos/{owner}/{repo}/collaborators/{username}/permission", collaborator_permission),
]
