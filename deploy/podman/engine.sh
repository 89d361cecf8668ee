#!/usr/bin/env bash
# Podman as the container engine where no Docker engine runs and no registry is reachable: installs podman, runc and
# mmdebstrap with apt when missing, checks that the engine starts (fails naming the reason otherwise), and builds the
# one base image deploy/Dockerfile needs, from the Debian suite its `ARG BASE=debian:<suite>-slim` names, with the
# packages of the Debian mirror this machine's apt uses. The base is tagged with a local name (BASE_IMAGE below, never
# an official one) and passed to the builds as `--build-arg BASE=...`. It stays cached in podman's store and is
# rebuilt only when this recipe changes.
# Usage: CONTAINERS_CONF=deploy/podman/containers.conf deploy/podman/engine.sh   (prints nothing else on stdout
# but progress; `engine.sh --name` prints the base image's name and exits)
set -euo pipefail
cd "$(dirname "$0")"
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
SUITE=$(sed -n 's/^ARG BASE=debian:\([a-z]*\)-slim$/\1/p' ../Dockerfile)
BASE_IMAGE=localhost/geogate-base:$SUITE

fail() { echo "compose-test: the container engine cannot run here: $*" >&2; exit 1; }

[ -n "$SUITE" ] || fail "deploy/Dockerfile has no \`ARG BASE=debian:<suite>-slim\` line to take the suite from"
if [ "${1:-}" = --name ]; then echo "$BASE_IMAGE"; exit 0; fi

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

# The first Debian archive URL (ending in /debian or /debian-security) in this machine's apt sources, else Debian's
# own redirector: the base takes its packages where the machine's apt does.
apt_uri() {
  local found
  found=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
    | grep -v '^\s*#' | grep -oE "https?://[^ ]+/$1/?( |\$)" | head -1 | tr -d ' ')
  echo "${found:-http://deb.debian.org/$1}"
}

up_to_date() { [ "$(podman image inspect --format '{{index .Labels "io.geogate.recipe"}}' "$1" 2>/dev/null)" = "$RECIPE" ]; }

# The machine's extra CA certificates (an intercepting HTTPS proxy's, say) go into the base, or apt, pip and npm
# inside a build fail to verify the mirrors and registries. Without any, the base is minbase alone, as the official
# image is.
extra_cas() { compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; }

add_ca_hook() {
  echo "cp /usr/local/share/ca-certificates/*.crt \"\$1/usr/local/share/ca-certificates/\"; \
chroot \"\$1\" update-ca-certificates >/dev/null"
}

# `debian:<suite>-slim` rebuilt the way Debian's image is (a minbase rootfs of the suite, with the suite, its updates
# and its security archive in apt's sources), imported under the local name with the official image's settings.
base_image() {
  local tar mirror security include=() hooks=()
  mirror=$(apt_uri debian)
  security=$(apt_uri debian-security)
  if extra_cas; then include=(--include=ca-certificates); hooks=(--customize-hook="$(add_ca_hook)"); fi
  tar=$(mktemp --suffix=.tar)
  echo "building base image $BASE_IMAGE from Debian $SUITE packages ($mirror)"
  mmdebstrap --quiet --variant=minbase "${include[@]}" "${hooks[@]}" \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    "$SUITE" "$tar" "deb $mirror $SUITE main" "deb $mirror $SUITE-updates main" \
    "deb $security $SUITE-security main" || { rm -f "$tar"; fail "mmdebstrap could not build $BASE_IMAGE"; }
  podman rmi "$BASE_IMAGE" >/dev/null 2>&1 || true  # the image of an older recipe, unless something still uses it
  podman import --quiet --change "LABEL io.geogate.recipe=$RECIPE" \
    --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" --change 'CMD ["bash"]' \
    "$tar" "$BASE_IMAGE" >/dev/null || { rm -f "$tar"; fail "podman import of $BASE_IMAGE failed"; }
  rm -f "$tar"
}

# the base is rebuilt when what builds it changes, not when the rest of this script does
RECIPE=$( (declare -f apt_uri extra_cas add_ca_hook base_image; echo "$SUITE") | sha256sum | cut -c1-16)

install_missing
check_engine
up_to_date "$BASE_IMAGE" || base_image
out=$(podman run --rm --network none "$BASE_IMAGE" true 2>&1) || fail "a container does not start: $out"
echo "base image ready: $BASE_IMAGE, Debian $SUITE (recipe $RECIPE)"
