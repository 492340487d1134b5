#!/usr/bin/env bats
# containers.enroot.conf and containers.pyxis.args: the enroot settings and
# the pyxis arguments the profile sets hold on the node, read where enroot
# (enroot.conf, then enroot.conf.d/*.conf, the first value winning) and
# slurmstepd (plugstack.conf, plugstack.conf.d) read them.  The passing
# fixture sysroot holds the files the build writes (tests/fixtures/apply/
# compute).
load verify_helper

ECONF=etc/enroot/enroot.conf
PYXIS=etc/slurm/plugstack.conf.d/pyxis.conf

@test "enroot.conf and the pyxis line as the build writes them pass" {
	vfx pass
	vrun --json
	status_is 0
	[ "$(verdict_of containers.enroot.conf)" = "pass 5 as the profile sets them" ]
	[ "$(verdict_of containers.pyxis.args)" = "pass container_scope=job sbatch_support=1" ]
}

@test "enroot.conf: a changed value fails, naming the key, its value and the profile's" {
	vfx pass
	sed -i 's#^ENROOT_TEMP_PATH .*#ENROOT_TEMP_PATH /var/tmp#' "$SYS/$ECONF"
	vrun --json
	status_is 3
	[ "$(verdict_of containers.enroot.conf)" = "fail ENROOT_TEMP_PATH is '/var/tmp' (the profile: '/run/enroot/tmp')" ]
	echo "$output" | jq -e '.checks[] | select(.id == "containers.enroot.conf") | .remedy | test("nodeforge build compute")'
}

@test "enroot.conf: a removed setting fails; a drop-in cannot override what enroot.conf sets first" {
	vfx pass
	sed -i '/^ENROOT_SQUASH_OPTIONS/d; s#^ENROOT_DATA_PATH .*#ENROOT_DATA_PATH=/run/enroot/data/user-$(id -u)#' "$SYS/$ECONF"
	mkdir -p "$SYS/$ECONF.d"
	printf 'ENROOT_DATA_PATH /tmp/shared\n' > "$SYS/$ECONF.d/10-site.conf"
	vrun --json
	[ "$(verdict_of containers.enroot.conf)" = "fail ENROOT_SQUASH_OPTIONS not set" ]
	# a drop-in that sets what enroot.conf lacks counts
	printf 'ENROOT_SQUASH_OPTIONS    -noI -noX -noF -noD -processors 16\n' > "$SYS/$ECONF.d/20-squash.conf"
	printf 'ENROOT_SQUASH_OPTIONS -comp zstd\n' > "$SYS/$ECONF.d/30-later.conf"
	vrun --json
	[ "$(verdict_of containers.enroot.conf)" = "pass 5 as the profile sets them" ]
}

@test "enroot.conf missing: every setting is named" {
	vfx pass
	rm "$SYS/$ECONF"
	vrun --json
	[[ "$(verdict_of containers.enroot.conf)" == "fail /etc/enroot/enroot.conf missing: ENROOT_CACHE_PATH not set, "* ]]
}

@test "pyxis line without an argument the profile gives fails, naming it" {
	vfx pass
	sed -i 's/ sbatch_support=1//' "$SYS/$PYXIS"
	vrun --json
	[ "$(verdict_of containers.pyxis.args)" = "fail 'container_scope=job', without sbatch_support=1" ]
	sed -i 's/container_scope=job/container_scope=global sbatch_support=1/' "$SYS/$PYXIS"
	vrun --json
	[ "$(verdict_of containers.pyxis.args)" = "fail 'container_scope=global sbatch_support=1', without container_scope=job" ]
}

@test "pyxis line in plugstack.conf itself, with the arguments in another order, passes; no line: skipped after plugstack" {
	vfx pass
	rm "$SYS/$PYXIS"
	echo "optional /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_pyxis.so   sbatch_support=1 container_scope=job  " \
		> "$SYS/etc/slurm/plugstack.conf"
	vrun --json
	[ "$(verdict_of containers.pyxis.args)" = "pass sbatch_support=1 container_scope=job" ]
	echo "# required /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_pyxis.so" > "$SYS/etc/slurm/plugstack.conf"
	vrun --json
	[ "$(verdict_of containers.pyxis.plugstack)" = "fail not listed" ]
	[[ "$(verdict_of containers.pyxis.args)" == "skip"* ]]
}

@test "the reference's own forms pass: KEY=\"quoted value\" and a pyxis line continued with backslashes" {
	vfx pass
	sed -i 's#^ENROOT_SQUASH_OPTIONS .*#ENROOT_SQUASH_OPTIONS="-noI -noX -noF -noD -processors 16"#' "$SYS/$ECONF"
	printf '%s\n' 'required /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_pyxis.so  \' \
		'    container_scope=job \' '    mount_home=1 \' '    sbatch_support=1' > "$SYS/$PYXIS"
	vrun --json
	[ "$(verdict_of containers.enroot.conf)" = "pass 5 as the profile sets them" ]
	[ "$(verdict_of containers.pyxis.args)" = "pass container_scope=job mount_home=1 sbatch_support=1" ]
	# the continuation ends where a line has no backslash
	printf '%s\n' 'required /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_pyxis.so container_scope=job' \
		'    sbatch_support=1' > "$SYS/$PYXIS"
	vrun --json
	[ "$(verdict_of containers.pyxis.args)" = "fail 'container_scope=job', without sbatch_support=1" ]
}
