"""Repository rulesets: create (admins), list, read, and a branch's rules in force.

A rule of a type the sandbox does not model (rulesets.MODELLED) is refused with a
422 naming it, rather than kept and silently not enforced.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ballet.sandbox import rulesets, shapes
from ballet.sandbox.errors import ApiError, not_found, unprocessable
from ballet.sandbox.handler import body_of, field, int_param, now, page, repo_for, respond
from ballet.sandbox.state import Repo, Ruleset, Sandbox

ENFORCEMENTS = ("active", "disabled", "evaluate")
# Each modelled rule's parameters GitHub's description marks required.
REQUIRED_PARAMETERS: dict[str, tuple[str, ...]] = {
    "merge_queue": (
        "check_response_timeout_minutes",
        "grouping_strategy",
        "max_entries_to_build",
        "max_entries_to_merge",
        "merge_method",
        "min_entries_to_merge",
        "min_entries_to_merge_wait_minutes",
    ),
    "pull_request": (
        "dismiss_stale_reviews_on_push",
        "require_code_owner_review",
        "require_last_push_approval",
        "required_approving_review_count",
        "required_review_thread_resolution",
    ),
    "required_status_checks": ("required_status_checks", "strict_required_status_checks_policy"),
    "required_linear_history": (),
}
QUEUE_METHODS = ("MERGE", "SQUASH", "REBASE")


def _invalid(where: str, problem: str) -> ApiError:
    return unprocessable(f"Invalid request. Invalid property {where}: {problem}", field=where)


def _rule(index: int, item: Any) -> dict[str, Any]:
    where = f"/rules/{index}"
    if not isinstance(item, dict) or not isinstance(item.get("type"), str):
        raise _invalid(where, 'a rule is an object with a "type".')
    kind = item["type"]
    if kind not in REQUIRED_PARAMETERS:
        raise _invalid(
            where, f"the sandbox models only these rule types: {', '.join(rulesets.MODELLED)}."
        )
    params = item.get("parameters") or {}
    if not isinstance(params, dict):
        raise _invalid(where, '"parameters" must be an object.')
    for name in REQUIRED_PARAMETERS[kind]:
        if name not in params:
            raise _invalid(where, f'"{name}" wasn\'t supplied.')
    if kind == "merge_queue" and params["merge_method"] not in QUEUE_METHODS:
        raise _invalid(where, f"merge_method must be one of {', '.join(QUEUE_METHODS)}.")
    if kind == "required_status_checks":
        checks = params["required_status_checks"]
        if not isinstance(checks, list) or not all(
            isinstance(c, dict) and isinstance(c.get("context"), str) for c in checks
        ):
            raise _invalid(where, 'required_status_checks are objects with a "context".')
    rule: dict[str, Any] = {"type": kind}
    if kind != "required_linear_history":
        rule["parameters"] = params
    return rule


def _ref_names(data: dict[str, Any]) -> tuple[list[str], list[str]]:
    conditions = field(data, "conditions", dict) or {}
    ref_name = conditions.get("ref_name") or {}
    include, exclude = ref_name.get("include", []), ref_name.get("exclude", [])
    for name, patterns in (("include", include), ("exclude", exclude)):
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            raise _invalid(f"/conditions/ref_name/{name}", "a list of ref name patterns.")
    return include, exclude


async def create_ruleset(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "admin")
    data = await body_of(request)
    name = field(data, "name", str, required=True)
    enforcement = field(data, "enforcement", str, required=True)
    if enforcement not in ENFORCEMENTS:
        raise _invalid("/enforcement", f"use one of {', '.join(ENFORCEMENTS)}.")
    target = field(data, "target", str) or "branch"
    if target != "branch":
        raise _invalid("/target", "the sandbox models branch rulesets only.")
    if any(r.name == name for r in repo.rulesets.values()):
        raise unprocessable(f"Name must be unique: {name} is taken", field="name")
    include, exclude = _ref_names(data)
    rules = [_rule(i, item) for i, item in enumerate(field(data, "rules", list) or [])]
    moment = now()
    ruleset = Ruleset(
        sb.next_id(), name, target, enforcement, include, exclude, rules, moment, moment
    )
    repo.rulesets[ruleset.id] = ruleset
    return respond(_ruleset(sb, repo, ruleset), 201)


def _ruleset(sb: Sandbox, repo: Repo, ruleset: Ruleset, *, whole: bool = True) -> shapes.JSON:
    api = f"{shapes.repo_api(sb, repo)}/rulesets/{ruleset.id}"
    shape: shapes.JSON = {
        "id": ruleset.id,
        "name": ruleset.name,
        "target": ruleset.target,
        "source_type": "Repository",
        "source": repo.full_name,
        "enforcement": ruleset.enforcement,
        "node_id": shapes.node_id("RepositoryRuleset", ruleset.id),
        "_links": {
            "self": {"href": api},
            "html": {"href": f"{shapes.repo_html(sb, repo)}/rules/{ruleset.id}"},
        },
        "created_at": shapes.iso(ruleset.created_at),
        "updated_at": shapes.iso(ruleset.updated_at),
    }
    if whole:  # GitHub's list leaves out the conditions, rules and bypass actors
        shape.update(
            bypass_actors=[],
            current_user_can_bypass="never",
            conditions={"ref_name": {"include": ruleset.include, "exclude": ruleset.exclude}},
            rules=ruleset.rules,
        )
    return shape


async def list_rulesets(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    found = sorted(repo.rulesets.values(), key=lambda r: r.id)
    return respond([_ruleset(sb, repo, r, whole=False) for r in page(request, found)])


async def get_ruleset(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    ruleset = repo.rulesets.get(int_param(request, "ruleset_id"))
    if ruleset is None:
        raise not_found()
    return respond(_ruleset(sb, repo, ruleset))


async def branch_rules(request: Request) -> JSONResponse:
    """The rules in force on a branch, each with the ruleset it comes from (a branch that
    does not exist yet has the rules its name would have, as on GitHub)."""
    _, repo, _ = repo_for(request, "read")
    rules = [
        {
            **rule,
            "ruleset_source_type": "Repository",
            "ruleset_source": repo.full_name,
            "ruleset_id": ruleset_id,
        }
        for ruleset_id, rule in rulesets.branch_rules(repo, request.path_params["branch"])
    ]
    return respond(page(request, rules))


_R = "/repos/{owner}/{repo}"
ROUTES = [
    Route(_R + "/rulesets", create_ruleset, methods=["POST"]),
    Route(_R + "/rulesets", list_rulesets),
    Route(_R + "/rulesets/{ruleset_id}", get_ruleset),
    Route(_R + "/rules/branches/{branch:path}", branch_rules),
]
