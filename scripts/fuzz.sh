#!/usr/bin/env bash
# Long fuzzing with libFuzzer (cargo-fuzz on the nightly toolchain) over the
# targets of crates/fuzz:
#
#   scripts/fuzz.sh wire 1800      # target, seconds (default: 1800)
#   scripts/fuzz.sh sql 600 -jobs=2  # more arguments go to libFuzzer
#
# Seeds come from crates/fuzz/regressions/<target>; the corpus grows in
# fuzz/corpus/<target>, crashing inputs land in fuzz/artifacts/<target>.
# Keep a crashing input by copying it (minimized with `cargo fuzz tmin`)
# into crates/fuzz/regressions/<target>/, which `cargo test` replays.
# CI runs the stable-toolchain runner instead (ndpdb-fuzz, see .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-wire}
seconds=${2:-1800}
# No sanitizer by default: ndpdb's only unsafe code is the shared lock
# table's memory mapping (slt/src/region.rs), and
# AddressSanitizer's larger stack frames outgrow the statement stack that
# is sized for release frames (sql/src/limits.rs), a false stack overflow
# at PostgreSQL's nesting depth. FUZZ_SANITIZER=address turns it on.
sanitizer=${FUZZ_SANITIZER:-none}
shift $(( $# < 2 ? $# : 2 ))

if ! rustup toolchain list | grep -q '^nightly'; then
  rustup toolchain install nightly --profile minimal
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  cargo +nightly install cargo-fuzz --locked
fi

corpus=fuzz/corpus/$target
mkdir -p "$corpus" "fuzz/artifacts/$target"
# libFuzzer reads every file of the corpus directory; seed it with the
# raw regression inputs (statement histories are replayed by cargo test).
find "crates/fuzz/regressions/$target" -name '*.bin' -exec cp -n {} "$corpus/" \;

exec cargo +nightly fuzz run --fuzz-dir fuzz --sanitizer "$sanitizer" "$target" "$corpus" -- \
  -max_total_time="$seconds" -timeout=30 -rss_limit_mb=8192 \
  -max_len=8192 -len_control=0 -artifact_prefix="fuzz/artifacts/$target/" -print_final_stats=1 "$@"
