# Shared set-up for the CLI tests: every test runs the real binary in a
# fresh scratch directory with HOME, LC_ALL and TZ pinned.
NF_SRCDIR=${NF_SRCDIR:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}
NF_BIN=${NF_BIN:-$NF_SRCDIR/build/nodeforge}
FIXTURES=$NF_SRCDIR/tests/fixtures

nf_setup() {
	SCRATCH=$(mktemp -d "${BATS_TMPDIR:-/tmp}/nf.XXXXXX")
	export HOME=$SCRATCH/home LC_ALL=C TZ=UTC
	unset NODEFORGE_PROFILES NODEFORGE_SITE
	# the tests that run nodeforge on a terminal (script) expect colour
	# there: not the caller's NO_COLOR or TERM=dumb (a CI shell, a
	# chroot, a user's own setting)
	unset NO_COLOR
	export TERM=xterm
	mkdir -p "$HOME"
	cd "$SCRATCH"
}

nf_teardown() {
	cd /
	[ -n "${SCRATCH:-}" ] && rm -rf "$SCRATCH"
}

setup() { nf_setup; }
teardown() { nf_teardown; }

nf() { "$NF_BIN" "$@"; }

# comp WORD...: what dist/nodeforge.bash completes the last word to, one
# per line (the caller sources it, with the binary on PATH)
comp() {
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_nodeforge 2>/dev/null
	printf '%s\n' "${COMPREPLY[@]}"
}

# Fail with the output shown when the last `run` status is not $1
status_is() {
	if [ "$status" -ne "$1" ]; then
		echo "expected exit $1, got $status; output:" >&2
		echo "$output" >&2
		return 1
	fi
}

# Start 'nodeforge serve ARGS...' on a free loopback port in the
# background, logging to serve.log: sets SERVE_PID, U (its URL) and PORT
nf_serve_bg() {
	: > serve.log
	"$NF_BIN" serve --listen 127.0.0.1:0 "$@" > serve.log 2>&1 3>&- &
	SERVE_PID=$!
	nf_wait_url serve.log
	PORT=${U##*:}
}

# nf_wait_url LOG: the URL a server started in the background prints on
# its 'listening on URL' line of LOG, in $U; up to 20 s (an ASan build
# on a loaded machine), since the job may not even have opened LOG yet
nf_wait_url() {
	U=
	for _ in $(seq 400); do
		U=$(sed -n 's/^listening on //p' "$1" 2>/dev/null || true)
		[ -n "$U" ] && return 0
		sleep 0.05
	done
	echo "no 'listening on' line in $1 after 20 s:" >&2
	cat "$1" >&2 2>/dev/null || true
	return 1
}

# The status tests' boot server: the example racks' PXE tree served by a
# real 'nodeforge serve' (nf_serve_bg) with its state in ./state
nf_status_serve() {
	cp "$NF_SRCDIR/examples/racks.yaml" .
	nf -C "$FIXTURES/boot/profiles" pxe -i racks.yaml -o tree -u http://10.0.0.1:8080 \
		--images "$FIXTURES/boot/out" --network 10.0.0.0/16 \
		--kernel-args compute=quiet --kernel-args controller=quiet \
		--kernel-args login=quiet >/dev/null
	nf_serve_bg --tree tree --state state -q
}

# stub_profiles DIR: the shipped profiles for the stand-in bootstrap,
# whose tiny roots cannot compile: without the pinned sources built in the
# image (enroot, pyxis: system.artifacts) and their build packages.  The
# e2e tests build them for real.
stub_profiles() {
	mkdir -p "$1"
	cp "$NF_SRCDIR"/profiles/*.yaml "$1"/
	python3 - "$1" <<'PY'
import glob, sys, yaml
for f in glob.glob(sys.argv[1] + "/*.yaml"):
    d = yaml.safe_load(open(f))
    s = (d or {}).get("system") or {}
    if "artifacts" not in s and "build" not in (s.get("packages") or {}):
        continue
    s.pop("artifacts", None)
    (s.get("packages") or {}).pop("build", None)
    if s.get("packages") == {}:
        s.pop("packages")
    if not s:
        d.pop("system")
    yaml.safe_dump(d, open(f, "w"), sort_keys=False)
PY
	! grep -q 'kind: source' "$1"/*.yaml
}

# The kernel's words when NVIDIA's module was loaded on a machine without
# a GPU ($1: modprobe's and the kernel log's lines): the driver's own
# probe failed, and nothing says the module was built for another kernel
nv_no_gpu_only() {
	local bad
	[[ "$1" == *"NVRM: No NVIDIA GPU found"* ]] || { echo "no 'NVRM: No NVIDIA GPU found'"; return 1; }
	for bad in "version magic" "Unknown symbol" "disagrees about version" \
		   "Invalid module format" "not found in directory"; do
		[[ "$1" != *"$bad"* ]] || { echo "kernel log says: $bad"; return 1; }
	done
}

# Command N (1 or 2) of the README: line N of the sh block that opens it,
# exactly as written
readme_command() {
	awk -v n="$1" '/^```sh$/ && !seen { on = 1; seen = 1; next }
		on && /^```$/ { exit }
		on && ++i == n { print; exit }' "$NF_SRCDIR/README.md"
}
