#!/usr/bin/env bats
# make test's schedule (tests/run-all.sh) with a stand-in make that logs
# each target it is asked for: the e2e files that use the images run
# beside the cluster, from its second boot wave on; the fuzz targets
# run beside it too; a failure in either fails the run after the
# cluster; the stage table names every stage.  And tests/bats-files.sh's
# NF_E2E_PART split, and tests/bats-part.sh's NF_BATS_PART split.
load helper

setup() {
	nf_setup
	# a part named by whatever runs this file (make test's asan stage
	# runs it with NF_BATS_PART=early) is not the one these tests name
	export NF_BATS_PART=early NF_E2E_PART=late
	mkdir -p t/tests t/bin cache/cluster
	cp "$NF_SRCDIR/tests/run-all.sh" t/tests/
	# the stand-in make: "TARGETS [NF_E2E_PART]" on a line of make.log
	# when a target starts and "end TARGETS" when it ends; the cluster
	# writes its second wave's line to timings.log as the real one does,
	# then waits for the late e2e to start (5 s at most); FAIL names a
	# target that exits 2
	cat > t/bin/make <<'EOF'
#!/bin/bash
t=$(printf '%s\n' "$@" | grep -v -e '^-j' -e = | paste -sd' ')
t="$t${NF_E2E_PART:+ $NF_E2E_PART}${NF_BATS_PART:+ $NF_BATS_PART}"
echo "$t" >> "$LOG"
case $t in
check-cluster)
	echo "2026-12-07T00:00:00Z tcg wave 1 (ctl-01 login-01): power-on -> verdicts: 1 s" >> "$NF_E2E_CACHE/cluster/timings.log"
	sleep 1
	echo "2026-12-07T00:00:01Z tcg wave 2 (cpu-01 cpu-02): power-on -> verdicts: 1 s" >> "$NF_E2E_CACHE/cluster/timings.log"
	for _ in $(seq 50); do grep -q '^check-e2e late$' "$LOG" && break; sleep 0.1; done ;;
esac
echo "end $t" >> "$LOG"
[ "$t" != "${FAIL:-}" ] || { echo "stand-in $t failed"; exit 2; }
EOF
	chmod +x t/bin/make
	export LOG=$SCRATCH/make.log NF_E2E_CACHE=$SCRATCH/cache MAKE=$SCRATCH/t/bin/make \
		BUILD=$SCRATCH/build
	# an older run's second wave is not this run's
	echo "2026-12-06T00:00:00Z tcg wave 2 (cpu-01 cpu-02): power-on -> verdicts: 1 s" > cache/cluster/timings.log
}

@test "run-all: the image e2e files start beside the cluster after its second wave; fuzz beside it; every stage in the table" {
	run t/tests/run-all.sh
	echo "$output"
	status_is 0
	all=$output
	# the late e2e files started while the cluster ran, after its wave 2
	run grep -n -e '^check-cluster$' -e '^check-e2e late$' -e '^end check-cluster$' "$LOG"
	[ "${#lines[@]}" = 3 ]
	[[ "${lines[0]}" == *:check-cluster ]]
	[[ "${lines[1]}" == *":check-e2e late" ]]
	[[ "${lines[2]}" == *":end check-cluster" ]]
	# the no-image e2e files before them, once; both split, never whole
	[ "$(grep -c '^check-e2e early$' "$LOG")" = 1 ]
	! grep -q '^check-e2e$' "$LOG"
	grep -q '^fuzz$' "$LOG"
	# the CLI tests under ASan: the first part in the foreground, before
	# the e2e files; the second beside the cluster
	[ "$(grep -c '^asan early$' "$LOG")" = 1 ]
	[ "$(grep -n '^end asan early$' "$LOG" | cut -d: -f1)" -lt "$(grep -n '^check-e2e early$' "$LOG" | cut -d: -f1)" ]
	cli=$(grep -n '^asan-bats late$' "$LOG" | cut -d: -f1)
	[ "$cli" -gt "$(grep -n '^end check-e2e early$' "$LOG" | cut -d: -f1)" ]
	[ "$cli" -lt "$(grep -n '^end check-cluster$' "$LOG" | cut -d: -f1)" ]
	! grep -q -e '^asan$' -e '^asan-bats$' "$LOG"
	# after the images, which the cluster waits for
	[ "$(grep -n '^end e2e-prebuild$' "$LOG" | cut -d: -f1)" -lt "$(grep -n '^check-cluster$' "$LOG" | cut -d: -f1)" ]
	table=$(sed -n '/^== stage times/,$p' <<< "$all")
	for s in build unit asan "packages (background)" "e2e (no image)" "images (background)" \
		 "prepare (background)" cluster "e2e (images, beside)" "fuzz (beside)" \
		 "asan CLI (beside)" total; do
		[[ "$table" == *"   $s "* ]] || { echo "no row '$s'"; return 1; }
	done
	[[ "$table" != *FAILED* ]]
}

@test "run-all: a failing fuzz target, image e2e file or second CLI part beside the cluster fails the run after it, its log shown" {
	local target row
	for target in "fuzz:fuzz (beside)" "check-e2e late:e2e (images, beside)" \
		      "asan-bats late:asan CLI (beside)"; do
		row=${target#*:} target=${target%%:*}
		: > "$LOG"
		FAIL=$target run t/tests/run-all.sh
		echo "$output"
		[ "$status" -ne 0 ]
		grep -q '^end check-cluster$' "$LOG"
		[[ "$output" == *"stand-in $target failed"* ]]
		[[ "$output" == *"$row"*"FAILED (exit 2)"* ]]
	done
	# the early part is a foreground stage: it stops the run before the
	# cluster
	: > "$LOG"
	FAIL="check-e2e early" run t/tests/run-all.sh
	echo "$output"
	[ "$status" -ne 0 ]
	! grep -q '^check-cluster$' "$LOG"
	[[ "$output" == *"e2e (no image)"*"FAILED (exit 2)"* ]]
}

@test "bats-files.sh: NF_E2E_PART=early runs the files without 'load images', late the others; another value is refused" {
	mkdir -p e2e
	printf '@test "a" { true; }\n' > e2e/t1-plain.bats
	printf 'load images\n@test "b" { true; }\n' > e2e/t2-images.bats
	printf '@test "c" { true; }\n' > e2e/t3-plain.bats
	: > e2e/images.bash
	run env NF_E2E_PART=early "$NF_SRCDIR/tests/bats-files.sh" e2e
	status_is 0
	[[ "$output" == *t1-plain.bats*t3-plain.bats* ]]
	[[ "$output" != *t2-images* ]]
	run env NF_E2E_PART=late "$NF_SRCDIR/tests/bats-files.sh" e2e
	status_is 0
	[[ "$output" == *t2-images.bats* ]]
	[[ "$output" != *plain* ]]
	run env -u NF_E2E_PART "$NF_SRCDIR/tests/bats-files.sh" e2e
	status_is 0
	[[ "$output" == *t1-plain.bats*t3-plain.bats*t2-images.bats* ]]
	run env NF_E2E_PART=middle "$NF_SRCDIR/tests/bats-files.sh" e2e
	status_is 2
	[[ "$output" == *"NF_E2E_PART is 'early', 'late' or unset, not 'middle'"* ]]
}

@test "bats-part.sh: NF_BATS_PART=late names the files marked to run beside the cluster, early the others; unset, the directory; another value is refused" {
	mkdir -p b
	printf '#!/usr/bin/env bats\n@test "a" { true; }\n' > b/t1.bats
	printf '#!/usr/bin/env bats\n# make test: beside the cluster\n@test "b" { true; }\n' > b/t2.bats
	printf '#!/usr/bin/env bats\n# not: # make test: beside the cluster\n@test "c" { true; }\n' > b/t3.bats
	run env NF_BATS_PART=early "$NF_SRCDIR/tests/bats-part.sh" b
	status_is 0
	[ "$output" = "$(printf 'b/t1.bats\nb/t3.bats')" ]
	run env NF_BATS_PART=late "$NF_SRCDIR/tests/bats-part.sh" b
	status_is 0
	[ "$output" = b/t2.bats ]
	run env -u NF_BATS_PART "$NF_SRCDIR/tests/bats-part.sh" b
	[ "$output" = b ]
	rm b/t2.bats
	run env NF_BATS_PART=late "$NF_SRCDIR/tests/bats-part.sh" b
	status_is 0
	[ -z "$output" ]
	run env NF_BATS_PART=middle "$NF_SRCDIR/tests/bats-part.sh" b
	status_is 2
	[[ "$output" == *"NF_BATS_PART is 'early', 'late' or unset, not 'middle'"* ]]
	# the shipped split: both parts, every file in one of them
	[ -n "$(NF_BATS_PART=late "$NF_SRCDIR/tests/bats-part.sh" "$NF_SRCDIR/tests/bats")" ]
	[ "$( { NF_BATS_PART=early "$NF_SRCDIR/tests/bats-part.sh" "$NF_SRCDIR/tests/bats"
		NF_BATS_PART=late "$NF_SRCDIR/tests/bats-part.sh" "$NF_SRCDIR/tests/bats"; } | sort)" = \
	  "$(ls "$NF_SRCDIR"/tests/bats/*.bats | sort)" ]
}
