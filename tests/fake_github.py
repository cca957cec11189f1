"""A small stateful GitHub for respx: the one fake every test at the GitHub HTTP edge shares.

It answers the REST paths Ballet's forge and ticket source call with GitHub's
JSON shapes, keeps issues, comments, labels, branches, pull requests and check
runs, and records every request as (method, path) so tests can count API calls.
ETags and If-None-Match work like GitHub's (a 304 with no body), installation
tokens are minted and counted, `fail_next` queues canned failures (a 403
secondary rate limit, a 502, a gzip body) for the next matching request and
`drop_next` a broken connection. `serving()` puts it in front of every httpx
client for the length of a `with` block. Tests that need real git or a real
server over loopback use the sandbox (ballet.sandbox) instead.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import respx

API = "https://api.github.com"
APP_ID = 4242
INSTALLATION_ID = 77
REPO = "Codertocat/Hello-World"
Handler = Callable[..., httpx.Response]


@dataclass
class FakeRepo:
    full_name: str
    default_branch: str = "main"
    branches: dict[str, str] = field(default_factory=lambda: {"main": "a" * 40})
    files: dict[str, dict[str, str]] = field(default_factory=dict)  # ref -> path -> text
    collaborators: dict[str, str] = field(default_factory=dict)  # login -> permission


@dataclass
class FakeIssue:
    number: int
    title: str
    body: str
    author: str
    state: str = "open"


@dataclass
class FakeComment:
    id: int
    issue: int
    body: str
    user: str


@dataclass
class FakePR:
    number: int
    head: str
    base: str
    head_sha: str
    title: str
    body: str
    draft: bool = True
    state: str = "open"
    merged: bool = False
    mergeable: bool | None = True
    behind: bool = False  # behind its base, under a protection that wants it up to date
    # Reads that answer `mergeable: null` first, as GitHub does while it computes it.
    computing: int = 0
    files: list[str] = field(default_factory=list)


@dataclass
class Failure:
    """A canned answer for the next matching request: a response, or a broken connection."""

    method: str
    path: re.Pattern[str]
    status: int = 0
    content: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    error: Exception | None = None

    def answer(self) -> httpx.Response:
        if self.error is not None:
            raise self.error
        # A stream, as the network hands it over: the client reads (and decodes) it.
        return httpx.Response(
            self.status, headers=self.headers, stream=httpx.ByteStream(self.content)
        )


class FakeGitHub:
    """GitHub's REST API for one App, in memory; call it with a request, or use `serving()`.

    Seed it with `add_repo` and `add_issue`, read what Ballet did from its state
    (`comments`, `labels`, `prs`, `check_runs`, ...) and from `calls`.
    """

    def __init__(self, bot_login: str = "ballet-test[bot]") -> None:
        self.repos: dict[str, FakeRepo] = {}
        self.issues: dict[tuple[str, int], FakeIssue] = {}
        self.comments: dict[int, FakeComment] = {}
        self.labels: dict[tuple[str, int], list[str]] = {}
        self.reactions: list[tuple[int, str]] = []
        self.prs: dict[tuple[str, int], FakePR] = {}
        self.check_runs: dict[int, dict[str, Any]] = {}
        self.reviewers: dict[tuple[str, int], list[str]] = {}
        self.calls: list[tuple[str, str]] = []
        self.token_requests = 0
        self.token_lifetime = timedelta(hours=1)  # as GitHub's installation tokens
        self.minted: set[str] = set()
        self.not_modified = 0  # conditional GETs answered 304 (free of rate limit)
        self.bot_login = bot_login
        self.failures: list[Failure] = []
        # The most requests seen in flight at once, and writes among them.
        self.in_flight_writes = 0
        self.max_in_flight_writes = 0
        self.write_delay = 0.0
        self._next_id = 1000
        self._next_number = 100
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = [
            ("POST", _p(r"/app/installations/(\d+)/access_tokens"), self._token),
            ("GET", _p(r"/app"), self._app),
            ("GET", _p(r"/app/installations"), self._installations),
            ("GET", _p(r"/installation/repositories"), self._installation_repos),
            ("GET", _p(r"/repos/([^/]+/[^/]+)/issues"), self._list_issues),
            ("GET", _p(r"/repos/([^/]+/[^/]+)"), self._repo),
            ("GET", _p(r"/repos/([^/]+/[^/]+)/installation"), self._installation),
            ("GET", _p(r"/repos/([^/]+/[^/]+)/contents/(.*)"), self._contents),
            ("GET", _p(r"/repos/([^/]+/[^/]+)/git/ref/heads/(.+)"), self._get_ref),
            ("GET", _p(r"/repos/([^/]+/[^/]+)/branches/(.+)"), self._get_branch),
            ("POST", _p(r"/repos/([^/]+/[^/]+)/git/refs"), self._create_ref),
            ("GET", _p(r"/repos/([^/]+/[^/]+)/git/commits/([0-9a-f]+)"), self._get_commit),
            ("POST", _p(r"/repos/([^/]+/[^/]+)/git/commits"), self._create_commit),
            ("GET", _p(r"/repos/([^/]+/[^/]+)/issues/(\d+)"), self._get_issue),
            ("POST", _p(r"/repos/([^/]+/[^/]+)/pulls"), self._create_pr),
            ("GET", _p(r"/repos/([^/]+/[^/]+)/pulls"), self._list_prs),
            ("GET", _p(r"/repos/([^/]+/[^/]+)/pulls/(\d+)"), self._get_pr),
            ("GET", _p(r"/repos/([^/]+/[^/]+)/pulls/(\d+)/files"), self._pr_files),
            ("PUT", _p(r"/repos/([^/]+/[^/]+)/pulls/(\d+)/merge"), self._merge),
            ("PUT", _p(r"/repos/([^/]+/[^/]+)/pulls/(\d+)/update-branch"), self._update_branch),
            ("POST", _p(r"/repos/([^/]+/[^/]+)/pulls/(\d+)/requested_reviewers"), self._reviewers),
            ("GET", _p(r"/repos/([^/]+/[^/]+)/issues/(\d+)/timeline"), self._timeline),
            ("GET", _p(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments"), self._list_comments),
            ("POST", _p(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments"), self._create_comment),
            ("PATCH", _p(r"/repos/([^/]+/[^/]+)/issues/comments/(\d+)"), self._edit_comment),
            ("POST", _p(r"/repos/([^/]+/[^/]+)/issues/comments/(\d+)/reactions"), self._react),
            ("POST", _p(r"/repos/([^/]+/[^/]+)/issues/(\d+)/labels"), self._add_labels),
            ("DELETE", _p(r"/repos/([^/]+/[^/]+)/issues/(\d+)/labels/(.+)"), self._remove_label),
            ("POST", _p(r"/repos/([^/]+/[^/]+)/check-runs"), self._create_check),
            ("PATCH", _p(r"/repos/([^/]+/[^/]+)/check-runs/(\d+)"), self._update_check),
            ("GET", _p(r"/repos/([^/]+/[^/]+)/commits/([^/]+)/check-runs"), self._list_checks),
            ("GET", _p(r"/repos/([^/]+/[^/]+)/commits/([^/]+)/status"), self._status),
            (
                "GET",
                _p(r"/repos/([^/]+/[^/]+)/collaborators/([^/]+)/permission"),
                self._permission,
            ),
            ("POST", _p(r"/graphql"), self._graphql),
        ]

    # -- set-up helpers ------------------------------------------------------

    def add_repo(self, full_name: str, **kwargs: Any) -> FakeRepo:
        repo = FakeRepo(full_name, **kwargs)
        self.repos[full_name] = repo
        return repo

    def add_issue(
        self,
        repo: str,
        number: int,
        *,
        title: str,
        body: str = "",
        author: str = "octocat",
        labels: tuple[str, ...] = (),
    ) -> FakeIssue:
        """An issue on a repository added with `add_repo`; its labels live in `labels`."""
        issue = FakeIssue(number, title, body, author)
        self.issues[(repo, number)] = issue
        self.labels[(repo, number)] = list(labels)
        return issue

    def fail_next(
        self,
        method: str,
        path_regex: str,
        status: int,
        body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        *,
        raw: bytes | None = None,
    ) -> None:
        """Answer the next `method` request on a path matching `path_regex` with `status`,
        a JSON `body` (or `raw` bytes, sent as they are) and `headers`."""
        if raw is None:
            raw = json.dumps(body or {}).encode()
            headers = {"content-type": "application/json", **(headers or {})}
        self.failures.append(Failure(method, re.compile(path_regex), status, raw, headers or {}))

    def drop_next(self, method: str, path_regex: str, error: httpx.TransportError) -> None:
        """Fail the next matching request with no response at all: `error` is raised."""
        self.failures.append(Failure(method, re.compile(path_regex), error=error))

    @contextmanager
    def serving(self, api_url: str = API) -> Iterator[respx.MockRouter]:
        """Answer every request to `api_url` from this fake while the block runs."""
        with respx.mock(base_url=api_url, assert_all_called=False) as router:
            router.route().mock(side_effect=self)
            yield router

    def requests_to(self, method: str, path: str) -> int:
        """How many `method` requests reached `path`, canned failures included."""
        return self.calls.count((method, path))

    def comments_on(self, number: int) -> list[FakeComment]:
        return [c for c in self.comments.values() if c.issue == number]

    def writes(self) -> list[tuple[str, str]]:
        return [c for c in self.calls if c[0] != "GET" and "access_tokens" not in c[1]]

    # -- dispatch --------------------------------------------------------------

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.calls.append((request.method, path))
        for failure in self.failures:
            if failure.method == request.method and failure.path.fullmatch(path):
                self.failures.remove(failure)
                return failure.answer()
        if not _APP_JWT_PATHS.fullmatch(path) and _credential(request) not in self.minted:
            # As GitHub: anything but the App's own endpoints needs an installation token.
            return httpx.Response(401, json={"message": "Bad credentials"})
        for method, pattern, handler in self._routes:
            match = pattern.fullmatch(path)
            if method == request.method and match:
                if method == "GET":
                    response = _with_etag(request, handler(request, *match.groups()))
                    self.not_modified += response.status_code == 304
                    return response
                return await self._write(request, handler, match.groups())
        return httpx.Response(
            404, json={"message": f"fake GitHub: no route {request.method} {path}"}
        )

    async def _write(
        self, request: httpx.Request, handler: Handler, groups: tuple[str, ...]
    ) -> httpx.Response:
        counted = "access_tokens" not in request.url.path
        if counted:
            self.in_flight_writes += 1
            self.max_in_flight_writes = max(self.max_in_flight_writes, self.in_flight_writes)
        try:
            if self.write_delay:
                await asyncio.sleep(self.write_delay)
            return handler(request, *groups)
        finally:
            if counted:
                self.in_flight_writes -= 1

    def _id(self) -> int:
        self._next_id += 1
        return self._next_id

    # -- handlers --------------------------------------------------------------

    def _token(self, request: httpx.Request, installation: str) -> httpx.Response:
        assert request.headers["authorization"].startswith("Bearer ")
        self.token_requests += 1
        expires = (datetime.now(UTC) + self.token_lifetime).strftime("%Y-%m-%dT%H:%M:%SZ")
        token = f"ghs_{installation}_{self.token_requests}"
        self.minted.add(token)
        return httpx.Response(201, json={"token": token, "expires_at": expires})

    def _app(self, request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"].startswith("Bearer ")
        return httpx.Response(
            200, json={"id": APP_ID, "slug": self.bot_login.removesuffix("[bot]")}
        )

    def _installations(self, request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"].startswith("Bearer ")
        page = int(request.url.params.get("page", "1"))
        listed = [{"id": INSTALLATION_ID, "account": {"login": "x"}}] if page == 1 else []
        return httpx.Response(200, json=listed)

    def _installation_repos(self, request: httpx.Request) -> httpx.Response:
        assert _credential(request) in self.minted  # an installation token, not the JWT
        names = sorted(self.repos)
        return httpx.Response(
            200,
            json={
                "total_count": len(names),
                "repositories": [{"full_name": n, "id": i} for i, n in enumerate(names, 1)],
            },
        )

    def _list_issues(self, request: httpx.Request, repo: str) -> httpx.Response:
        """Open issues with every one of `labels` (GitHub lists pull requests here too)."""
        wanted = [n for n in request.url.params.get("labels", "").split(",") if n]
        page = int(request.url.params.get("page", "1"))
        found = [
            {"number": number, "state": issue.state, "title": issue.title}
            for (r, number), issue in sorted(self.issues.items())
            if r == repo
            and issue.state == request.url.params.get("state", "open")
            and all(n in self.labels.get((r, number), []) for n in wanted)
        ]
        found += [
            {"number": number, "state": "open", "pull_request": {"url": "x"}}
            for (r, number) in sorted(self.prs)
            if r == repo and all(n in self.labels.get((r, number), []) for n in wanted)
        ]
        return httpx.Response(200, json=found if page == 1 else [])

    def _installation(self, request: httpx.Request, repo: str) -> httpx.Response:
        assert request.headers["authorization"].startswith("Bearer ")
        if repo not in self.repos:
            return _not_found()
        return httpx.Response(200, json={"id": INSTALLATION_ID, "account": {"login": "x"}})

    def _repo(self, request: httpx.Request, repo: str) -> httpx.Response:
        r = self.repos.get(repo)
        if r is None:
            return _not_found()
        return httpx.Response(
            200, json={"full_name": r.full_name, "default_branch": r.default_branch}
        )

    def _contents(self, request: httpx.Request, repo: str, path: str) -> httpx.Response:
        r = self.repos[repo]
        ref = request.url.params.get("ref", r.default_branch)
        files = r.files.get(ref, {})
        path = path.rstrip("/")
        if path in files:
            encoded = base64.b64encode(files[path].encode()).decode()
            return httpx.Response(
                200,
                json={
                    "type": "file",
                    "name": path.rsplit("/", 1)[-1],
                    "path": path,
                    "encoding": "base64",
                    "content": encoded,
                },
            )
        inside = [p for p in files if p.startswith(path + "/") and "/" not in p[len(path) + 1 :]]
        if inside:
            return httpx.Response(
                200,
                json=[{"type": "file", "name": p.rsplit("/", 1)[-1], "path": p} for p in inside],
            )
        return _not_found()

    def _get_ref(self, request: httpx.Request, repo: str, branch: str) -> httpx.Response:
        sha = self.repos[repo].branches.get(branch)
        if sha is None:
            return _not_found()
        return httpx.Response(
            200, json={"ref": f"refs/heads/{branch}", "object": {"sha": sha, "type": "commit"}}
        )

    def _get_branch(self, request: httpx.Request, repo: str, branch: str) -> httpx.Response:
        sha = self.repos[repo].branches.get(branch)
        if sha is None:
            return httpx.Response(404, json={"message": "Branch not found"})
        commit = {"sha": sha, "commit": {"tree": {"sha": "t" * 40}, "message": "m"}}
        return httpx.Response(200, json={"name": branch, "commit": commit, "protected": False})

    def _get_commit(self, request: httpx.Request, repo: str, sha: str) -> httpx.Response:
        return httpx.Response(200, json={"sha": sha, "tree": {"sha": "t" * 40}, "message": "m"})

    def _create_commit(self, request: httpx.Request, repo: str) -> httpx.Response:
        body = json.loads(request.content)
        self._next_id += 1
        sha = hashlib.sha1(f"{body['message']}{self._next_id}".encode()).hexdigest()
        return httpx.Response(201, json={"sha": sha, "tree": {"sha": body["tree"]}})

    def _create_ref(self, request: httpx.Request, repo: str) -> httpx.Response:
        body = json.loads(request.content)
        name = body["ref"].removeprefix("refs/heads/")
        branches = self.repos[repo].branches
        if name in branches:
            return httpx.Response(422, json={"message": "Reference already exists"})
        branches[name] = body["sha"]
        return httpx.Response(201, json={"ref": body["ref"], "object": {"sha": body["sha"]}})

    def _get_issue(self, request: httpx.Request, repo: str, number: str) -> httpx.Response:
        issue = self.issues.get((repo, int(number)))
        if issue is None:
            return _not_found()
        labels = self.labels.get((repo, issue.number), [])
        return httpx.Response(
            200,
            json={
                "number": issue.number,
                "title": issue.title,
                "body": issue.body,
                "state": issue.state,
                "html_url": f"https://github.com/{repo}/issues/{issue.number}",
                "labels": [{"name": name} for name in labels],
                "user": {"login": issue.author, "type": "User"},
                "repository_url": f"{API}/repos/{repo}",
                "parent_issue_url": None,
            },
        )

    def _pr_json(self, repo: str, pr: FakePR) -> dict[str, Any]:
        return {
            "number": pr.number,
            "node_id": f"PR_{pr.number}",
            "head": {"ref": pr.head, "sha": pr.head_sha},
            "base": {"ref": pr.base, "sha": self.repos[repo].branches.get(pr.base, "")},
            "state": pr.state,
            "merged": pr.merged,
            "draft": pr.draft,
            "mergeable": pr.mergeable,
            "mergeable_state": "behind" if pr.behind else "clean" if pr.mergeable else "dirty",
            "html_url": f"https://github.com/{repo}/pull/{pr.number}",
            "body": pr.body,
            "title": pr.title,
        }

    def _create_pr(self, request: httpx.Request, repo: str) -> httpx.Response:
        body = json.loads(request.content)
        r = self.repos[repo]
        if body["head"] not in r.branches:
            return httpx.Response(422, json={"message": "Validation Failed: head"})
        self._next_number += 1
        pr = FakePR(
            number=self._next_number,
            head=body["head"],
            base=body["base"],
            head_sha=r.branches[body["head"]],
            title=body["title"],
            body=body.get("body", ""),
            draft=body.get("draft", False),
        )
        self.prs[(repo, pr.number)] = pr
        return httpx.Response(201, json=self._pr_json(repo, pr))

    def _list_prs(self, request: httpx.Request, repo: str) -> httpx.Response:
        head = request.url.params.get("head", "")
        branch = head.split(":", 1)[-1]
        found = [
            self._pr_json(repo, pr)
            for (name, _), pr in self.prs.items()
            if name == repo and pr.state == "open" and (not head or pr.head == branch)
        ]
        return httpx.Response(200, json=found)

    def _get_pr(self, request: httpx.Request, repo: str, number: str) -> httpx.Response:
        pr = self.prs.get((repo, int(number)))
        if pr is not None and pr.computing > 0:
            pr.computing -= 1
            unknown = {"mergeable": None, "mergeable_state": "unknown"}
            return httpx.Response(200, json=self._pr_json(repo, pr) | unknown)
        return httpx.Response(200, json=self._pr_json(repo, pr)) if pr else _not_found()

    def _pr_files(self, request: httpx.Request, repo: str, number: str) -> httpx.Response:
        pr = self.prs[(repo, int(number))]
        return httpx.Response(200, json=[{"filename": f, "status": "modified"} for f in pr.files])

    def _merge(self, request: httpx.Request, repo: str, number: str) -> httpx.Response:
        pr = self.prs[(repo, int(number))]
        if not pr.mergeable:
            return httpx.Response(405, json={"message": "Pull Request is not mergeable"})
        if json.loads(request.content or b"{}").get("sha", pr.head_sha) != pr.head_sha:
            return httpx.Response(409, json={"message": "Head branch was modified."})
        pr.merged, pr.state = True, "closed"
        return httpx.Response(200, json={"sha": "m" * 40, "merged": True, "message": "merged"})

    def _update_branch(self, request: httpx.Request, repo: str, number: str) -> httpx.Response:
        pr = self.prs[(repo, int(number))]
        if not pr.mergeable:
            return httpx.Response(422, json={"message": "merge conflict between base and head"})
        expected = json.loads(request.content or b"{}").get("expected_head_sha", pr.head_sha)
        if expected != pr.head_sha:
            message = "expected head sha didn't match current head ref."
            return httpx.Response(422, json={"message": message})
        pr.behind = False
        pr.head_sha = hashlib.sha1(f"update-{pr.head_sha}".encode()).hexdigest()
        return httpx.Response(202, json={"message": "Updating pull request branch."})

    def _reviewers(self, request: httpx.Request, repo: str, number: str) -> httpx.Response:
        self.reviewers[(repo, int(number))] = json.loads(request.content)["reviewers"]
        return httpx.Response(201, json=self._pr_json(repo, self.prs[(repo, int(number))]))

    def _comment_json(self, repo: str, c: FakeComment) -> dict[str, Any]:
        return {
            "id": c.id,
            "body": c.body,
            "user": {"login": c.user, "type": "Bot" if c.user.endswith("[bot]") else "User"},
            "html_url": f"https://github.com/{repo}/issues/{c.issue}#issuecomment-{c.id}",
        }

    def _list_comments(self, request: httpx.Request, repo: str, number: str) -> httpx.Response:
        per_page = int(request.url.params.get("per_page", 30))
        page = int(request.url.params.get("page", 1))
        found = [self._comment_json(repo, c) for c in self.comments_on(int(number))]
        return httpx.Response(200, json=found[(page - 1) * per_page : page * per_page])

    def _timeline(self, request: httpx.Request, repo: str, number: str) -> httpx.Response:
        """Only `cross-referenced` events: one per pull request whose body names `#n`
        (the App opens every PR here)."""
        named = re.compile(rf"#{int(number)}\b")
        events = [
            {
                "event": "cross-referenced",
                "source": {
                    "type": "issue",
                    "issue": {
                        **self._pr_json(pr_repo, pr),
                        "repository_url": f"https://api.github.com/repos/{pr_repo}",
                        "pull_request": {"merged_at": None},
                        "user": {"login": self.bot_login, "type": "Bot"},
                    },
                },
            }
            for (pr_repo, _), pr in self.prs.items()
            if pr_repo == repo and named.search(pr.body)
        ]
        return httpx.Response(200, json=events)

    def _create_comment(self, request: httpx.Request, repo: str, number: str) -> httpx.Response:
        c = FakeComment(
            self._id(), int(number), json.loads(request.content)["body"], self.bot_login
        )
        self.comments[c.id] = c
        return httpx.Response(201, json=self._comment_json(repo, c))

    def _edit_comment(self, request: httpx.Request, repo: str, comment_id: str) -> httpx.Response:
        c = self.comments.get(int(comment_id))
        if c is None:
            return _not_found()
        c.body = json.loads(request.content)["body"]
        return httpx.Response(200, json=self._comment_json(repo, c))

    def _react(self, request: httpx.Request, repo: str, comment_id: str) -> httpx.Response:
        content = json.loads(request.content)["content"]
        self.reactions.append((int(comment_id), content))
        return httpx.Response(201, json={"id": self._id(), "content": content})

    def _add_labels(self, request: httpx.Request, repo: str, number: str) -> httpx.Response:
        labels = self.labels.setdefault((repo, int(number)), [])
        for name in json.loads(request.content)["labels"]:
            if name not in labels:
                labels.append(name)
        return httpx.Response(200, json=[{"name": n} for n in labels])

    def _remove_label(
        self, request: httpx.Request, repo: str, number: str, name: str
    ) -> httpx.Response:
        labels = self.labels.setdefault((repo, int(number)), [])
        if name not in labels:
            return httpx.Response(404, json={"message": "Label does not exist"})
        labels.remove(name)
        return httpx.Response(200, json=[{"name": n} for n in labels])

    def _create_check(self, request: httpx.Request, repo: str) -> httpx.Response:
        body = json.loads(request.content)
        run = {"id": self._id(), "status": "queued", "app": {"id": APP_ID}, **body}
        self.check_runs[run["id"]] = run
        return httpx.Response(201, json=run)

    def _update_check(self, request: httpx.Request, repo: str, run_id: str) -> httpx.Response:
        run = self.check_runs[int(run_id)]
        run.update(json.loads(request.content))
        return httpx.Response(200, json=run)

    def _list_checks(self, request: httpx.Request, repo: str, ref: str) -> httpx.Response:
        name = request.url.params.get("check_name")
        runs = [
            r
            for r in self.check_runs.values()
            if r["head_sha"] == ref and name in (None, r.get("name"))
        ]
        return httpx.Response(200, json={"total_count": len(runs), "check_runs": runs})

    def _status(self, request: httpx.Request, repo: str, ref: str) -> httpx.Response:
        return httpx.Response(200, json={"state": "pending", "statuses": [], "total_count": 0})

    def _permission(self, request: httpx.Request, repo: str, login: str) -> httpx.Response:
        permission = self.repos[repo].collaborators.get(login)
        if permission is None:
            return httpx.Response(404, json={"message": f"{login} is not a user"})
        return httpx.Response(200, json={"permission": permission, "user": {"login": login}})

    def _graphql(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        node = body["variables"]["id"]
        # The two mutations Ballet sends: ready for review, and back to draft.
        draft = "convertPullRequestToDraft" in body["query"]
        for pr in self.prs.values():
            if f"PR_{pr.number}" == node:
                pr.draft = draft
        name = "convertPullRequestToDraft" if draft else "markPullRequestReadyForReview"
        data = {name: {"pullRequest": {"isDraft": draft}}}
        return httpx.Response(200, json={"data": data})


# The endpoints the App calls as itself, with its JWT rather than an installation token.
_APP_JWT_PATHS = re.compile(
    r"/app(/installations(/\d+/access_tokens)?)?|/repos/[^/]+/[^/]+/installation"
)


def _credential(request: httpx.Request) -> str:
    """The token in `Authorization: token X` or `Authorization: Bearer X`."""
    header: str = request.headers.get("authorization", "")
    return header.partition(" ")[2]


def _p(regex: str) -> re.Pattern[str]:
    return re.compile(regex)


def _not_found() -> httpx.Response:
    return httpx.Response(404, json={"message": "Not Found"})


def _with_etag(request: httpx.Request, response: httpx.Response) -> httpx.Response:
    if response.status_code != 200:
        return response
    etag = '"' + hashlib.sha256(response.content).hexdigest()[:16] + '"'
    headers = {"ETag": etag, "Cache-Control": "private, max-age=60, s-maxage=60"}
    if request.headers.get("if-none-match") == etag:
        return httpx.Response(304, headers=headers)
    return httpx.Response(
        200, content=response.content, headers={**headers, "Content-Type": "application/json"}
    )
