#!/usr/bin/env bash
# Build the offline base image (Debian bookworm minbase + python3 + venv) with debootstrap and
# `docker import`: no registry is needed, only the Debian mirror. Reused when already present.
#
#   containers/build-base.sh            # -> shiftbox-base:bookworm
#   BASE_IMAGE=name:tag containers/build-base.sh
#
# Environment: BASE_IMAGE (default shiftbox-base:bookworm), DEBIAN_MIRROR (default
# http://deb.debian.org/debian), DOCKER (default /usr/bin/docker when present, else docker).
set -euo pipefail

BASE_IMAGE=${BASE_IMAGE:-shiftbox-base:bookworm}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
if [ -z "${DOCKER:-}" ]; then
  if [ -x /usr/bin/docker ]; then DOCKER=/usr/bin/docker; else DOCKER=docker; fi
fi

if "$DOCKER" image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
  echo "base image $BASE_IMAGE already present: $("$DOCKER" image inspect -f '{{.Id}}' "$BASE_IMAGE")"
  exit 0
fi
command -v debootstrap >/dev/null || { echo "build-base.sh: debootstrap is not installed (apt-get install -y debootstrap)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "build-base.sh: debootstrap needs root" >&2; exit 2; }

dir=$(mktemp -d /tmp/shiftbox-base.XXXXXX)
trap 'rm -rf "$dir"' EXIT
start=$(date +%s)
echo "debootstrap bookworm (minbase + python3, python3-venv) into $dir ..."
debootstrap --variant=minbase --include=python3,python3-venv bookworm "$dir" "$DEBIAN_MIRROR" >"$dir.log" 2>&1 \
  || { tail -20 "$dir.log" >&2; rm -f "$dir.log"; exit 1; }
rm -f "$dir.log"
# What a container never needs: downloaded .debs, package lists, docs, man pages, locales.
rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/* "$dir"/usr/share/doc/* \
       "$dir"/usr/share/man/* "$dir"/usr/share/info/* "$dir"/var/log/*
find "$dir"/usr/share/locale -mindepth 1 -maxdepth 1 ! -name 'locale.alias' -exec rm -rf {} + 2>/dev/null || true
tar --numeric-owner -C "$dir" -c . | "$DOCKER" import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["python3"]' \
  - "$BASE_IMAGE" >/dev/null
echo "built base image $BASE_IMAGE in $(( $(date +%s) - start ))s: $("$DOCKER" image inspect -f '{{.Id}} {{.Size}} bytes' "$BASE_IMAGE")"
