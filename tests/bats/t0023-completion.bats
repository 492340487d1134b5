#!/usr/bin/env bats
# bash completion (dist/nodeforge.bash), driven through bash itself: the
# completion function runs with COMP_WORDS/COMP_CWORD set as bash sets them
# and COMPREPLY is what bash would offer.  Every candidate comes from the
# binary ('nodeforge __complete'): commands, subcommands, options, roles,
# node names, racks, states.
load helper

setup() {
	nf_setup
	mkdir bin
	ln -s "$NF_BIN" bin/nodeforge
	PATH=$SCRATCH/bin:$PATH
	export NODEFORGE_PROFILES=$FIXTURES/boot/profiles
	cp "$NF_SRCDIR/examples/racks.yaml" racks.yaml
	mkdir -p somedir/sub
	touch somefile
	# shellcheck source=/dev/null
	source "$NF_SRCDIR/dist/nodeforge.bash"
}

# the candidates, sorted, on one line
c() { comp nodeforge "$@" | sort | paste -sd' '; }

@test "completion: status NODE offers the inventory's nodes, never the footer's count" {
	[ "$(c status '')" = "ctl-01 gpu-01 gpu-02 gpu-03 gpu-04 login-01" ]
	[ "$(c status gpu-0)" = "gpu-01 gpu-02 gpu-03 gpu-04" ]
	[[ " $(c status '') " != *" 6 "* ]]
	[ "$(c power on '')" = "ctl-01 gpu-01 gpu-02 gpu-03 gpu-04 login-01" ]
	[ "$(c -C "$FIXTURES/boot/profiles" power cycle -i racks.yaml gp)" = "gpu-01 gpu-02 gpu-03 gpu-04" ]
	[ "$(c enroll --node ct)" = "ctl-01" ]
}

@test "completion: --state offers the states, --rack the racks, --role the roles, --server nothing" {
	[ "$(c status --state '')" = "booting failed not-seen verified" ]
	[ "$(c status --rack '')" = "r00 r01" ]
	[ "$(c status --role '')" = "compute controller login" ]
	[ "$(c status --server '')" = "" ]
	# keys rotate --state is a directory
	[ "$(c keys rotate --state som)" = "somedir" ]
}

@test "completion: -s and --site offer files, never commands" {
	[ "$(c -s some)" = "somedir somefile" ]
	[ "$(c --site somef)" = "somefile" ]
	[[ " $(c -s '') " != *" build "* ]]
	# after the site's value: the commands again
	[ "$(c -s somefile stat)" = "status" ]
}

@test "completion: enroll, keys, inventory, cluster offer their subcommands, not files" {
	[ "$(c enroll '')" = "answer list open rotate" ]
	[ "$(c keys '')" = "munge rotate signing" ]
	[ "$(c keys rotate '')" = "munge" ]
	[ "$(c inventory '')" = "show" ]
	[ "$(c cluster '')" = "fetch show" ]
	[ "$(c profile '')" = "list show" ]
	[ "$(c bootdev '')" = "disk pxe" ]
	[ "$(c enroll open '')" = "ctl-01 gpu-01 gpu-02 gpu-03 gpu-04 login-01" ]
}

@test "completion: lint and build offer the roles; -C names the profiles" {
	[ "$(c lint '')" = "compute controller login" ]
	[ "$(c lint compute '')" = "compute controller login" ]
	[ "$(c build co)" = "compute controller" ]
	[ "$(c build compute '')" = "" ]
	[ "$(c -C "$NF_SRCDIR/profiles" build '' | wc -w)" -eq "$(nf -C "$NF_SRCDIR/profiles" profile list | awk '$2 == "role"' | wc -l)" ]
	[ "$(c profile show con)" = "controller" ]
}

@test "completion: commands, options of the command, option values by kind" {
	[ "$(c veri)" = "verify" ]
	[[ " $(c '') " == *" status "* ]]
	[[ " $(c '') " != *" __complete "* ]]
	[ "$(c verify --ro)" = "--role --root" ]
	[ "$(c verify --no)" = "--no-pager" ]
	[ "$(c verify --root som)" = "somedir" ]
	[ "$(c pxe --out som)" = "somedir" ]
	[ "$(c ci --accel '')" = "kvm tcg" ]
	[ "$(c status --j)" = "--json" ]
	# __complete is hidden: not in --help
	run nf --help
	[[ "$output" != *__complete* ]]
}
