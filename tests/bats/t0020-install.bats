#!/usr/bin/env bats
# make install: the installed binary finds its shipped profiles.
load helper

@test "make install into a staging dir gives a working nodeforge" {
	make -s -C "$NF_SRCDIR" install DESTDIR="$SCRATCH/stage" PREFIX=/opt/nf >/dev/null
	[ -x "$SCRATCH/stage/opt/nf/bin/nodeforge" ]
	[ -f "$SCRATCH/stage/opt/nf/share/nodeforge/profiles/compute.yaml" ]
	run "$SCRATCH/stage/opt/nf/bin/nodeforge" profile show compute --args
	status_is 0
	[[ "$output" == *"cgroup_memory=1"* ]]
}
