# Shared set-up for the verify tests (3000-3999): a fixture sysroot in
# $SCRATCH/sys built from tests/fixtures/sysroot/pass with a variant's
# files on top (tests/fixtures/sysroot/node.sh).
# shellcheck source=helper.bash
source "${BASH_SOURCE[0]%/*}/helper.bash"

vfx() {
	SYS=$SCRATCH/sys
	"$FIXTURES/sysroot/node.sh" "$SYS" "${1:-pass}"
}

# nf verify against the fixture sysroot and its ops fixture
vrun() {
	run "$NF_BIN" verify --sysroot "$SYS" --fixture "$SYS/fixture.json" "$@"
}

# The verdict of one check in the last --json output
verdict_of() {
	echo "$output" | jq -r --arg id "$1" \
		'.checks[] | select(.id == $id) | .verdict + " " + (.seen // .reason // "")'
}

# expect_root VARIANT ID TEXT: verify fails, ID is the first root cause and
# its seen/reason contains TEXT
expect_root() {
	vfx "$1"
	vrun --json
	status_is 3
	local first
	first=$(echo "$output" | jq -r '.checks[0] | .id + "|" + .verdict + "|" + (.seen // .reason // "") + "|" + (.remedy // "")')
	[[ "$first" == "$2|"* ]] || { echo "first: $first"; false; }
	[[ "$first" == *"$3"* ]] || { echo "first: $first"; false; }
	[[ "$first" == *"|hung|"* || "$first" != *"|" ]] || { echo "no remedy: $first"; false; }
}
