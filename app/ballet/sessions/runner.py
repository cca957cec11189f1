"""`run_session`: one session (one phase of a phased stage) from spec to result.

Refresh the mirror, make the workspace, write BALLET_CONTEXT and the prompt,
run the runtime's process, read its report (and handoff), push the ticket
branch, remove the workspace. Every way this can go wrong ends in a `failed`
report whose summary says which and shows the end of the output; the caller
never gets an exception for a session that merely went badly.

A non-zero exit with a valid report keeps the report (docs/session-contract.md:
"a non-zero exit *without a report*" fails). Commits of a session Ballet
failed (timeout, no valid report) are not pushed, nor commits that carry a
secret the session was given (push.py, secrets_scan.py).

The session's whole output goes to a `SessionLog` (sessionlog/capture.py):
redacted as it arrives, streamed to the `log_sink`, kept within its cap and
rendered as steps, and handed to the sink when the session ends. Everything the
session returns is redacted the same way (redaction.py) before it leaves here.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field

from ballet.core.routing import job_key
from ballet.sessionlog.capture import SessionLog
from ballet.sessionlog.clis import renderer_for, transcript_renderer
from ballet.sessionlog.redact import Redactor
from ballet.sessionlog.sink import LogSink
from ballet.sessions.artefacts import phase_artefacts
from ballet.sessions.companions import (
    companions_context,
    companions_root,
    open_companions,
    push_companions,
    write_companions_file,
)
from ballet.sessions.confine import Isolation, SessionPaths, confined
from ballet.sessions.confine.providers import runtime_destinations
from ballet.sessions.context import build_context
from ballet.sessions.environment import session_environment
from ballet.sessions.gateway import ModelGateway
from ballet.sessions.git import GitError
from ballet.sessions.git_auth import GitAuth
from ballet.sessions.launch import exclude_from_git, findable
from ballet.sessions.model_access import ModelAccess, model_access, with_spend
from ballet.sessions.outcome import (
    SessionFailure,
    failed_result,
    read_results,
    with_usage,
)
from ballet.sessions.process import run_process
from ballet.sessions.prompt import render_prompt
from ballet.sessions.push import PushError, SecretInPush, push_ticket_branch
from ballet.sessions.redaction import GIT_TOKEN, redacted_result, session_redactor
from ballet.sessions.resources import (
    ended_notes,
    failure_with_notes,
    limit_failure,
    limits_line,
    session_limits,
    with_notes,
    workspace_disk,
)
from ballet.sessions.routing import ModelChoice, route_of
from ballet.sessions.runtimes import Invocation, RuntimeConfigError, adapter_for
from ballet.sessions.runtimes.base import read_session_file
from ballet.sessions.spec import FailureReason, RunnerSpec, SessionResult
from ballet.sessions.workspace import Workspace, WorkspaceError, Workspaces

OUTPUT_TAIL_CHARS = 16_000  # of the redacted log, in SessionResult.output_tail


@dataclass(frozen=True)
class SessionOptions:
    grace_seconds: float = 5.0  # between SIGTERM and SIGKILL of the process group
    isolation: Isolation = field(default_factory=Isolation)  # confined by default
    gateway: ModelGateway | None = None  # the worker's (None: one per session, unmetered)


async def open_workspace(
    workspaces: Workspaces,
    *,
    repo: str,
    clone_url: str,
    token: str | None,
    key: str,
    branch: str | None,
    base: str,
    fresh_since: float | None = None,
    disk: int | None = None,
) -> Workspace:
    """Refresh the repository's mirror and make the session's fresh clone of it.

    Needs only what the engine's session spec names, so a session job may run it
    while it reads the issue and the record (`run_session(prepared=...)`).
    `fresh_since`: a fetch, or a look at GitHub's refs, begun since then will do
    (`Workspaces.refresh`); the clone prepared ahead is taken when GitHub's refs are
    those it was made from (`Workspaces.take_prepared`).
    `disk`: the workspace is a disk of this size (`resources.workspace_disk`)."""
    taken = await workspaces.take_prepared(
        repo, clone_url, token, key=key, branch=branch, base=base, since=fresh_since, disk=disk
    )
    if taken is not None:
        return taken
    await workspaces.refresh(repo, clone_url, token, since=fresh_since)
    return await workspaces.create(repo, key=key, branch=branch, base=base, disk=disk)


async def run_session(
    spec: RunnerSpec,
    *,
    workspaces: Workspaces,
    git_auth: GitAuth,
    parent_env: Mapping[str, str] | None = None,
    options: SessionOptions | None = None,
    prepared: Awaitable[Workspace] | None = None,
    log_sink: LogSink | None = None,
) -> SessionResult:
    """Run one session. `parent_env` is the worker's environment (default: os.environ),
    from which only the allowlist reaches the session. A session that goes wrong
    returns a `failed` result; only `git_auth`'s own errors (GitHub unreachable)
    and cancellation propagate, so the caller may retry the job.

    `prepared` is this session's workspace being opened already (`open_workspace`
    for this spec's repository, key, branch and base); the caller removes it when
    it is done (the session job: once the result is delivered). A workspace this
    function opens itself, it removes before returning. `log_sink` receives the
    session's redacted log as it runs and when it ends (None: it is kept nowhere)."""
    started = time.monotonic()
    options = options or SessionOptions()
    env = os.environ if parent_env is None else parent_env
    key = job_key(spec.ticket.ref, spec.stage.id, spec.iteration, spec.attempt, spec.phase)
    owned = prepared is None
    # The clone's token (when this function clones) and one of what the log redacts.
    token = await git_auth(spec.ticket.repo)
    redactor = session_redactor(env, spec.runtime.env, token)
    renderer = renderer_for(spec.runtime.adapter)
    session_log = SessionLog(key, redactor, sink=log_sink, renderer=renderer)
    choice = route_of(spec)
    session_log.start()
    try:
        session_log.ballet(
            f"session started ({spec.runtime.adapter}, model {choice.model or 'default'}"
            f", effort {choice.effort or 'default'})"
        )
        try:
            if prepared is None:
                prepared = open_workspace(
                    workspaces, repo=spec.ticket.repo, clone_url=spec.clone_url, token=token,
                    key=key, branch=spec.branch, base=spec.base,
                    disk=workspace_disk(options.isolation, spec.runtime),
                )  # fmt: skip
            workspace = await prepared
        except (WorkspaceError, GitError) as error:
            failure = SessionFailure("workspace", str(error))
            ran = _Ran(failed_result(failure, None, None, None, started), redactor)
            return await _finished(ran, session_log)
        renderer.cwd = str(workspace.clone)
        try:
            async with model_access(spec, key, env, options.isolation, options.gateway) as access:
                held = redactor.adding(access.tokens) if access.tokens else redactor
                ran = await _run(
                    spec, key, workspace, workspaces, git_auth, {**env, **access.tokens},
                    options, started, _Session(choice, held, session_log, access),
                )  # fmt: skip
        finally:
            if owned:
                await workspaces.remove(workspace)
        ran = _Ran(with_spend(ran.result, access, key), ran.redactor, ran.exit_code)
        return await _finished(ran, session_log)
    finally:
        # Finished, this is a no-op; cancelled or failing, the log is left unfinished
        # (its live stream expires) rather than waiting for its sink.
        session_log.cancel()


@dataclass(frozen=True)
class _Session:
    """What `_run` is handed besides the spec: the routed model, what to redact, the log."""

    choice: ModelChoice
    redactor: Redactor
    log: SessionLog
    access: ModelAccess  # its model gateway, when its runtime holds provider keys


@dataclass(frozen=True)
class _Ran:
    result: SessionResult
    redactor: Redactor  # with the push's token, when one was fetched
    exit_code: int | None = None


async def _finished(ran: _Ran, session_log: SessionLog) -> SessionResult:
    """The result redacted, and the log ended with how the session ended."""
    result = redacted_result(ran.result, ran.redactor)
    how = result.failure_reason or f"reported {result.report.outcome}"
    code = f"exit code {ran.exit_code}, " if ran.exit_code is not None else ""
    report = result.report
    body = "\n\n".join(part for part in (report.summary, report.details) if part)
    await session_log.finish(
        f"session ended ({code}{result.duration_seconds:.1f} s, {how})", (report.outcome, body)
    )
    return result


async def _run(
    spec: RunnerSpec,
    key: str,
    workspace: Workspace,
    workspaces: Workspaces,
    git_auth: GitAuth,
    parent_env: Mapping[str, str],
    options: SessionOptions,
    started: float,
    session: _Session,
) -> _Ran:
    files = workspace.files
    report_path, handoff_path = files / "report.json", files / "handoff.json"
    phased = spec.phase is not None
    adapter = adapter_for(spec.runtime.adapter)
    choice, redactor, session_log = session.choice, session.redactor, session.log
    prompt = render_prompt(
        spec,
        report_path=report_path,
        handoff_path=handoff_path if phased else None,
        report_in_reply=adapter.report_in_reply,
    )
    prompt_path, context_path = files / "prompt.md", files / "context.json"
    prompt_path.write_text(prompt)
    try:  # the ticket's other repositories, beside its clone (companions.py)
        clones = await open_companions(workspaces, workspace, spec, git_auth)
    except (WorkspaceError, GitError) as error:
        failure = SessionFailure("workspace", str(error))
        return _Ran(failed_result(failure, None, None, None, started), redactor)
    context = {**build_context(spec), "companions": companions_context(clones)}
    context_path.write_text(json.dumps(context, indent=2, ensure_ascii=False))
    exclude_from_git(workspace.clone, adapter.git_excludes)
    invocation = Invocation(
        prompt,
        prompt_path,
        report_path,
        files,
        workspace.clone,
        choice.model,
        choice.effort,
        home=workspace.home,
        base_url=spec.runtime.base_url,
        declared={
            **{name: parent_env[name] for name in spec.runtime.env if name in parent_env},
            **session.access.tokens,
        },
        gateway=session.access.urls,
    )
    ballet_env = {
        "BALLET_REPORT": str(report_path),
        "BALLET_CONTEXT": str(context_path),
        "BALLET_PROMPT": str(prompt_path),
        "BALLET_TICKET": spec.ticket.ref,
        "BALLET_STAGE": spec.stage.id,
        "BALLET_ITERATION": str(spec.iteration),
        "BALLET_PHASE": spec.phase or "",
        **session.access.env,
    }
    if phased:
        ballet_env["BALLET_HANDOFF"] = str(handoff_path)
    if clones:
        ballet_env["BALLET_COMPANIONS"] = str(write_companions_file(files, clones))
    try:
        argv = adapter.argv(spec.runtime, invocation)
        env = session_environment(
            parent_env,
            runtime=spec.runtime,
            adapter_env=adapter.environment(invocation),
            ballet_env=ballet_env,
            home=workspace.home,
        )
        adapter.prepare(invocation)
    except RuntimeConfigError as error:
        return _Ran(
            failed_result(SessionFailure("runtime", str(error)), None, None, None, started),
            redactor,
        )
    meter = adapter.meter(invocation)
    if not findable(argv[0], workspace.clone, env.get("PATH", "")):
        message = f"could not start {argv[0]!r}: not found; install the CLI on the worker's PATH"
        return _Ran(
            failed_result(SessionFailure("runtime", message), None, None, None, started), redactor
        )
    if redactor.too_short:
        session_log.ballet(
            f"not redacted: {', '.join(redactor.too_short)} (values shorter than 8 characters)"
        )
    paths = SessionPaths(
        workspace.clone, workspace.home, files, workspace.mirror / "objects", workspaces.root,
        workspace.tmp, companions_root(workspace) if clones else None,
    )  # fmt: skip
    hosts = runtime_destinations(spec.runtime, gateway=session.access.gateway is not None)
    limits = session_limits(options.isolation, spec.runtime)
    if limits is not None:
        for line in (*limits.notes, limits_line(options.isolation, limits)):
            session_log.ballet(line)
    try:
        async with confined(
            options.isolation, paths, argv, env, runtime_rules=hosts, session=key,
            limits=limits.values if limits else None, gateway_socket=session.access.socket,
        ) as sandbox:  # fmt: skip
            outcome = await run_process(
                sandbox.argv,
                cwd=workspace.clone,
                env=sandbox.env,
                timeout_seconds=spec.timeout_seconds,
                on_stdout_line=meter.feed_line,
                grace_seconds=options.grace_seconds,
                supervisor=sandbox,
                log=session_log,
            )
    except OSError as error:
        program = options.isolation.bwrap if options.isolation.mode == "bwrap" else argv[0]
        message = f"could not start {program!r}: {error}; install it on the worker's PATH"
        return _Ran(
            failed_result(SessionFailure("runtime", message), None, None, None, started), redactor
        )
    adapter.after_exit(invocation)
    session_log.end_of_output()
    for line in ended_notes(sandbox):
        session_log.ballet(line)
    render = transcript_renderer(spec.runtime.adapter)
    if adapter.transcript and render:
        text = read_session_file(files / adapter.transcript)
        if text:
            session_log.transcript(text, render)
    tail = session_log.tail(OUTPUT_TAIL_CHARS) + _refusals(sandbox.refused, sandbox.refused_count)
    egress = {"egress_allowed": sandbox.allowed, "egress_refused": sandbox.refused_count}
    usage = meter.usage()
    code = outcome.exit_code
    try:
        report, handoff = read_results(spec, outcome, report_path, handoff_path)
        report = with_notes(with_usage(report, usage), limits)
        heads: dict[str, str] = {}
        if spec.branch is None:
            head = workspace.start_sha  # a pipeline without a branch pushes nothing
        else:
            written = phase_artefacts(spec, handoff)
            head, redactor = await _push(spec, workspaces, workspace, git_auth, redactor, written)
            heads, redactor = await push_companions(workspaces, clones, git_auth, redactor)
    except SessionFailure as failure:
        failure = limit_failure(failure, sandbox, outcome, spec.timeout_seconds, options.isolation)
        failure = failure_with_notes(failure, limits)
        failed = failed_result(failure, usage, tail, workspace.start_sha, started, code)
        return _Ran(failed.model_copy(update=egress), redactor, code)
    except PushError as error:
        reason: FailureReason = "secret" if isinstance(error, SecretInPush) else "push"
        push_failure = SessionFailure(reason, str(error))
        failed = failed_result(push_failure, report.usage, tail, workspace.start_sha, started, code)
        return _Ran(failed.model_copy(update=egress), redactor, code)
    result = SessionResult(
        report=report,
        head_sha=head,
        usage=report.usage,
        duration_seconds=time.monotonic() - started,
        handoff=handoff,
        output_tail=tail,
        companion_heads=heads,
        **egress,
    )
    return _Ran(result, redactor, code)


async def _push(
    spec: RunnerSpec,
    workspaces: Workspaces,
    workspace: Workspace,
    git_auth: GitAuth,
    redactor: Redactor,
    artefacts: dict[str, bytes | None],
) -> tuple[str, Redactor]:
    # A fresh token: the one that refreshed the mirror may have expired while the
    # session ran (installation tokens last an hour, a stage may run as long).
    token = await git_auth(spec.ticket.repo)
    if token:
        redactor = redactor.adding({GIT_TOKEN: token})
    head = await push_ticket_branch(
        workspaces, workspace, url=spec.clone_url, base=spec.base, token=token,
        redactor=redactor, artefacts=artefacts, rewrite=spec.update_with == "rebase",
    )  # fmt: skip
    return head, redactor


def _refusals(refused: list[str], count: int) -> str:
    """What the egress proxy refused the session, for its report's output tail."""
    if not count:
        return ""
    lines = "".join(f"{reason}\n" for reason in dict.fromkeys(refused))
    return f"--- egress refused by Ballet's proxy ({count}) ---\n{lines}"
