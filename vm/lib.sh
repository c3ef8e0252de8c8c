# Shared by the vm/ scripts (sourced, not run). `make test-vm` runs vm/run.sh.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VM="$ROOT/vm"
# Everything built lives here, ignored by git (.build*/), kept between runs.
OUT=${VM_BUILD_DIR:-$ROOT/.build-vm}
mkdir -p "$OUT"

log() { printf 'test-vm: %s\n' "$*" >&2; }
die() { printf 'test-vm: error: %s\n' "$*" >&2; exit 1; }

# hash_inputs WORD|FILE…: one sha256 over the words and the contents of the files, in order.
# A stage is rebuilt when the hash of its inputs differs from the one it was built from.
hash_inputs() {
    local item
    for item in "$@"; do
        if [[ -f "$item" ]]; then
            printf 'file %s\n' "${item#"$ROOT"/}"
            sha256sum < "$item"
        else
            printf 'word %s\n' "$item"
        fi
    done | sha256sum | cut -c1-16
}

# up_to_date DIR KEY: true when DIR holds a complete build made from inputs hashing to KEY.
up_to_date() { [[ -f "$1/.key" && "$(cat "$1/.key")" == "$2" ]]; }
mark_built() { printf '%s\n' "$2" > "$1/.key"; }

# The guest kernel: Debian's current linux-image-amd64, pinned by ABI and version so that the
# headers and source on the host match the image in the guest. Sets KIMG (package), KVER
# (version), KABI (e.g. 6.1.0-56-amd64), KSRC (linux-source-6.1). Written to $OUT/kernel.env
# once, so warm runs need no apt look-up; delete that file to move to a newer kernel.
resolve_kernel() {
    local cache="$OUT/kernel.env"
    if [[ -f "$cache" ]]; then
        # shellcheck source=/dev/null
        source "$cache"
        return
    fi
    apt_lists_ready
    local meta dep
    meta=$(apt-cache policy linux-image-amd64 2>/dev/null | awk '/Candidate:/ {print $2}')
    [[ -n "$meta" && "$meta" != "(none)" ]] || die "apt knows no linux-image-amd64: run apt-get update (as root)"
    dep=$(apt-cache show "linux-image-amd64=$meta" | sed -n 's/^Depends: \(linux-image-[^ ,]*\) (= \([^)]*\)).*/\1 \2/p' | head -n 1)
    [[ -n "$dep" ]] || die "cannot tell which kernel linux-image-amd64 $meta depends on (apt-cache show linux-image-amd64)"
    KIMG=${dep% *}
    KVER=${dep#* }
    KABI=${KIMG#linux-image-}
    KSRC="linux-source-$(cut -d. -f1,2 <<< "$KVER")"
    apt-cache show "$KSRC=$KVER" > /dev/null 2>&1 \
        || die "the guest kernel is $KIMG $KVER, but apt has no $KSRC $KVER to build gpio-sim from (apt-cache policy $KSRC)"
    mkdir -p "$OUT"
    printf 'KIMG=%s\nKVER=%s\nKABI=%s\nKSRC=%s\n' "$KIMG" "$KVER" "$KABI" "$KSRC" > "$cache"
}

APT_UPDATED=""
# Fresh package lists, once per run, when we are about to rely on them.
apt_lists_ready() {
    [[ -n "$APT_UPDATED" ]] && return
    if [[ $EUID -eq 0 ]]; then
        log "apt-get update"
        apt-get -o DPkg::Lock::Timeout=600 update -qq > "$OUT/apt-update.log" 2>&1 || { cat "$OUT/apt-update.log" >&2; die "apt-get update failed"; }
        APT_UPDATED=1
    elif ! compgen -G "/var/lib/apt/lists/*_Packages*" > /dev/null; then
        die "apt has no package lists; run 'sudo apt-get update' first"
    fi
}
