#!/usr/bin/env bats
# make install: the installed binary finds its shipped profiles.
load helper

@test "make install into a staging dir gives a working nodeforge" {
	make -s -C "$NF_SRCDIR" install DESTDIR="$SCRATCH/stage" PREFIX=/opt/nf >/dev/null
	[ -x "$SCRATCH/stage/opt/nf/bin/nodeforge" ]
	[ -f "$SCRATCH/stage/opt/nf/share/nodeforge/profiles/compute.yaml" ]
	[ -f "$SCRATCH/stage/opt/nf/share/man/man1/nodeforge-verify.1" ]
	run "$SCRATCH/stage/opt/nf/bin/nodeforge" profile show compute --args
	status_is 0
	[[ "$output" == *"cgroup_memory=1"* ]]
}

@test "make install: man pages, bash completion and a serve unit systemd accepts" {
	make -s -C "$NF_SRCDIR" install DESTDIR="$SCRATCH/stage" PREFIX=/opt/nf >/dev/null
	local s=$SCRATCH/stage/opt/nf
	[ -f "$s/share/man/man1/nodeforge.1" ]
	[ -f "$s/share/bash-completion/completions/nodeforge" ]
	u=$s/lib/systemd/system/nodeforge-serve.service
	grep -q '^ExecStart=/opt/nf/bin/nodeforge -q serve ' "$u"
	command -v systemd-analyze >/dev/null || skip "systemd-analyze not installed"
	# verified where the staged binary really is
	sed "s,/opt/nf/bin/nodeforge,$s/bin/nodeforge," "$u" > "$SCRATCH/nodeforge-serve.service"
	# (its man page is staged, not on MANPATH)
	run systemd-analyze verify --man=no "$SCRATCH/nodeforge-serve.service"
	echo "$output"
	[[ "$output" != *"nodeforge-serve.service:"* ]]
}

@test "the serve unit is hardened: systemd-analyze security --offline rates it <= 4.0" {
	make -s -C "$NF_SRCDIR" install DESTDIR="$SCRATCH/stage" PREFIX=/opt/nf >/dev/null
	local s=$SCRATCH/stage/opt/nf
	command -v systemd-analyze >/dev/null || skip "systemd-analyze not installed"
	sed "s,/opt/nf/bin/nodeforge,$s/bin/nodeforge," \
		"$s/lib/systemd/system/nodeforge-serve.service" > "$SCRATCH/nodeforge-serve.service"
	grep -qx 'LimitNOFILE=65536' "$SCRATCH/nodeforge-serve.service"
	run systemd-analyze security --offline=true --no-pager "$SCRATCH/nodeforge-serve.service"
	echo "$output"
	score=$(sed -n 's/.*Overall exposure level for nodeforge-serve.service: \([0-9.]*\).*/\1/p' <<<"$output")
	[ -n "$score" ]
	awk -v s="$score" 'BEGIN { exit !(s <= 4.0) }'
	# not as root: the analysis finds a user of its own
	user=$(grep -E '^[^[:space:]]+ +User=/DynamicUser=' <<<"$output")
	echo "$user"
	# (a pass is marked '✓' on a terminal, '+' elsewhere)
	[[ "$user" == "✓ "* || "$user" == "+ "* ]]
	[[ "$user" == *"non-root user"* ]]
}

@test "the serve unit runs as the user sysusers.d creates, with its state and the munge key as a credential" {
	make -s -C "$NF_SRCDIR" install DESTDIR="$SCRATCH/stage" PREFIX=/opt/nf >/dev/null
	local s=$SCRATCH/stage/opt/nf
	u=$s/lib/systemd/system/nodeforge-serve.service
	grep -qx 'User=nodeforge' "$u"
	grep -qx 'StateDirectory=nodeforge' "$u"
	grep -qx 'StateDirectoryMode=0700' "$u"
	grep -qx 'LoadCredential=munge.key:/etc/nodeforge/secrets/munge.key' "$u"
	grep -qx 'AmbientCapabilities=CAP_NET_BIND_SERVICE' "$u"
	# the user the unit names is the one the package creates
	grep -qE '^u nodeforge - .* /var/lib/nodeforge$' "$s/lib/sysusers.d/nodeforge.conf"
	command -v systemd-sysusers >/dev/null || skip "systemd-sysusers not installed"
	mkdir -p "$SCRATCH/root/etc"
	systemd-sysusers --root="$SCRATCH/root" "$s/lib/sysusers.d/nodeforge.conf"
	grep -q '^nodeforge:x:[0-9]*:[0-9]*:nodeforge boot server:/var/lib/nodeforge:' "$SCRATCH/root/etc/passwd"
}

@test "bash completion: commands, a command's options, roles from -C, node names from the inventory" {
	PATH=$(dirname "$NF_BIN"):$PATH
	# shellcheck disable=SC1091
	source "$NF_SRCDIR/dist/nodeforge.bash"
	[ "$(comp nodeforge veri)" = verify ]
	comp nodeforge verify --ro | grep -qx -- --role
	comp nodeforge verify --ro | grep -qx -- --root
	[ "$(comp nodeforge build co | sort | paste -sd' ')" = "compute controller" ]
	[ "$(comp nodeforge -C "$FIXTURES/boot/profiles" build '' | sort | paste -sd' ')" = "compute controller login" ]
	[ "$(comp nodeforge status -i "$NF_SRCDIR/examples/racks.yaml" gpu-0 | paste -sd' ')" = "gpu-01 gpu-02 gpu-03 gpu-04" ]
	[ "$(comp nodeforge verify --role lo)" = login ]
}

@test "packages: VERSION, debian/changelog and dist/nodeforge.spec name one version" {
	v=$(cat "$NF_SRCDIR/VERSION")
	[ -n "$v" ]
	deb=$(sed -n '1s/^nodeforge (\([^)]*\)).*/\1/p' "$NF_SRCDIR/debian/changelog")
	rpm=$(awk '$1 == "Version:" { print $2 }' "$NF_SRCDIR/dist/nodeforge.spec")
	echo "VERSION=$v changelog=$deb spec=$rpm"
	[ "$deb" = "$v" ]
	[ "$rpm" = "$v" ]
	run nf version
	[[ "$output" == "nodeforge $v (commit "* ]]
}
