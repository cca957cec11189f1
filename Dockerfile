# syntax=docker/dockerfile:1
# Ballet's images, one Dockerfile, two targets:
#
#   docker build --target web    -t ballet-web .     # `ballet web`: webhooks only
#   docker build --target worker -t ballet-worker .  # `ballet worker`: events and agent sessions
#
# Base images are pinned by version (pin them by digest too in your registry:
# `FROM python:3.11.14-slim-bookworm@sha256:…`); the agent CLIs by exact version.
# Both images run as the unprivileged user `ballet` (uid 10001).

ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm
ARG NODE_IMAGE=node:22.23.3-bookworm-slim

# -- build: Ballet into a virtualenv of its own ------------------------------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/ballet
COPY pyproject.toml README.md /src/
COPY app /src/app
RUN /opt/ballet/bin/pip install /src

# -- aider: its own virtualenv, so its pins never meet Ballet's --------------------
FROM ${PYTHON_IMAGE} AS aider
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/aider \
 && /opt/aider/bin/pip install aider-chat==0.86.2

# -- the node agent CLIs -------------------------------------------------------------
FROM ${NODE_IMAGE} AS agent-clis
RUN npm install --global --prefix /opt/agents --omit=dev \
      @anthropic-ai/claude-code@2.1.332 \
      @openai/codex@0.171.0 \
      @google/gemini-cli@0.61.0 \
      opencode-ai@1.18.33 \
 && npm cache clean --force

# -- what both images share ---------------------------------------------------------
FROM ${PYTHON_IMAGE} AS base
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 10001 ballet \
 && useradd --uid 10001 --gid 10001 --create-home --shell /usr/sbin/nologin ballet \
 && mkdir -p /data \
 && chown ballet:ballet /data
COPY --from=build /opt/ballet /opt/ballet
ENV PATH=/opt/ballet/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    BALLET_DATA_DIR=/data \
    BALLET_LOG_JSON=true
WORKDIR /home/ballet
ENTRYPOINT ["ballet"]

# -- worker: git, bubblewrap, node and the agent runtimes ------------------------------
FROM base AS worker
# git: mirrors, workspaces and pushes. bubblewrap: every session runs confined
# (docs/security.md). libstdc++6: node's runtime library.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git bubblewrap libstdc++6 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=agent-clis /usr/local/bin/node /usr/local/bin/node
COPY --from=agent-clis /opt/agents /opt/agents
COPY --from=aider /opt/aider /opt/aider
RUN ln -s /opt/aider/bin/aider /usr/local/bin/aider \
 && mkdir -p /workspaces \
 && chown ballet:ballet /workspaces
ENV PATH=/opt/agents/bin:$PATH \
    BALLET_WORKSPACE_DIR=/workspaces
USER 10001:10001
EXPOSE 9100
CMD ["worker", "--metrics-port", "9100"]

# -- web: the webhook receiver (the default target) --------------------------------------
FROM base AS web
USER 10001:10001
EXPOSE 8000
CMD ["web", "--host", "0.0.0.0", "--port", "8000"]
