# Shared set-up for the verify tests (3000-3999): a fixture sysroot in
# $SCRATCH/sys built from tests/fixtures/sysroot/pass with a variant's
# files on top (its .remove lists files to delete; its fixture-patch.json
# is merged into the hardware-ops fixture with jq's recursive merge).
# shellcheck source=helper.bash
source "${BASH_SOURCE[0]%/*}/helper.bash"

vfx() {
	SYS=$SCRATCH/sys
	rm -rf "$SYS"
	cp -a "$FIXTURES/sysroot/pass" "$SYS"
	local v=${1:-pass}
	if [ "$v" != pass ]; then
		local o=$FIXTURES/sysroot/$v
		[ -d "$o" ] || { echo "no fixture $v" >&2; return 1; }
		cp -a "$o/." "$SYS/"
		rm -f "$SYS/.remove" "$SYS/fixture-patch.json"
		if [ -f "$o/.remove" ]; then
			while read -r p; do rm -rf "${SYS:?}/$p"; done < "$o/.remove"
		fi
		if [ -f "$o/fixture-patch.json" ]; then
			jq -s '.[0] * .[1]' "$SYS/fixture.json" "$o/fixture-patch.json" \
				> "$SYS/fixture.new" && mv "$SYS/fixture.new" "$SYS/fixture.json"
		fi
	fi
	chmod 0400 "$SYS/etc/munge/munge.key"
	# what the image's tmpfiles.d makes at boot (git keeps no empty
	# directories and no modes): the parents of enroot's per-user paths
	local d
	for d in run/enroot run/enroot/data run/enroot/tmp mnt/nvme/enroot/cache; do
		mkdir -p "$SYS/$d" && chmod 1777 "$SYS/$d"
	done
	echo "munge:x:$(id -u):$(id -g)::/nonexistent:/usr/sbin/nologin" >> "$SYS/etc/passwd"
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
