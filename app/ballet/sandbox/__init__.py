"""GitHub on loopback: a stateful HTTP double of the GitHub that Ballet uses (docs/architecture.md).

Run it with `ballet sandbox serve` (prints `{"api_url", "env_file"}` when ready) or,
in-process, with `ballet.sandbox.server.BackgroundSandbox(data_dir, webhook_url)`.

What it offers, and who may do what:
- REST at GitHub's paths, answered in GitHub's JSON shapes (they parse with
  githubkit's models), with ETags and 304s on GETs: see the `rest_*` modules.
- Reviews with inline comments (`comments: [{path, body, line, side?, start_line?,
  start_side?}]`, placed in the pull request's real diff: `position`, `diff_hunk`),
  replies in their threads, and check runs' annotations (`.../annotations`).
- The App: `Authorization: Bearer <JWT>` signed with the key in the env file on
  `/app/...`; installation tokens (`token ghs_...`) that expire. The App is
  installed on every repository, one installation per owner.
- People: `Authorization: token sandbox-user:<login>`, limited by the
  repository's collaborators (anyone else may read, open issues and comment a public
  repository; a private one is a 404 to them, as on GitHub).
- "Sign in with GitHub": the App's OAuth web flow at `/login/oauth/authorize` and
  `/login/oauth/access_token` (oauth.py), the signed-in person being the request's
  `sandbox-user:<login>` token, so tests need no browser; the user access tokens
  (`ghu_…`) act as the person through the App, on `/user`, `/user/installations`,
  `/user/installations/{id}/repositories` (rest_user.py) and every repository path.
- Git over smart HTTP at `/<owner>/<name>.git` with Basic auth, the token as password.
- Merge settings as on GitHub: `PATCH /repos/{owner}/{repo}` with `allow_merge_commit`,
  `allow_squash_merge`, `allow_rebase_merge`, `delete_branch_on_merge`, `allow_auto_merge`
  (admins).
- Sub-issues (`/issues/{n}/parent`, `/issues/{n}/sub_issues`) and the issue timeline's
  `cross-referenced` events, made when an issue, pull request or comment names `#n`.
- Ready for review: GraphQL `markPullRequestReadyForReview` at `POST /graphql`
  (GitHub has no REST call for it).
- "Update branch": `PUT /repos/{owner}/{repo}/pulls/{n}/update-branch` merges the base
  into the head (202), or answers 422 "merge conflict between base and head" (or, given an
  `expected_head_sha` that is not the head, an "expected_head_sha does not match" 422).
- Repository rulesets (rest_rulesets.py, rulesets.py): `POST` (admins) and `GET
  /repos/{owner}/{repo}/rulesets`, `GET .../rulesets/{id}`, and `GET .../rules/branches/{branch}`,
  the rules in force on a branch. Modelled rules: `merge_queue`, `pull_request` (required
  approving reviews of people with write access, `allowed_merge_methods`),
  `required_status_checks` (check runs or statuses by name; strict: up to date with the
  base) and `required_linear_history`; any other type is refused with a 422. A pull
  request they hold back says so in `mergeable_state`: `blocked` (reviews or required
  checks missing, whether or not it is behind too) or, where that is all, `behind`
  (strict checks, head behind its base); `GET .../compare/{base}...{head}` says how far
  apart two commits are (rest_compare.py). A direct
  merge a rule forbids is refused with GitHub's 405 "Repository rule violations found"
  and a line per rule, e.g. "Changes must be made through the merge queue".
- The merge queue (merge_queue.py), where a `merge_queue` rule requires it: GraphQL
  `enqueuePullRequest` (with `expectedHeadOid`) once the pull request meets the other
  rules, and `dequeuePullRequest`; `pull_request.enqueued`/`dequeued` webhooks. The first
  pull request of a base gets a merge group on
  `refs/heads/gh-readonly-queue/{base}/pr-{n}-{head sha}` (`merge_group.checks_requested`,
  and a push the repository's CI runs on); once every required check has passed on the
  group's commit, whoever reported it, the base moves to it (`merge_group.destroyed`
  reason `merged`, `pull_request.closed` merged by `github-merge-queue[bot]`); a failed
  required check destroys it (`dequeued`; the pull request `dequeued`, reason
  `CI_FAILURE`). One group at a time per base; no check timeout.
- Auto-merge (auto_merge.py), where the repository allows it: GraphQL
  `enablePullRequestAutoMerge` (`expectedHeadOid`, `mergeMethod`, `commitHeadline`,
  `commitBody`) and `disablePullRequestAutoMerge`, refused with GitHub's words ("Pull
  request Pull request is in clean status" for one that can merge now); the pull
  request's `auto_merge`; `pull_request.auto_merge_enabled`/`auto_merge_disabled` (with a
  `reason`). The sandbox merges it as its enabler once the base's rules let it (checks
  reported on its head, a review, a push); a conflict with the base turns it off, a
  writer's push does not.
- Webhooks to the configured URL, signed, in order, logged.

The admin API under `/_sandbox/` (no authentication; it is how tests set the stage):
- `POST /_sandbox/repos` `{"owner", "name", "default_branch"?, "files"?: {path: text},
  "collaborators"?: {login: read|triage|write|maintain|admin}, "ci"?: {"command": [argv]},
  "merge_methods"?: [merge|squash|rebase], "delete_branch_on_merge"?: bool, "private"?: bool}`
  → 201 `{full_name, clone_url, head_sha, ...}`. A private repository exists only for its
  owner, its collaborators and the App's installation: anyone else gets 404 everywhere.
- `GET /_sandbox/repos/{owner}/{repo}/state`: issues, comments, labels, pulls, reviews,
  review comments, check runs, statuses and branches, flattened for assertions.
- `POST /_sandbox/repos/{owner}/{repo}/check-runs` `{"name", "head_sha", "status",
  "conclusion"?, "details_url"?, "output"?: {"title", "summary", "text"?, "annotations"?:
  [{"path", "start_line", "end_line", "annotation_level"?, "message", "title"?, ...}]}}`:
  a check run of the repository's CI (another App than Ballet), announced by webhooks
  as GitHub would: e.g. CI failing on a commit with a check `lint` and its annotations.
- `GET /_sandbox/deliveries`, `GET /_sandbox/deliveries/{id}` (with its payload),
  `POST /_sandbox/deliveries/{id}/redeliver` (same `X-GitHub-Delivery`).
- `GET /_sandbox/requests`: every request the App made (method, path, status, time;
  `token_repos`: the repositories its installation token was limited to, if it was;
  `token_permissions`: the permissions it was limited to, if it was).
- `PUT /_sandbox/webhook` `{"url"}`: move deliveries (e.g. once Ballet's web app is up);
  the App's OAuth callback, `<scheme and host of that URL>/oauth/callback`, moves with
  it unless `PUT /_sandbox/app/callback_urls` `{"urls"}` registered others.
- `PUT /_sandbox/users/{login}` `{"name"}`: a person's display name.
- `POST /_sandbox/settle`: returns once CI runs have finished and every queued
  delivery has been posted.
"""
