#!/bin/sh
# Issue #24: a registered shell test of the tools run again with the shim
# exported in LD_PRELOAD for every process (docs/PARALLEL.md tells Slurm
# users to export it for the whole job). The test's own command and
# environment come from meson's introspection (meson-info/intro-tests.json),
# so nothing is written twice. It runs twice in the same directory (lib.sh's
# RASTER_TEST_TMP), plain and exported; both runs must pass with the same
# summary and the same output, and every file they leave (rasterget's,
# rasterconvert's and rastergen's outputs, rasterstat's JSON and pictures,
# the inputs) must be byte for byte the same. Only the checks that look at
# raster's storage on disk, and the plain baselines of the shim's own
# checks, run without the shim (lib.sh's on_disk).
# usage: test_exported_preload.sh SHIM BUILD_DIR TEST
#   (env: PYTHON; PRELOAD_FIRST; what differs from run to run whatever the
#   shim does, e.g. timings or a writer killed at random: EXPORTED_VARIES,
#   a grep -E pattern of output lines and file paths left out,
#   EXPORTED_TIMES, a sed -E script that blanks timings in a file)
set -u
shim=$1 build=$2 name=$3
# in the sanitized build the sanitizer runtime first (PRELOAD_FIRST, as in
# lib.sh's use_shim); LeakSanitizer off in the exported run, where every
# python3 would report the interpreter's own blocks (the plain run checks
# the programs of this build for leaks)
preload=${PRELOAD_FIRST:+$PRELOAD_FIRST }$shim
san=${ASAN_OPTIONS:-}
[ -z "${PRELOAD_FIRST:-}" ] || san="${san:+$san:}detect_leaks=0"
# the exported run is under the shim: a process started so maps it
LD_PRELOAD="$preload" cat /proc/self/maps | grep -q "$(basename "$shim")" ||
    { echo "FAIL: $shim is not loaded under LD_PRELOAD"; exit 1; }
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
varies=${EXPORTED_VARIES:-} times=${EXPORTED_TIMES:-}

# the test's command line, as a shell script: exec env VAR=VALUE... CMD...
"${PYTHON:-python3}" - "$build/meson-info/intro-tests.json" "$name" \
    > "$work/cmd.sh" <<'PY' || { echo "FAIL: no test $name"; exit 1; }
import json, shlex, sys
tests = [t for t in json.load(open(sys.argv[1])) if t["name"] == sys.argv[2]]
if len(tests) != 1:
    sys.exit(1)
t = tests[0]
env = ["%s=%s" % kv for kv in sorted(t["env"].items())]
print("exec env " + " ".join(shlex.quote(a) for a in env + t["cmd"]))
PY
echo "$name: $(cat "$work/cmd.sh")"

# run_as MODE: the test plain or exported; its output, status and
# directory kept as $work/MODE.log, MODE.status, MODE/
run_as() {
    mode=$1
    if [ "$mode" = plain ]; then
        env -u LD_PRELOAD RASTER_TEST_TMP="$work/run" sh "$work/cmd.sh" \
            > "$work/$mode.log" 2>&1
    else
        env LD_PRELOAD="$preload" ASAN_OPTIONS="$san" \
            RASTER_TEST_TMP="$work/run" sh "$work/cmd.sh" \
            > "$work/$mode.log" 2>&1
    fi
    echo $? > "$work/$mode.status"
    mv "$work/run" "$work/$mode" 2> /dev/null || mkdir "$work/$mode"
}
run_as plain
run_as exported

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# without the lines that vary by themselves
steady() {
    if [ -n "$varies" ]; then grep -Ev "$varies" "$1"; else cat "$1"; fi |
        sed -E "${times:-p;d}"
}

st_plain=$(cat "$work/plain.status") st_exp=$(cat "$work/exported.status")
summary() {
    grep -E '^[A-Za-z_]+: [0-9]+ passed, [0-9]+ failed$' "$1" | tail -n 1
}
echo "plain:    exit $st_plain, $(summary "$work/plain.log")"
echo "exported: exit $st_exp, $(summary "$work/exported.log")"
if [ "$st_plain" = 77 ] && [ "$st_exp" = 77 ]; then
    echo "SKIP: $(grep SKIP "$work/plain.log" | head -n 1)"
    exit 77
fi
[ "$st_plain" = 0 ] || {
    fail "the plain run failed (exit $st_plain):"; cat "$work/plain.log"; }
[ "$st_exp" = 0 ] || {
    fail "the exported run failed (exit $st_exp):"
    grep -E 'FAIL|rror' "$work/exported.log" | head -n 40; }
[ -n "$(summary "$work/plain.log")" ] ||
    fail "no summary line: nothing was checked"
steady "$work/plain.log" > "$work/plain.steady"
steady "$work/exported.log" > "$work/exported.steady"
if ! cmp -s "$work/plain.steady" "$work/exported.steady"; then
    fail "the output differs (< plain, > exported):"
    diff "$work/plain.steady" "$work/exported.steady" | head -n 20
fi

# every file either run left, byte for byte
(cd "$work/plain" && find . -type f) > "$work/files.plain"
(cd "$work/exported" && find . -type f) > "$work/files.exported"
sort -u "$work/files.plain" "$work/files.exported" > "$work/files"
ncmp=0 ntimed=0
while IFS= read -r f; do
    if [ -n "$varies" ] && printf '%s\n' "$f" | grep -Eq "$varies"; then
        continue
    fi
    if ! [ -f "$work/plain/$f" ] || ! [ -f "$work/exported/$f" ]; then
        fail "$f: left by one run only"
    elif cmp -s "$work/plain/$f" "$work/exported/$f"; then
        ncmp=$((ncmp + 1))
    elif [ -n "$times" ] && sed -E "$times" "$work/plain/$f" > "$work/a" &&
         sed -E "$times" "$work/exported/$f" > "$work/b" &&
         cmp -s "$work/a" "$work/b"; then
        ntimed=$((ntimed + 1))
    else
        fail "$f differs"
    fi
done < "$work/files"
echo "$ncmp files byte for byte the same, $ntimed the same but for timings"
[ $((ncmp + ntimed)) -gt 0 ] ||
    fail "no file compared: the test keeps nothing in RASTER_TEST_TMP"
echo "${name}_exported: $fails failed"
[ "$fails" -eq 0 ]
