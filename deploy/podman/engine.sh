#!/usr/bin/env bash
# Podman as the container engine where no Docker engine runs and no registry is reachable: installs podman, runc and
# mmdebstrap with apt when missing, checks that the engine starts (fails naming the reason otherwise), and builds the
# base images that deploy/Dockerfile and docker-compose.yml name (python:3.11-slim, node:20-slim, redis:7.2) from
# Debian's packages, once: they stay cached in podman's store and are rebuilt only when this recipe changes.
# Usage: CONTAINERS_CONF=deploy/podman/containers.conf deploy/podman/engine.sh
set -euo pipefail
cd "$(dirname "$0")"
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
SUITE=bookworm

fail() { echo "compose-test: the container engine cannot run here: $*" >&2; exit 1; }

install_missing() {
  local missing=""
  command -v podman >/dev/null || missing+=" podman"
  command -v runc >/dev/null || missing+=" runc"
  command -v mmdebstrap >/dev/null || missing+=" mmdebstrap"
  [ -x /usr/libexec/podman/catatonit ] || missing+=" catatonit"  # the init of `init: true`
  [ -z "$missing" ] && return
  command -v apt-get >/dev/null || fail "missing:$missing, and no apt-get to install them"
  echo "installing$missing with apt"
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
}

check_engine() {
  local out
  out=$(podman info --format '{{.Host.OCIRuntime.Name}}' 2>&1) || fail "\`podman info\` failed: $out"
  [ "$out" = runc ] || fail "podman uses '$out', not runc: is CONTAINERS_CONF=$(pwd)/containers.conf set?"
}

up_to_date() { [ "$(podman image inspect --format '{{index .Labels "io.geogate.recipe"}}' "$1" 2>/dev/null)" = "$RECIPE" ]; }

# The machine's extra CA certificates (an intercepting HTTPS proxy's, say) go into every base image, or pip and npm
# inside a build fail to verify the registries.
add_ca_hook() {
  echo "cp /usr/local/share/ca-certificates/*.crt \"\$1/usr/local/share/ca-certificates/\" 2>/dev/null || true; \
chroot \"\$1\" update-ca-certificates >/dev/null"
}

# A Debian rootfs from packages, imported as `name` with the official image's settings (`--change` lines).
build_base() {
  local name=$1 include=$2 hook=$3
  shift 3
  local tar
  tar=$(mktemp --suffix=.tar)
  echo "building base image $name from Debian packages ($include)"
  mmdebstrap --quiet --variant=minbase --include="ca-certificates,$include" \
    --customize-hook="$(add_ca_hook)" --customize-hook="$hook" \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    "$SUITE" "$tar" || { rm -f "$tar"; fail "mmdebstrap could not build $name"; }
  podman rmi "$name" >/dev/null 2>&1 || true  # the image of an older recipe, unless something still uses it
  podman import --quiet --change "LABEL io.geogate.recipe=$RECIPE" \
    --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" --change "ENV LANG=C.UTF-8" \
    "$@" "$tar" "$name" >/dev/null || { rm -f "$tar"; fail "podman import of $name failed"; }
  rm -f "$tar"
}

# Debian's Python 3.11 where the official image keeps its own: `python` and `pip` on PATH, pip installing system-wide.
python_image() {
  build_base python:3.11-slim python3,python3-pip \
    'ln -sf /usr/bin/python3 "$1/usr/local/bin/python"; ln -sf /usr/bin/pip3 "$1/usr/local/bin/pip";
     rm -f "$1"/usr/lib/python3.11/EXTERNALLY-MANAGED' \
    --change 'CMD ["python3"]'
}

# The machine's own Node.js 20 (a single binary and npm), as the official image lays it out.
node_image() {
  local version
  version=$(node --version 2>/dev/null) || fail "node:20-slim needs the machine's Node.js 20 (none found)"
  case $version in v20.*) ;; *) fail "node:20-slim needs the machine's Node.js 20 (found $version)" ;; esac
  local npm_dir
  npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
  build_base node:20-slim libstdc++6 \
    "cp $(readlink -f "$(command -v node)") \"\$1/usr/local/bin/node\"; mkdir -p \"\$1/usr/local/lib/node_modules\";
     cp -r $npm_dir \"\$1/usr/local/lib/node_modules/npm\";
     ln -sf ../lib/node_modules/npm/bin/npm-cli.js \"\$1/usr/local/bin/npm\";
     ln -sf ../lib/node_modules/npm/bin/npx-cli.js \"\$1/usr/local/bin/npx\"" \
    --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' --change 'CMD ["node"]'
}

# Debian's redis-server (7.0) under the name the compose file uses. Like the official image, it listens on every
# address without protected mode (the container's network is the boundary) and keeps its data in /data.
redis_image() {
  build_base redis:7.2 redis-server \
    'mkdir -p "$1/data"; chroot "$1" chown redis:redis /data;
     printf "#!/bin/sh\nif [ \"\${1#-}\" != \"\$1\" ]; then set -- redis-server \"\$@\"; fi\n\
if [ \"\$1\" = redis-server ]; then set -- \"\$@\" --protected-mode no; \
[ \"\$(id -u)\" = 0 ] && exec setpriv --reuid=redis --regid=redis --init-groups \"\$@\"; fi\nexec \"\$@\"\n" \
       > "$1/usr/local/bin/docker-entrypoint.sh"; chmod 755 "$1/usr/local/bin/docker-entrypoint.sh"' \
    --change 'WORKDIR /data' --change 'VOLUME /data' --change 'EXPOSE 6379' \
    --change 'ENTRYPOINT ["docker-entrypoint.sh"]' --change 'CMD ["redis-server"]'
}

# the images are rebuilt when what builds them changes, not when the rest of this script does
RECIPE=$( (declare -f add_ca_hook build_base python_image node_image redis_image; echo "$SUITE") | sha256sum | cut -c1-16)

install_missing
check_engine
up_to_date python:3.11-slim || python_image
up_to_date node:20-slim || node_image
up_to_date redis:7.2 || redis_image
out=$(podman run --rm --network none python:3.11-slim true 2>&1) || fail "a container does not start: $out"
echo "base images ready: python:3.11-slim node:20-slim redis:7.2 (recipe $RECIPE)"
