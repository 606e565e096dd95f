#!/bin/sh
# Entrypoint of the connect-reconciler image, run by tini (PID 1, which forwards SIGTERM here
# and reaps zombies). It refuses to start a command on the manifests directory when that
# directory holds no manifests: the image has none of its own, so that running it without a
# mount can never create connectors in somebody's cluster. Then it becomes `reconciler` with
# the given arguments (exec: same PID, so SIGTERM reaches the reconciler itself).
set -eu

dir="${RECONCILER_MANIFESTS:-/manifests}"

usage() {
    cat >&2 <<MESSAGE
connect-reconciler: $1: nothing to reconcile.
Mount a directory of Connector manifests (*.yaml, *.yml) at $dir, for example:
  docker run -v "\$PWD/manifests:$dir:ro" -e RECONCILER_BOOTSTRAP_SERVERS=kafka:9092 connect-reconciler
or, on Kubernetes, a ConfigMap volume (see examples/kubernetes/ in the project).
The image holds no manifests of its own, so that running it never creates connectors by accident.
MESSAGE
    exit 64 # EX_USAGE
}

has_manifests() {
    # Hidden entries are skipped, as the reconciler skips them (a ConfigMap's ..data holds the
    # same files as the visible symlinks); -L follows those symlinks.
    found=$(find -L "$1" -mindepth 1 \( -name '.*' -prune \) -o \( -type f \( -name '*.yaml' -o -name '*.yml' \) -print \) 2>/dev/null | head -n 1)
    [ -n "$found" ]
}

for arg in "$@"; do
    case "$arg" in
    "$dir" | "$dir"/*)
        [ -d "$dir" ] || usage "$dir does not exist"
        has_manifests "$dir" || usage "no manifests in $dir"
        break
        ;;
    esac
done

exec reconciler "$@"
