"""Small stand-ins for the agent CLIs, following each one's documented interface.

Each accepts exactly its CLI's flags (argparse refuses any other), checks the
traps the real CLI has (Claude Code's stream-json needs --verbose and, as root,
IS_SANDBOX=1; Gemini refuses an untrusted folder), acts as a model would:
reads the prompt, commits a file, writes the report where the prompt says,
and prints usage in the CLI's own output format. Each records its argv, cwd
and environment in LOG.
"""

from __future__ import annotations

COMMON = """
import argparse, json, os, re, subprocess, sys
LOG = {log!r}

def record(args):
    json.dump({{"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}},
              open(LOG, "w"))

def act(prompt, commit=True):
    # What a model does with Ballet's prompt: the work, a commit, the report.
    path = re.search(r"Write this JSON to `([^`]+)`", prompt).group(1)
    if commit:
        open("work.txt", "w").write(prompt[:40])
        subprocess.run(["git", "add", "work.txt"], check=True)
        subprocess.run(["git", "commit", "-q", "-m", "Work"], check=True)
    json.dump({{"outcome": "done", "summary": "did the work"}}, open(path, "w"))
"""

CLAUDE = """
p = argparse.ArgumentParser(prog="claude")
p.add_argument("prompt")
p.add_argument("-p", "--print", action="store_true")
p.add_argument("--output-format", choices=["text", "json", "stream-json"], default="text")
p.add_argument("--verbose", action="store_true")
p.add_argument("--permission-mode",
               choices=["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"])
p.add_argument("--add-dir", action="append")
p.add_argument("--model")
p.add_argument("--effort", choices=["low", "medium", "high", "xhigh", "max"])
args = p.parse_args()
record(args)
if args.output_format == "stream-json" and not args.verbose:
    sys.exit("Error: When using --print, --output-format=stream-json requires --verbose")
if args.permission_mode == "bypassPermissions" and os.getuid() == 0 \\
        and os.environ.get("IS_SANDBOX") != "1":
    sys.exit("--dangerously-skip-permissions cannot be used with root/sudo privileges")
if not os.environ.get("ANTHROPIC_API_KEY"):
    sys.exit("Invalid API key · Please run /login")
fail = "FAIL" in args.prompt
print(json.dumps({"type": "system", "subtype": "init", "session_id": "s1", "model": args.model}))
print(json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": "ok"}],
                  "usage": {"input_tokens": 10, "output_tokens": 5}}}))
if not fail:
    act(args.prompt)
print(json.dumps({"type": "result", "subtype": "success", "is_error": fail,
                  "result": "API Error: 500" if fail else "done", "session_id": "s1",
                  "total_cost_usd": 0.0123,
                  "usage": {"input_tokens": 100, "cache_read_input_tokens": 20,
                            "cache_creation_input_tokens": 3, "output_tokens": 50},
                  # Every model it called: `usage` above leaves out the side call (haiku).
                  "modelUsage": {
                      "claude-sonnet-4-5": {"inputTokens": 100, "cacheReadInputTokens": 20,
                                            "cacheCreationInputTokens": 3, "outputTokens": 50,
                                            "costUSD": 0.0120},
                      "claude-haiku-4-5": {"inputTokens": 30, "outputTokens": 7,
                                           "costUSD": 0.0003}}}))
sys.exit(1 if fail else 0)
"""

CODEX = """
p = argparse.ArgumentParser(prog="codex")
sub = p.add_subparsers(dest="command", required=True)
e = sub.add_parser("exec")
e.add_argument("--json", action="store_true")
e.add_argument("-C", "--cd")
e.add_argument("--sandbox", choices=["read-only", "workspace-write", "danger-full-access"])
e.add_argument("--skip-git-repo-check", action="store_true")
e.add_argument("--ephemeral", action="store_true")
e.add_argument("-c", "--config", action="append", default=[])
e.add_argument("--disable", action="append", default=[])
e.add_argument("-m", "--model")
e.add_argument("prompt")
args = p.parse_args()
record(args)
for item in args.config:
    key, _, value = item.partition("=")
    json.loads(value)  # codex parses -c values as TOML; these must be quoted strings
os.chdir(args.cd)
print(json.dumps({"type": "thread.started", "thread_id": "t1"}))
print(json.dumps({"type": "turn.started"}))
act(args.prompt)
print(json.dumps({"type": "item.completed", "item": {"id": "i1", "type": "agent_message",
                  "text": "done"}}))
print(json.dumps({"type": "turn.completed",
                  "usage": {"input_tokens": 200, "cached_input_tokens": 50, "output_tokens": 70}}))
"""

AIDER = """
p = argparse.ArgumentParser(prog="aider")
p.add_argument("--message-file")
for name in ("--yes-always", "--no-pretty", "--no-stream", "--no-fancy-input", "--no-analytics",
             "--no-check-update", "--no-show-release-notes", "--no-show-model-warnings",
             "--no-detect-urls", "--no-suggest-shell-commands", "--no-gitignore"):
    p.add_argument(name, action="store_true")
p.add_argument("--chat-history-file")
p.add_argument("--input-history-file")
p.add_argument("--model")
p.add_argument("--reasoning-effort")
args = p.parse_args()
record(args)
prompt = open(args.message_file).read()
assert "Write this JSON to" not in prompt, "aider is asked for its report in its reply"
os.makedirs(".aider.tags.cache.v4", exist_ok=True)
open(".aider.tags.cache.v4/cache.db", "w").write("x")
# What Ballet's sitecustomize records for each litellm call: the edit and the commit message.
with open(os.environ["BALLET_AIDER_USAGE"], "a") as log:
    for tokens in ((1000, 100, 0.01), (500, 50, 0.005)):
        log.write(json.dumps({"model": args.model, "prompt_tokens": tokens[0],
                              "completion_tokens": tokens[1], "cost": tokens[2]}) + "\\n")
open("work.txt", "w").write(prompt[:40])
subprocess.run(["git", "add", "work.txt"], check=True)
subprocess.run(["git", "commit", "-q", "-m", "Work"], check=True)
with open(args.chat_history_file, "a") as history:
    history.write("#### " + prompt.replace("\\n", "\\n#### ") + "\\n\\n")
    history.write('I did it.\\n\\n{"outcome": "done", "summary": "did the work"}\\n\\n')
    history.write("> Tokens: 1.5k sent, 150 received.\\n")
print("Tokens: 1.5k sent, 150 received. Cost: $0.01 message, $0.015 session.")
"""

GEMINI = """
p = argparse.ArgumentParser(prog="gemini")
p.add_argument("-p", "--prompt")
p.add_argument("--approval-mode", choices=["default", "auto_edit", "yolo", "plan"])
p.add_argument("--skip-trust", action="store_true")
p.add_argument("-o", "--output-format", choices=["text", "json", "stream-json"])
p.add_argument("--include-directories", action="append")
p.add_argument("-m", "--model")
args = p.parse_args()
record(args)
if not args.skip_trust and os.environ.get("GEMINI_CLI_TRUST_WORKSPACE") != "true":
    print("untrusted folder", file=sys.stderr)
    sys.exit(55)
print(json.dumps({"type": "init", "session_id": "g1", "model": args.model}))
act(args.prompt)
print(json.dumps({"type": "message", "role": "assistant", "content": "done"}))
print(json.dumps({"type": "result", "status": "success",
                  "stats": {"total_tokens": 390, "input_tokens": 300, "output_tokens": 90,
                            "cached": 0, "duration_ms": 5, "tool_calls": 1}}))
"""

OPENCODE = """
p = argparse.ArgumentParser(prog="opencode")
sub = p.add_subparsers(dest="command", required=True)
r = sub.add_parser("run")
r.add_argument("--format", choices=["default", "json"])
r.add_argument("--dir")
r.add_argument("--auto", action="store_true")
r.add_argument("--title")
r.add_argument("-m", "--model")
r.add_argument("--variant")
r.add_argument("message", nargs="+")
args = p.parse_args()
record(args)
os.chdir(args.dir)
def event(kind, **rest):
    print(json.dumps({"type": kind, "timestamp": 1, "sessionID": "o1", **rest}))
for cost, tokens in ((0.002, 40), (0.003, 60)):
    event("step_start", part={})
    event("step_finish", part={"reason": "stop", "cost": cost, "tokens": {
        "input": tokens, "output": 10, "reasoning": 5, "cache": {"read": 1, "write": 2}}})
act(" ".join(args.message))
event("text", part={"text": "done"})
"""

SCRIPTS = {
    "claude": CLAUDE,
    "codex": CODEX,
    "aider": AIDER,
    "gemini": GEMINI,
    "opencode": OPENCODE,
}


def fake_cli(name: str, log: str) -> str:
    return COMMON.format(log=log) + SCRIPTS[name]
