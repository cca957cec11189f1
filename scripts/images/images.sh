#!/usr/bin/env bash
# Ballet's images, built and run on this host with podman (./run images ...):
#
#   build   both targets of the Dockerfile, unchanged: ballet-web, ballet-worker
#   run     Valkey, the web and the worker as containers with the manifests'
#           security options, and the demo's sandbox ticket to merged (run_ticket.py)
#   clis    the same with one stage per pinned agent CLI, each against a scripted
#           model server: every CLI completes a confined session in the worker
#   kube    `podman kube play` of the manifests; the web answers /readyz
#   check   build, clis and kube, printing the figures docs/deploy.md records
#   clean   removes the containers, pods and images this script made
#
# As root, with Debian's podman, runc and mmdebstrap. Podman is pointed at
# scripts/images/{containers,storage}.conf (nothing in /etc is edited) and keeps
# its layers under .ballet-images/ (gitignored), beside the base stand-ins: the
# second run reuses both (docs/deploy.md, "Building and running the images here").
set -euo pipefail
shopt -s inherit_errexit  # a failing step inside $(...) stops the script too
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
conf="$here/scripts/images"
cache="${BALLET_IMAGES_DIR:-$here/.ballet-images}"
# The host's CA bundle (with an HTTPS proxy's CA, where there is one), mounted
# into the build's RUN steps only: never copied into a layer.
build_ca="${BALLET_BUILD_CA:-/etc/ssl/certs/ca-certificates.crt}"
tag="${BALLET_IMAGE_TAG:-local}"
web_image="localhost/ballet-web:$tag"
worker_image="localhost/ballet-worker:$tag"

export CONTAINERS_CONF="$conf/containers.conf"
export CONTAINERS_STORAGE_CONF="$conf/storage.conf"
# The run root is per store (locks, mounts) and on /run, which a reboot empties.
runroot="/run/ballet-images/$(printf %s "$cache" | sha256sum | cut -c1-12)"
pm() { podman --root "$cache/storage" --runroot "$runroot" "$@"; }

need() {
  local missing=()
  for tool in "$@"; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
  [ ${#missing[@]} = 0 ] && return 0
  echo "images: missing ${missing[*]}; as root on Debian: apt-get install podman buildah runc" \
       "mmdebstrap uidmap slirp4netns npm (docs/deploy.md, \"Building and running the images here\")" >&2
  exit 2
}

# shellcheck source=scripts/images/bases.sh
. "$conf/bases.sh"

build() {
  need podman runc mmdebstrap npm
  [ "$(id -u)" = 0 ] || { echo "images: build as root (rootless podman needs subuid ranges this script does not set up)" >&2; exit 2; }
  [ -r "$build_ca" ] || { echo "images: no CA bundle at $build_ca; set BALLET_BUILD_CA to the host's bundle" >&2; exit 2; }
  mkdir -p "$cache/bases"
  local started args
  started=$(date +%s)
  standin_build_args >"$cache/build-args"
  mapfile -t args <"$cache/build-args"
  local common=("${args[@]}" --network host --layers
    -v "$build_ca:/run/ballet-build/ca.crt:ro"
    -v "$conf/pip.conf:/etc/pip.conf:ro"
    -v "$conf/npmrc:/root/.npmrc:ro"
    -f "$here/Dockerfile" "$here")
  pm build "${common[@]}" --target worker -t "$worker_image"
  pm build "${common[@]}" --target web -t "$web_image"
  # No `image prune` here: the build cache (the stages' untagged images: the agent
  # CLIs, aider) would go with the superseded images. `./run images clean` prunes.
  echo "images: built $web_image and $worker_image in $(( $(date +%s) - started )) s" >&2
  sizes
}

sizes() {
  pm images --format '{{.Repository}}:{{.Tag}} {{.Size}}' \
    | grep -E 'ballet-(web|worker|standin|valkey)' >&2 || true
}

# The checkout's virtualenv (./run made it) runs the drivers, with Ballet's demo
# pieces and the sandbox; they run podman as `pm` does.
drive() { # <script.py> [args...]
  local script="$1"; shift
  # This checkout's Ballet first, whatever the virtualenv's editable install points at.
  PYTHONPATH="$conf:$here/app" "$here/.venv/bin/python" "$conf/$script" \
    --podman "podman --root $cache/storage --runroot $runroot" \
    --web-image "$web_image" --worker-image "$worker_image" --valkey-image "$VALKEY_STANDIN" "$@"
}

built() {
  pm image exists "$web_image" && pm image exists "$worker_image" && pm image exists "$VALKEY_STANDIN" \
    || { echo "images: build them first: ./run images build" >&2; exit 2; }
}

run_ticket() { # scripted|clis
  built
  # The worker's own user namespace (hostUsers: false) has its root filesystem
  # opened by an unprivileged host id, which must pass through vfs/ (made 0700).
  chmod 711 "$cache/storage/vfs"
  drive run_ticket.py --agents "$1" --out "$cache/runs/$1-$(date +%Y%m%dT%H%M%S)"
}

kube() {
  built
  drive kube_play.py --out "$cache/runs/kube-$(date +%Y%m%dT%H%M%S)"
}

check() {
  local t0 t1 t2
  t0=$(date +%s); build
  t1=$(date +%s); run_ticket clis
  t2=$(date +%s); kube
  echo "images: build $((t1 - t0)) s; the five CLIs' ticket $((t2 - t1)) s;" \
       "kube play $(( $(date +%s) - t2 )) s" >&2
  sizes
}

clean() {
  pm pod rm -af >/dev/null
  pm rm -af >/dev/null
  pm rmi -f "$web_image" "$worker_image" >/dev/null 2>&1 || true
  pm image prune -f >/dev/null
  if [ "${1:-}" = --all ]; then
    pm system reset -f >/dev/null 2>&1 || true
    rm -rf "$cache"
  fi
}

case "${1:-}" in
  build) build ;;
  run) run_ticket scripted ;;
  clis) run_ticket clis ;;
  kube) kube ;;
  check) check ;;
  clean) shift; clean "$@" ;;
  sizes) sizes ;;
  podman) shift; pm "$@" ;;
  *) echo "usage: ./run images build|run|clis|kube|check|clean [--all]|sizes|podman ARGS" >&2; exit 2 ;;
esac
