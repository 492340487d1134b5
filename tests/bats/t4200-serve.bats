#!/usr/bin/env bats
# nodeforge serve: static tree, Range/ETag/HEAD, traversal, API.
load helper

setup() {
	nf_setup
	cp "$NF_SRCDIR/examples/racks.yaml" .
	nf -C "$FIXTURES/boot/profiles" pxe -i racks.yaml -o tree -u http://10.0.0.1:8080 \
		--images "$FIXTURES/boot/out" --network 10.0.0.0/16 \
		--kernel-args compute=quiet --kernel-args controller=quiet \
		--kernel-args login=quiet >/dev/null
	: > serve.log # the background job opens it only when it gets to run
	"$NF_BIN" serve --tree tree --listen 127.0.0.1:0 --state state --threads 2 \
		--trusted-proxy 127.0.0.1 > serve.log 2>&1 3>&- &
	SERVE_PID=$!
	nf_wait_url serve.log
	K=$(python3 -c 'import json;print(json.load(open("tree/nodes.json"))["roles"]["compute"]["kernel"])')
}

teardown() {
	[ -n "${SERVE_PID:-}" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
	nf_teardown
}

code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

@test "serves files with type, length, ETag; HEAD has no body" {
	run curl -sf -D headers "$U/ipxe/boot.ipxe"
	status_is 0
	[ "$output" = "$(cat tree/ipxe/boot.ipxe)" ]
	grep -qi '^Content-Type: text/plain' headers
	grep -qi "^Content-Length: $(stat -c %s tree/ipxe/boot.ipxe)" headers
	grep -qi '^ETag: "' headers
	run curl -sf -I "$U/images/compute/$K"
	status_is 0
	# small files: the content's sha256; large ones: the hash in their name
	[[ "$output" == *"ETag: \"$(sha256sum "tree/images/compute/$K" | cut -c1-32)\""* ]]
	[[ "$output" == *"Content-Length: $(stat -c %s "tree/images/compute/$K")"* ]]
	[ "$(curl -s -X HEAD "$U/ipxe/boot.ipxe" --max-time 2 | wc -c)" -eq 0 ]
	grep -q '"HEAD /images/compute/'"$K"'" 200' serve.log
}

@test "Range, If-None-Match and 416" {
	run curl -s -r 2-5 -D h "$U/images/compute/$K"
	[ "$output" = "$(head -c 6 "tree/images/compute/$K" | tail -c 4)" ]
	grep -q '^HTTP/1.1 206' h
	grep -qi "^Content-Range: bytes 2-5/$(stat -c %s "tree/images/compute/$K")" h
	run curl -s -r -3 "$U/images/compute/$K"
	[ "$output" = "$(tail -c 3 "tree/images/compute/$K")" ]
	[ "$(code -r 1000-2000 "$U/images/compute/$K")" = 416 ]
	etag=$(curl -sI "$U/ipxe/boot.ipxe" | sed -n 's/^ETag: //Ip' | tr -d '\r')
	[ "$(code -H "If-None-Match: $etag" "$U/ipxe/boot.ipxe")" = 304 ]
}

@test "large files go out whole and in ranges, ETag from their name's hash" {
	head -c 3000000 /dev/urandom > tree/images/compute/compute-0123456789abcdef.rootfs.tar.zst
	f=tree/images/compute/compute-0123456789abcdef.rootfs.tar.zst
	curl -sf -D h -o got "$U/images/compute/${f##*/}"
	cmp got "$f"
	grep -qi '^ETag: "0123456789abcdef"' h
	grep -qi '^Content-Type: application/zstd' h
	curl -sf -r 1000000-1999999 -o part "$U/images/compute/${f##*/}"
	cmp part <(tail -c +1000001 "$f" | head -c 1000000)
	curl -sf -r 2999990- -o tailpart "$U/images/compute/${f##*/}"
	[ "$(stat -c %s tailpart)" -eq 10 ]
}

@test "path traversal, hidden files, symlinks and directories are refused" {
	echo secret > outside
	ln -s ../outside tree/ipxe/link.ipxe
	echo x > tree/ipxe/.hidden
	[ "$(code --path-as-is "$U/../outside")" = 404 ]
	[ "$(code --path-as-is "$U/ipxe/../../outside")" = 404 ]
	[ "$(code "$U/%2e%2e/outside")" = 404 ]
	[ "$(code "$U/ipxe/link.ipxe")" = 404 ]
	[ "$(code "$U/ipxe/.hidden")" = 404 ]
	[ "$(code "$U/ipxe")" = 404 ]
	[ "$(code "$U/")" = 404 ]
	[ "$(code -X DELETE "$U/ipxe/boot.ipxe")" = 405 ]
	[ "$(code "$U/$(head -c 2000 /dev/zero | tr '\0' a)")" = 414 ]
	[ "$(code -H "X-Big: $(head -c 70000 /dev/zero | tr '\0' a)" "$U/ipxe/boot.ipxe")" != 200 ]
}

@test "fetching a per-MAC script marks the node booting" {
	[ "$(code "$U/ipxe/mac/52-54-00-00-01-02.ipxe")" = 200 ]
	run curl -sf "$U/api/v1/nodes"
	status_is 0
	echo "$output" | python3 -c '
import json, sys
d = {n["name"]: n for n in json.load(sys.stdin)["nodes"]}
assert d["gpu-02"]["state"] == "booting", d["gpu-02"]
assert d["gpu-02"]["image"].startswith("compute@"), d["gpu-02"]
assert d["gpu-01"]["state"] == "not seen"
assert len(d) == 6'
}

@test "verdicts are validated, size-capped and stored atomically" {
	v='{"node":"gpu-03","result":"fail","image":"compute-abc","root_causes":[{"id":"gpu.count","message":"expected 8, seen 0"}]}'
	run curl -sf -X POST -H 'Content-Type: application/json' -d "$v" "$U/api/v1/nodes/gpu-03/verdict"
	status_is 0
	python3 -c 'import json; d=json.load(open("state/nodes/gpu-03.json")); assert d["state"] == "failed" and d["root_cause"] == "gpu.count: expected 8, seen 0", d'
	run curl -sf "$U/api/v1/nodes/gpu-03"
	[[ "$output" == *'"state":"failed"'* ]]
	[[ "$output" == *'"verdict":{'* ]]
	[ "$(code -X POST -d '{"result":"pass"}' "$U/api/v1/nodes/gpu-04/verdict")" = 200 ]
	[[ "$(curl -s "$U/api/v1/nodes")" == *'"name":"gpu-04","rack":"r01","result":"pass","role":"compute","state":"verified"'* ]]
	[ "$(code -X POST -d '{"result":"maybe"}' "$U/api/v1/nodes/gpu-03/verdict")" = 400 ]
	[ "$(code -X POST -d '{"result":' "$U/api/v1/nodes/gpu-03/verdict")" = 400 ]
	[ "$(code -X POST -d '{"result":"pass","node":"gpu-01"}' "$U/api/v1/nodes/gpu-03/verdict")" = 400 ]
	[ "$(code -X POST -d '{"result":"pass"}' "$U/api/v1/nodes/nope-99/verdict")" = 404 ]
	[ "$(code -X POST -d '{"result":"pass"}' "$U/api/v1/nodes/..%2Fx/verdict")" = 404 ]
	head -c 70000 /dev/zero | tr '\0' ' ' > big
	[ "$(code -X POST --data-binary @big "$U/api/v1/nodes/gpu-03/verdict")" = 413 ]
	[ "$(code -X POST -H 'Transfer-Encoding: chunked' --data-binary @big "$U/api/v1/nodes/gpu-03/verdict")" = 413 ]
	[ "$(code "$U/api/v1/nodes/gpu-03/verdict")" = 405 ]
	! ls state/nodes | grep -q tmp
	# still the failed verdict
	python3 -c 'import json; d=json.load(open("state/nodes/gpu-03.json")); assert d["state"] == "failed"'
}

@test "a verdict behind the boot server's nginx counts only from the node's own address (X-Real-IP)" {
	ip=$(jq -r '.nodes[] | select(.name == "gpu-03") | .ip' tree/nodes.json)
	[ -n "$ip" ] && [ "$ip" != null ]
	# another machine reporting for gpu-03: refused, nothing stored
	[ "$(code -X POST -H 'X-Real-IP: 10.9.9.9' -d '{"result":"pass"}' "$U/api/v1/nodes/gpu-03/verdict")" = 403 ]
	run curl -s -X POST -H 'X-Real-IP: 10.9.9.9' -d '{"result":"pass"}' "$U/api/v1/nodes/gpu-03/verdict"
	[[ "$output" == *"verdict for 'gpu-03' from 10.9.9.9, not its inventory address $ip"* ]]
	[ ! -e state/nodes/gpu-03.json ]
	# gpu-03 itself
	[ "$(code -X POST -H "X-Real-IP: $ip" -d '{"result":"pass"}' "$U/api/v1/nodes/gpu-03/verdict")" = 200 ]
	# a header that is not an address is ignored: the boot server itself
	[ "$(code -X POST -H 'X-Real-IP: gpu-03' -d '{"result":"pass"}' "$U/api/v1/nodes/gpu-03/verdict")" = 200 ]
}

@test "unknown MACs are recorded; state survives a restart" {
	[ "$(code "$U/api/v1/unknown/52-54-00-99-99-99")" = 200 ]
	[ "$(code "$U/api/v1/unknown/zz")" = 400 ]
	[ "$(curl -s "$U/api/v1/nodes" | jq -r '.unknown[0].mac + " " + .unknown[0].from')" = "52:54:00:99:99:99 127.0.0.1" ]
	curl -sf -X POST -d '{"result":"pass"}' "$U/api/v1/nodes/ctl-01/verdict" >/dev/null
	kill "$SERVE_PID"; wait "$SERVE_PID" || true
	: > serve2.log
	"$NF_BIN" serve --tree tree --listen 127.0.0.1:0 --state state > serve2.log 2>&1 3>&- &
	SERVE_PID=$!
	nf_wait_url serve2.log
	[[ "$(curl -s "$U/api/v1/nodes/ctl-01")" == *'"state":"verified"'* ]]
}

@test "one address cannot flood the unknown-MAC table: 16 new MACs per 10 minutes each" {
	for i in $(seq 0 60); do
		code "$U/api/v1/unknown/52-54-00-aa-00-$(printf %02x "$i")" >/dev/null
	done
	[ "$(curl -s "$U/api/v1/nodes" | jq '.unknown | length')" = 16 ]
	# a new machine asks from its own address: still recorded
	[ "$(curl -s -o /dev/null -w '%{http_code}' --interface 127.0.0.9 "$U/api/v1/unknown/52-54-00-bb-00-01")" = 200 ]
	curl -s "$U/api/v1/nodes" | jq -e '.unknown[] | select(.mac == "52:54:00:bb:00:01" and .from == "127.0.0.9")' >/dev/null
	# a MAC already recorded is seen again, whatever the budget
	[ "$(code "$U/api/v1/unknown/52-54-00-aa-00-00")" = 200 ]
	[ "$(curl -s "$U/api/v1/nodes" | jq '.unknown | length')" = 17 ]
}

@test "bad listen address and missing tree fail clearly" {
	run nf serve --tree tree --listen nope
	status_is 2
	[[ "$output" == *"invalid listen address 'nope'"* ]]
	run nf serve --tree missing --listen 127.0.0.1:0
	status_is 1
	[ "$output" = "nodeforge serve: --tree 'missing': no such directory" ]
	run nf serve
	status_is 2
}

@test "refuses a private file linked into the tree and one only its owner may read" {
	echo 'root:$6$secret' > shadow
	chmod 0400 shadow
	ln shadow tree/ipxe/shadow
	[ "$(code "$U/ipxe/shadow")" = 403 ]
	# one link but not world-readable: root would read it, its owner meant not
	cp tree/ipxe/boot.ipxe tree/ipxe/private
	chmod 0600 tree/ipxe/private
	[ "$(code "$U/ipxe/private")" = 403 ]
	# world-readable but linked elsewhere too
	cp tree/ipxe/boot.ipxe tree/ipxe/twice
	chmod 0644 tree/ipxe/twice
	ln tree/ipxe/twice other-link
	[ "$(code "$U/ipxe/twice")" = 403 ]
	grep -q '"GET /ipxe/shadow" 403' serve.log
	rm other-link
	[ "$(code "$U/ipxe/twice")" = 200 ]
	[ "$(code "$U/ipxe/boot.ipxe")" = 200 ]
}

@test "unknown MACs expire after 7 days; a full table replaces the one seen longest ago and status says so" {
	kill "$SERVE_PID"; wait "$SERVE_PID" || true
	python3 - <<'PY'
import json, os, time
def iso(t): return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
now = time.time()
os.makedirs("state/unknown", exist_ok=True)
def put(i, seen):
    mac = "52:54:01:%02x:%02x:%02x" % (i >> 16, (i >> 8) & 255, i & 255)
    with open("state/unknown/%s.json" % mac.replace(":", "-"), "w") as f:
        json.dump({"mac": mac, "first_seen": iso(seen), "seen_at": iso(seen), "from": "10.9.0.1"}, f)
put(0, now - 8 * 86400)           # expired
for i in range(1, 4096):          # 4095 live, the oldest is 1
    put(i, now - 6 * 86400 + i)
PY
	nf_serve_bg --tree tree --state state
	[ ! -e state/unknown/52-54-01-00-00-00.json ]
	[ "$(curl -s "$U/api/v1/nodes" | jq -c '[(.unknown | length), .unknown_full]')" = '[4095,false]' ]
	run nf status --server "$U" --unknown
	[[ "$output" != *"is full"* ]]
	code "$U/api/v1/unknown/52-54-00-cc-00-01" >/dev/null
	run nf status --server "$U" --unknown
	[[ "$output" == *"4096 unknown machine(s)"* ]]
	[[ "$output" == *"the server's table of unknown machines is full (4096): a new one replaces the one seen longest ago"* ]]
	nf status --server "$U" --unknown --json | jq -e '.unknown_full == true and .unknown_count == 4096' >/dev/null
	# a full table still takes a new machine, in place of the oldest
	[ -e state/unknown/52-54-01-00-00-01.json ]
	[ "$(code --interface 127.0.0.9 "$U/api/v1/unknown/52-54-00-cc-00-02")" = 200 ]
	curl -s "$U/api/v1/nodes" > nodes.json
	jq -e '(.unknown | length) == 4096 and ([.unknown[].mac] | index("52:54:00:cc:00:02") != null) and ([.unknown[].mac] | index("52:54:01:00:00:01") == null)' nodes.json >/dev/null
	[ ! -e state/unknown/52-54-01-00-00-01.json ]
	[ -e state/unknown/52-54-00-cc-00-02.json ]
}

@test "an unknown MAC seen again is written again when its record is an hour old, so expiry counts from it" {
	kill "$SERVE_PID"; wait "$SERVE_PID" || true
	mkdir -p state/unknown
	old=$(date -u -d '-2 hours' +%Y-%m-%dT%H:%M:%SZ)
	echo "{\"mac\":\"52:54:00:dd:00:01\",\"first_seen\":\"$old\",\"seen_at\":\"$old\",\"from\":\"10.9.0.1\"}" \
		> state/unknown/52-54-00-dd-00-01.json
	nf_serve_bg --tree tree --state state
	[ "$(code "$U/api/v1/unknown/52-54-00-dd-00-01")" = 200 ]
	[ "$(jq -r .first_seen state/unknown/52-54-00-dd-00-01.json)" = "$old" ]
	seen=$(jq -r .seen_at state/unknown/52-54-00-dd-00-01.json)
	[ "$seen" != "$old" ]
	# seen again at once: kept in memory, the file is not rewritten
	ino=$(stat -c %i state/unknown/52-54-00-dd-00-01.json)
	[ "$(code "$U/api/v1/unknown/52-54-00-dd-00-01")" = 200 ]
	[ "$(stat -c %i state/unknown/52-54-00-dd-00-01.json)" = "$ino" ]
}
