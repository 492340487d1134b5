# Shared set-up for the CLI tests: every test runs the real binary in a
# fresh scratch directory with HOME, LC_ALL and TZ pinned.
NF_SRCDIR=${NF_SRCDIR:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}
NF_BIN=${NF_BIN:-$NF_SRCDIR/build/nodeforge}
FIXTURES=$NF_SRCDIR/tests/fixtures

nf_setup() {
	SCRATCH=$(mktemp -d "${BATS_TMPDIR:-/tmp}/nf.XXXXXX")
	export HOME=$SCRATCH/home LC_ALL=C TZ=UTC
	unset NODEFORGE_PROFILES NODEFORGE_SITE
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

# Fail with the output shown when the last `run` status is not $1
status_is() {
	if [ "$status" -ne "$1" ]; then
		echo "expected exit $1, got $status; output:" >&2
		echo "$output" >&2
		return 1
	fi
}
