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

# containers.nvidia: on a GPU node, enroot's NVIDIA hook can run what it
# runs for every container that sets NVIDIA_VISIBLE_DEVICES (the
# fixture's stand-ins: the hook, nvidia-container-cli as a glibc-linked
# ELF header, its library and libcuda as links to versioned files)
@test "containers.nvidia: the hook, nvidia-container-cli, its library and libcuda.so.1 pass" {
	vfx pass
	vrun --json
	[ "$(verdict_of containers.nvidia)" = "pass the hook, /usr/bin/nvidia-container-cli, libnvidia-container.so.1 in /usr/lib/x86_64-linux-gnu, libcuda.so.1 in /usr/lib/x86_64-linux-gnu" ]
}

@test "containers.nvidia: a GPU node without nvidia-container-cli or libcuda.so.1 fails, naming each; the remedy rebuilds" {
	vfx pass
	rm "$SYS/usr/bin/nvidia-container-cli" "$SYS/usr/lib/x86_64-linux-gnu/libcuda.so.550.163.01"
	vrun --json
	status_is 3
	[ "$(verdict_of containers.nvidia)" = "fail no nvidia-container-cli in /usr/bin or /usr/local/bin; no libcuda.so.1" ]
	echo "$output" | jq -e '.checks[] | select(.id == "containers.nvidia") | .remedy | test("nodeforge build compute .*nvidia-container.yaml")'
}

@test "containers.nvidia: a hook that cannot be executed, or a CLI whose loader the image lacks, fails" {
	vfx pass
	chmod 0644 "$SYS/etc/enroot/hooks.d/98-nvidia.sh"
	rm "$SYS/lib64/ld-linux-x86-64.so.2"
	vrun --json
	[ "$(verdict_of containers.nvidia)" = "fail /etc/enroot/hooks.d/98-nvidia.sh is not executable; /usr/bin/nvidia-container-cli needs /lib64/ld-linux-x86-64.so.2, which the image lacks" ]
}

@test "containers.nvidia: a node whose profile has no GPUs skips it" {
	vfx pass
	rm "$SYS/usr/bin/nvidia-container-cli"
	jq 'del(.gpu)' "$SYS/etc/nodeforge/profile.json" > "$SYS/p.json"
	mv "$SYS/p.json" "$SYS/etc/nodeforge/profile.json"
	vrun --json
	[ "$(verdict_of containers.nvidia)" = "skip the profile has no GPUs" ]
}
