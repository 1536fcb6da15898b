#!/usr/bin/env bash
# Build the domain server images shiftbox-<domain>:<shiftbox-servers version>, offline.
#
#   containers/build-images.sh                  # every domain with tasks (`shiftbox snapshots list --tasks`)
#   containers/build-images.sh banking          # just one
#
# 1. requirements: `uv export --frozen` of shiftbox-servers' dependencies (hashes from uv.lock);
# 2. wheelhouse: pip downloads exactly those files (cp311, manylinux x86_64, hash-checked) on the
#    host; a rerun with a complete wheelhouse needs no network;
# 3. the shiftbox-servers wheel (`uv build`), its sha256 appended to the requirements;
# 4. `docker build --network none` per domain, with the domain's snapshot and labels.
# Idempotent: unchanged inputs are BuildKit cache hits. Prints each image's id and size.
#
# Environment: BASE_IMAGE (default shiftbox-base:bookworm, built by build-base.sh when missing; pass
# the pinned python:3.11-slim-bookworm@sha256:... where a registry is reachable), IMAGE_PREFIX
# (default shiftbox-), SOURCE_URL (default: the git remote `origin`), DOCKER, PYTHON.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

BASE_IMAGE=${BASE_IMAGE:-shiftbox-base:bookworm}
IMAGE_PREFIX=${IMAGE_PREFIX:-shiftbox-}
PYTHON=${PYTHON:-python3}
if [ -z "${DOCKER:-}" ]; then
  if [ -x /usr/bin/docker ]; then DOCKER=/usr/bin/docker; else DOCKER=docker; fi
fi
export DOCKER
UV=("$PYTHON" -m uv)
"$PYTHON" -m uv --version >/dev/null 2>&1 && "$PYTHON" -m pip --version >/dev/null 2>&1 || {
  echo "build-images.sh: $PYTHON lacks uv or pip (a project .venv has neither): run \`make images\`, or set PYTHON" \
       "to an interpreter with both" >&2; exit 2; }
VENV_PY=$REPO/.venv/bin/python
[ -x "$VENV_PY" ] || { echo "build-images.sh: no .venv; run \`make env\` first (or \`make images\`)" >&2; exit 2; }
"$DOCKER" info >/dev/null 2>&1 || { echo "build-images.sh: no Docker engine reachable via $DOCKER; see docs/containers.md" >&2; exit 2; }

domains=("$@")
[ ${#domains[@]} -gt 0 ] || mapfile -t domains < <("$REPO/.venv/bin/shiftbox" snapshots list --tasks)

BUILD=$REPO/containers/build
CONTEXT=$BUILD/context
WHEELHOUSE=$BUILD/wheelhouse
mkdir -p "$WHEELHOUSE" "$BUILD/dist" "$CONTEXT/snapshots"

if [ "$BASE_IMAGE" = shiftbox-base:bookworm ]; then
  BASE_IMAGE=$BASE_IMAGE containers/build-base.sh
fi

# 1. hash-locked requirements of the servers distribution (no litellm: that is the client's)
"${UV[@]}" export --frozen --package shiftbox-servers --no-dev --no-emit-workspace --no-header \
  --format requirements.txt --output-file "$BUILD/requirements-deps.txt" >/dev/null

# 2. the wheelhouse: offline first (a complete wheelhouse needs no index), then from the index
pip_download=("$PYTHON" -m pip download --quiet --disable-pip-version-check --require-hashes --no-deps
  --only-binary=:all: --implementation cp --python-version 3.11 --abi cp311 --abi abi3 --abi none
  --platform manylinux_2_36_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64
  --platform manylinux2014_x86_64 --platform any -d "$WHEELHOUSE" -r "$BUILD/requirements-deps.txt")
if ! "${pip_download[@]}" --no-index --find-links "$WHEELHOUSE" >/dev/null 2>&1; then
  echo "downloading wheels into $WHEELHOUSE ..."
  "${pip_download[@]}" 2> >(grep -v "is neither a file nor a directory" >&2)
fi

# 3. the servers wheel, pinned by its own hash next to the locked dependencies
rm -f "$BUILD"/dist/shiftbox_servers-*.whl
"${UV[@]}" build --quiet --package shiftbox-servers --wheel --out-dir "$BUILD/dist" >/dev/null 2>&1 \
  || "${UV[@]}" build --package shiftbox-servers --wheel --out-dir "$BUILD/dist"
wheel=$(ls "$BUILD"/dist/shiftbox_servers-*.whl)
VERSION=$("$VENV_PY" -c 'import sys; print(sys.argv[1].split("/")[-1].split("-")[1])' "$wheel")

# The context holds only what the requirements pin (old wheels from a previous lock stay out of it,
# so they neither bloat the context nor break the build cache).
rm -rf "$CONTEXT/wheels"
mkdir -p "$CONTEXT/wheels"
"$VENV_PY" - "$BUILD/requirements-deps.txt" "$WHEELHOUSE" "$wheel" "$CONTEXT/wheels" "$VERSION" <<'EOF'
import hashlib, os, re, shutil, sys
from pathlib import Path

reqs, wheelhouse, own, out, version = sys.argv[1:]
text = Path(reqs).read_text()
pinned = set(re.findall(r"--hash=sha256:([0-9a-f]{64})", text))
for f in sorted(Path(wheelhouse).glob("*.whl")):
    if hashlib.sha256(f.read_bytes()).hexdigest() in pinned:
        os.link(f, Path(out) / f.name)
shutil.copy2(own, out)
own_hash = hashlib.sha256(Path(own).read_bytes()).hexdigest()
Path(out, "requirements.txt").write_text(text + f"shiftbox-servers=={version} \\\n    --hash=sha256:{own_hash}\n")
EOF

REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if [ "$REVISION" != unknown ] && ! git diff --quiet HEAD -- servers uv.lock containers 2>/dev/null; then
  REVISION="$REVISION-dirty"
fi
SOURCE=${SOURCE_URL:-$(git remote get-url origin 2>/dev/null || echo unknown)}

# Each domain's default snapshot, verified against its manifest before it is baked in.
declare -A SNAP SNAPSHOT_ID SNAPSHOT_SHA256 TOOL_CONTRACT
snapshots=$("$VENV_PY" - "${domains[@]}" <<'PY'
import sys
from shiftbox_servers.kit import Snapshot, SnapshotError, get_domain

for name in sys.argv[1:]:
    directory = get_domain(name).default_snapshot_dir()
    try:
        m = Snapshot.load(directory).manifest
    except SnapshotError as exc:
        sys.exit(f"build-images.sh: {exc}")
    contract = m.tool_contracts.get("default")
    if contract is None:
        sys.exit(f"build-images.sh: {directory}/manifest.json records no tool contract; "
                 f"rebuild it with `shiftbox snapshots build {name}`")
    print(name, directory, m.snapshot_id, m.sha256, contract.digest)
PY
)
while read -r domain dir id sha contract; do
  SNAP[$domain]=$dir SNAPSHOT_ID[$domain]=$id SNAPSHOT_SHA256[$domain]=$sha TOOL_CONTRACT[$domain]=$contract
done <<<"$snapshots"

# 4. one image per domain, sharing the base and venv layers
printf '%-28s %-73s %s\n' image id size
for domain in "${domains[@]}"; do
  snap=${SNAP[$domain]}
  mkdir -p "$CONTEXT/snapshots/$domain"
  for f in db.sqlite manifest.json; do
    cmp -s "$snap/$f" "$CONTEXT/snapshots/$domain/$f" || cp "$snap/$f" "$CONTEXT/snapshots/$domain/$f"
  done
  image="$IMAGE_PREFIX$domain:$VERSION"
  log=$(mktemp)
  if ! DOCKER_BUILDKIT=1 "$DOCKER" build --network none --progress plain -f containers/Dockerfile \
      --build-arg BASE_IMAGE="$BASE_IMAGE" --build-arg DOMAIN="$domain" --build-arg VERSION="$VERSION" \
      --build-arg REVISION="$REVISION" --build-arg SOURCE="$SOURCE" \
      --build-arg SNAPSHOT_ID="${SNAPSHOT_ID[$domain]}" --build-arg SNAPSHOT_SHA256="${SNAPSHOT_SHA256[$domain]}" \
      --build-arg TOOL_CONTRACT="${TOOL_CONTRACT[$domain]}" \
      -t "$image" "$CONTEXT" >"$log" 2>&1; then
    tail -30 "$log" >&2
    rm -f "$log"
    echo "build-images.sh: building $image failed" >&2
    exit 1
  fi
  rm -f "$log"
  printf '%-28s %-73s %s\n' "$image" "$("$DOCKER" image inspect -f '{{.Id}}' "$image")" \
    "$("$DOCKER" image inspect -f '{{.Size}}' "$image" | awk '{printf "%.1f MB", $1/1e6}')"
done
