# Shared set-up for the verify tests (3000-3999): a fixture sysroot in
# $SCRATCH/sys built from tests/fixtures/sysroot/pass with a variant's
# files on top (its .remove lists files to delete; its fixture-patch.json
# is merged into the hardware-ops fixture, "commands" key by key).
load helper

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
			python3 - "$SYS/fixture.json" "$o/fixture-patch.json" <<'PY'
import json, sys
f, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for k, v in p.items():
    if k == "commands":
        f.setdefault(k, {}).update(v)
    else:
        f[k] = v
json.dump(f, open(sys.argv[1], "w"))
PY
		fi
	fi
	chmod 0400 "$SYS/etc/munge/munge.key"
	echo "munge:x:$(id -u):$(id -g)::/nonexistent:/usr/sbin/nologin" >> "$SYS/etc/passwd"
}

# nf verify against the fixture sysroot and its ops fixture
vrun() {
	run "$NF_BIN" verify --sysroot "$SYS" --fixture "$SYS/fixture.json" "$@"
}

# The verdict of one check in the last --json output
verdict_of() {
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(next((c["verdict"] + " " + (c.get("seen") or c.get("reason") or "")) for c in d["checks"] if c["id"] == sys.argv[1]))' "$1"
}
