#!/usr/bin/env bats
# manifest check (drift) and diff.
load helper
load pack_helper

@test "an unchanged tree has no drift (exit 0)" {
	make_tree root
	nf pack root -o a.tar -q
	run nf manifest check a.tar.manifest.json --root root
	status_is 0
	[[ "$output" == *"0 differences"* ]]
}

@test "drift: added, removed, content, mode, owner, target; exit 3" {
	make_tree root
	nf pack root -o a.tar -q
	echo new >root/etc/new
	rm root/a-b/c
	echo changed >>root/etc/passwd
	chmod 0600 root/usr/bin/tool
	ln -sfn elsewhere root/lib
	if [ "$(id -u)" = 0 ]; then chown 7:7 root/etc/shadow; fi
	run nf manifest check a.tar.manifest.json --root root
	status_is 3
	[[ "$output" == *"added    etc/new"* ]]
	[[ "$output" == *"removed  a-b/c"* ]]
	[[ "$output" == *"content  etc/passwd"* ]]
	[[ "$output" == *'mode     usr/bin/tool: "0755" -> "0600"'* ]]
	[[ "$output" == *'target   lib: "usr/lib" -> "elsewhere"'* ]]
	if [ "$(id -u)" = 0 ]; then
		[[ "$output" == *'owner    etc/shadow: "42:43" -> "7:7"'* ]]
	fi
	run nf --json manifest check a.tar.manifest.json --root root
	status_is 3
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
ch = {(c["change"], c["path"]) for c in d["drift"]}
assert ("added", "etc/new") in ch and ("removed", "a-b/c") in ch, ch
assert d["count"] == len(d["drift"])'
}

@test "drift names a file's control bytes escaped; --json keeps the name" {
	make_tree root
	nf pack root -o a.tar -q
	printf x > root/etc/$'evil\x1b[2J\rname'
	run nf manifest check a.tar.manifest.json --root root
	status_is 3
	[[ "$output" == *'added    etc/evil\x1b[2J\x0dname'* ]]
	if printf '%s' "$output" | LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]'; then
		printf '%s' "$output" | od -c >&2
		return 1
	fi
	run nf --json manifest check a.tar.manifest.json --root root
	status_is 3
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert ("added", "etc/evil\x1b[2J\rname") in {(c["change"], c["path"]) for c in d["drift"]}, d'
}

@test "same-size content change is found by sha256" {
	mkdir root
	echo aaaa >root/f
	nf pack root -o a.tar -q
	echo bbbb >root/f
	run nf manifest check a.tar.manifest.json --root root
	status_is 3
	[[ "$output" == *"content  f"* ]]
}

@test "diff of two manifests: text and --json; identical is exit 0" {
	make_tree root
	nf pack root -o a.tar -q
	run nf diff a.tar.manifest.json a.tar.manifest.json
	status_is 0
	echo v2 >root/etc/version
	echo changed >>root/etc/passwd
	rm root/usr/bin/ping
	nf pack root -o b.tar -q
	run nf diff a.tar.manifest.json b.tar.manifest.json
	status_is 3
	[[ "${lines[0]}" == "content  etc/passwd"* ]]
	[[ "$output" == *"added    etc/version"* ]]
	[[ "$output" == *"removed  usr/bin/ping"* ]]
	[[ "$output" == *"3 changes"* ]]
	run nf --json diff a.tar.manifest.json b.tar.manifest.json
	status_is 3
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert [c["path"] for c in d["changes"]] == ["etc/passwd", "etc/version", "usr/bin/ping"], d
assert d["changes"][1] == {"change": "added", "path": "etc/version", "seen": "file"}'
}

@test "a malformed manifest is a clear error" {
	echo '{"nodeforge_manifest":1,"entries":[{"path":"a","type":"file"}]}' >bad.json
	run nf diff bad.json bad.json
	status_is 1
	[[ "$output" == *"cannot read manifest 'bad.json': manifest entry 0"* ]]
	echo '{' >worse.json
	run nf manifest check worse.json --root .
	status_is 1
	[[ "$output" == *"cannot read manifest 'worse.json'"* ]]
}

@test "drift: extended attributes added or removed" {
	mkdir root
	echo a >root/f
	setfattr -n user.x -v 1 root/f 2>/dev/null || skip "no user xattrs here"
	nf pack root -o a.tar -q
	run nf manifest check a.tar.manifest.json --root root
	status_is 0
	setfattr -x user.x root/f
	setfattr -n user.y -v 1 root/f
	run nf manifest check a.tar.manifest.json --root root
	status_is 3
	[[ "$output" == *'xattrs   f: ["user.x"] -> ["user.y"]'* ]]
}
