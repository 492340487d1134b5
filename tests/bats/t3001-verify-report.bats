#!/usr/bin/env bats
# The text report of a failing node: root causes at the top level, the
# failures that follow from them folded under them, every line within the
# terminal's width, remedies that still work as pasted when wrapped, colour
# only on a terminal.  The node is a fixture sysroot of a compute node on a
# host without GPUs, a kernel command line lacking the profile's arguments
# (so no 1G hugepages and THP left on) and an init that is not systemd.
load verify_helper

setup() {
	nf_setup
	vfx fail-kernel
	jq '.nvml = null' "$SYS/fixture.json" > "$SCRATCH/f.json" && mv "$SCRATCH/f.json" "$SYS/fixture.json"
	echo 0 > "$SYS/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages"
	echo 'always [madvise] never' > "$SYS/sys/kernel/mm/transparent_hugepage/enabled"
	mkdir -p "$SYS/proc/1"
	echo bash > "$SYS/proc/1/comm"
}

@test "report: root causes at the top level, their consequences folded under them, 80 columns" {
	COLUMNS=80 vrun
	status_is 3
	echo "$output" > report.txt
	# every line fits
	awk 'length($0) > 80 { print "too wide: " $0; bad = 1 } END { exit bad }' report.txt
	# the top-level lines are exactly the JSON root causes, in order
	grep -oE '^(FAIL|HUNG) [a-z_.]+' report.txt | cut -d' ' -f2 > top
	vrun --json
	echo "$output" | jq -r '.root_causes[].id' > roots
	diff top roots
	grep -qx 'kernel.cmdline.running' roots
	grep -qx 'gpu.driver' roots
	grep -qx 'system.init' roots
	# hugepages and THP follow from the missing kernel arguments
	! grep -qx 'memory.hugepages' roots
	! grep -qx 'memory.thp' roots
	[ "$(verdict_of memory.hugepages | cut -d' ' -f1)" = fail ]
	[ "$(echo "$output" | jq -r '.checks[] | select(.id == "memory.hugepages") | .cause')" = kernel.cmdline.running ]
	awk '/^FAIL kernel.cmdline.running/ { on = 1; next } /^[A-Z]/ { on = 0 } on' report.txt > under
	grep -q 'also: .*memory.hugepages.*memory.thp.* failed' under
	[[ "$(cat report.txt)" == *"more failure"*"follow"*"from them (-v shows every check)"* ]]
	[[ "${lines[-1]}" != *PASS* ]]
}

@test "report: a wrapped remedy is the same command once pasted" {
	COLUMNS=60 vrun
	echo "$output" > report.txt
	vrun --json
	echo "$output" > report.json
	python3 - report.txt report.json <<'PY'
import json, sys
text = open(sys.argv[1]).read().splitlines()
checks = {c["id"]: c for c in json.load(open(sys.argv[2]))["checks"]}
n = 0
for i, line in enumerate(text):
    if not line.startswith("FAIL "):
        continue
    cid = line.split()[1].rstrip(":")
    j = i + 1
    while j < len(text) and not text[j].lstrip().startswith("->"):
        if not text[j].startswith(" "):
            break
        j += 1
    if j >= len(text) or not text[j].lstrip().startswith("->"):
        continue
    parts = [text[j].lstrip()[3:]]
    while parts[-1].endswith(" \\") or (j + 1 < len(text) and text[j + 1].lstrip().startswith("# ") and "#" in "".join(parts)):
        j += 1
        nxt = text[j].strip()
        if parts[-1].endswith(" \\"):
            parts[-1] = parts[-1][:-2]
            parts.append(nxt)
        else:
            parts.append(nxt[2:])
    joined = " ".join(parts)
    want = checks[cid].get("remedy")
    assert joined == want, (cid, joined, want)
    n += 1
assert n >= 3, n
print("remedies checked:", n)
PY
}

@test "report: -v shows every check; colour only on a terminal and never with NO_COLOR" {
	vrun -v
	status_is 3
	[[ "$output" == *"PASS "* ]]
	[[ "$output" == *"FAIL memory.hugepages: "*"[follows from kernel.cmdline.running]"* ]]
	vrun
	[[ "$output" != *$'\033'* ]]
	command -v script >/dev/null || skip "script (util-linux) not installed"
	script -qec "$NF_BIN verify --sysroot $SYS --fixture $SYS/fixture.json" /dev/null > tty.out || true
	grep -q $'\033\\[1;31mFAIL' tty.out
	NO_COLOR=1 script -qec "$NF_BIN verify --sysroot $SYS --fixture $SYS/fixture.json" /dev/null > tty2.out || true
	! grep -q $'\033' tty2.out
	grep -q 'FAIL kernel.cmdline.running' tty2.out
}

@test "report: a node with no boot loader configuration still fits 60 columns (long argument lists are named, not quoted)" {
	rm -f "$SYS/etc/default/grub" "$SYS/etc/kernel/cmdline"
	COLUMNS=60 vrun
	status_is 3
	echo "$output" | awk 'length($0) > 60 { print "too wide: " $0; bad = 1 } END { exit bad }'
	[[ "$output" == *"nodeforge profile show compute"*"--args"* ]]
}
