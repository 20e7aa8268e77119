#!/usr/bin/env bash
# Runs memtree's cargo-fuzz (libFuzzer) targets in fuzz/, one after another.
#
#   bash scripts/fuzz.sh                  every target for $FUZZ_SECONDS s each (default 600)
#   bash scripts/fuzz.sh --smoke          every target for ~20 s each (FUZZ_SECONDS), seed 1 (CI)
#   bash scripts/fuzz.sh doc_id ...       only the named targets
#   bash scripts/fuzz.sh --update-corpus  also merge new coverage into fuzz/corpus/<target>
#
# Each target first replays its saved findings (fuzz/regressions/<target>/),
# then fuzzes, starting from the committed corpus fuzz/corpus/<target>; what
# it finds goes to fuzz/target/corpus/<target> (ignored by git) unless
# --update-corpus merges the inputs that add coverage into the committed one.
# Per target it prints runs executed, exec/s, corpus size and whether a
# crash was found (the input is then in fuzz/artifacts/<target>/); it exits
# non-zero when any target crashed.
#
# --smoke is a gate, so it is repeatable: a fixed seed and a fresh working
# corpus, so a run here explores the same inputs, in the same order, as the
# run in CI (which stops sooner or later with the machine's speed).
#
# Needs cargo-fuzz (installed here when missing) and a nightly toolchain;
# without one, stable runs with RUSTC_BOOTSTRAP=1. FUZZ_TOOLCHAIN=nightly or
# FUZZ_TOOLCHAIN=bootstrap forces one. FUZZ_STRICT=1 also fails on the
# findings already reported (see fuzz/README.md). Runs under `nice`, one
# fuzzing process at a time.
set -euo pipefail

cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-600}"
update_corpus=0
smoke=0
targets=()
for arg in "$@"; do
    case "$arg" in
        --smoke) seconds="${FUZZ_SECONDS:-20}" smoke=1 ;;
        --update-corpus) update_corpus=1 ;;
        -h | --help) sed -n '2,25p' "$0"; exit 0 ;;
        -*) echo "fuzz.sh: unknown option $arg" >&2; exit 2 ;;
        *) targets+=("$arg") ;;
    esac
done
if [ ${#targets[@]} -eq 0 ]; then
    for f in fuzz/fuzz_targets/*.rs; do targets+=("$(basename "$f" .rs)"); done
fi
for t in "${targets[@]}"; do
    [ -f "fuzz/fuzz_targets/$t.rs" ] || { echo "fuzz.sh: no target $t in fuzz/fuzz_targets/" >&2; exit 2; }
done

if ! cargo fuzz --version > /dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

# The toolchain: nightly if rustup has one, else stable with RUSTC_BOOTSTRAP.
toolchain="${FUZZ_TOOLCHAIN:-}"
if [ -z "$toolchain" ]; then
    if command -v rustup > /dev/null && rustup toolchain list 2> /dev/null | grep -q '^nightly'; then
        toolchain=nightly
    else
        toolchain=bootstrap
    fi
fi
case "$toolchain" in
    nightly) cargo=(cargo +nightly fuzz) ;;
    bootstrap) export RUSTC_BOOTSTRAP=1; cargo=(cargo fuzz) ;;
    *) echo "fuzz.sh: FUZZ_TOOLCHAIN is nightly or bootstrap, not $toolchain" >&2; exit 2 ;;
esac
echo "== toolchain: $toolchain ($(if [ "$toolchain" = nightly ]; then rustc +nightly --version; else rustc --version; fi))"

start=$SECONDS
echo "== building ${targets[*]}"
for t in "${targets[@]}"; do
    nice -n 10 "${cargo[@]}" build "$t"
done
echo "== built in $((SECONDS - start)) s"

bin_dir="fuzz/target/$(rustc -vV | sed -n 's/^host: //p')/release"
log_dir="fuzz/target/logs"
mkdir -p "$log_dir"
summary=()
crashed=()
for t in "${targets[@]}"; do
    echo "== $t: ${seconds} s"
    seeds="fuzz/corpus/$t"
    work="fuzz/target/corpus/$t"
    random=()
    if [ "$smoke" = 1 ]; then
        work="fuzz/target/smoke/$t"
        rm -rf "$work"
        random=(-seed=1)
    fi
    artifacts="fuzz/artifacts/$t"
    mkdir -p "$seeds" "$work" "$artifacts"
    log="$log_dir/$t.log"

    regressions=(fuzz/regressions/"$t"/*)
    if [ -e "${regressions[0]}" ]; then
        if ! nice -n 10 "$bin_dir/$t" -artifact_prefix="$artifacts/" "${regressions[@]}" > "$log" 2>&1; then
            grep -m1 -A1 'panicked at' "$log" >&2 || tail -20 "$log" >&2
            echo "$t: a saved finding fails (see $log)" >&2
            crashed+=("$t")
            summary+=("$(printf '%-16s regressions FAILED' "$t")")
            continue
        fi
    fi

    status=0
    nice -n 10 "${cargo[@]}" run "$t" "$work" "$seeds" -- \
        -max_total_time="$seconds" -timeout=10 -print_final_stats=1 "${random[@]}" \
        -artifact_prefix="$artifacts/" > "$log" 2>&1 || status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    corpus=$(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" | tail -1 | cut -d' ' -f2)
    if [ "$update_corpus" = 1 ]; then
        nice -n 10 "$bin_dir/$t" -merge=1 "$seeds" "$work" >> "$log" 2>&1
    fi
    files=$(find "$seeds" -type f | wc -l)
    artifact=$(grep -o "$artifacts/[a-z]*-[0-9a-f]*" "$log" | tail -1 || true)
    if [ "$status" -ne 0 ]; then
        crashed+=("$t")
        if [ -n "$artifact" ]; then result="CRASH: $artifact"; else result="FAILED (exit $status)"; fi
        grep -m1 -A1 'panicked at' "$log" >&2 || tail -20 "$log" >&2
    else
        result="no crash"
    fi
    line=$(printf '%-15s runs %-9s exec/s %-6s corpus %s units, %s (committed: %s files)  %s' \
        "$t" "${runs:-?}" "${rate:-?}" "${corpus%%/*}" "${corpus#*/}" "$files" "$result")
    echo "$line"
    summary+=("$line")
done

echo "== summary ($((SECONDS - start)) s in all; logs in $log_dir/)"
printf '%s\n' "${summary[@]}"
if [ ${#crashed[@]} -gt 0 ]; then
    echo "crashed: ${crashed[*]}" >&2
    exit 1
fi
