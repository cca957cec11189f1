# Ballet: one image for both roles. The web deployment runs `ballet web`,
# the worker deployment `ballet worker` (see manifests/).
FROM python:3.11-slim

# git: agent sessions work in clones of the ticket's repository.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/*

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    BALLET_DATA_DIR=/data

WORKDIR /src
COPY pyproject.toml README.md ./
COPY app ./app
RUN pip install . \
 && useradd --create-home --uid 10001 ballet \
 && mkdir -p /data \
 && chown ballet:ballet /data

USER ballet
WORKDIR /home/ballet
VOLUME ["/data"]
EXPOSE 8000

ENTRYPOINT ["ballet"]
CMD ["web", "--host", "0.0.0.0", "--port", "8000"]
