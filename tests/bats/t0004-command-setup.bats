#!/usr/bin/env bats
# The setup each command's commands.def entry names (nodeforge __commands)
# is the setup it does: every command that reads the site stops on a broken
# one with its FILE:LINE:COL error and exit 3, every one that reads an
# inventory stops on a broken one the same way, and a command that reads
# either without its entry saying so fails here.
load helper

# How to bring each command that reads the site or an inventory to that
# point: its arguments, with the inventory as racks.yaml where it takes one
declare -gA RUN=(
	[profile]="profile show compute"
	[build]="build compute"
	[ci]="ci compute"
	[keys]="keys rotate munge -i racks.yaml"
	[inventory]="inventory show -i racks.yaml"
	[cluster]="cluster show -i racks.yaml"
	[pxe]="pxe -i racks.yaml --out tree --server http://127.0.0.1:9"
	[serve]="serve --tree tree -i racks.yaml --listen 127.0.0.1:0"
	[status]="status --timeout 1"
	[power]="power status gpu-01 -i racks.yaml"
	[bootdev]="bootdev pxe gpu-01 -i racks.yaml"
	[reimage]="reimage gpu-01 --image current --tree tree --images out -i racks.yaml"
	[enroll]="enroll list --enroll-state state -i racks.yaml"
)

setup() {
	nf_setup
	mkdir tree out state
	# the site and racks.yaml each valid, broken per test
	# whose boot server is nowhere (status asks it)
	sed 's|url: http://10.0.0.2:8080|url: http://127.0.0.1:9|' \
		"$NF_SRCDIR/profiles/site.yaml" > site.yaml
	grep -q 127.0.0.1:9 site.yaml
	printf 'gpu-01:\n  mac: "02:00:00:00:00:01"\n  ip: 10.0.0.11\n  role: compute\n' \
		> racks.yaml
	nf __commands > commands
}

# commands whose entry names the word $1 (site, site-if-present, inventory)
with() { awk -v w="$1" '{ for (i = 2; i <= NF; i++) if ($i == w) print $1 }' commands; }

@test "__commands lists every command, as --help does" {
	run nf --help
	status_is 0
	[ "$(awk '/^Commands:/ { on = 1; next } on && NF { print $1 }' <<<"$output" |
	     sed '/^Exit$/d')" = "$(cut -d' ' -f1 commands)" ]
}

@test "the commands that read the site or an inventory are those the table says" {
	local want
	want=$( (with site; with site-if-present; with inventory) | sort -u)
	[ -n "$want" ]
	[ "$want" = "$(printf '%s\n' "${!RUN[@]}" | sort)" ] || {
		echo "commands.def names setup for:" $want
		echo "this test brings to it:" $(printf '%s\n' "${!RUN[@]}" | sort)
		false
	}
}

@test "every command that reads the site stops on a broken one: FILE:LINE:COL, exit 3" {
	echo "cluster: [" > site.yaml
	for c in $( (with site; with site-if-present) | sort -u); do
		run nf -s site.yaml ${RUN[$c]}
		echo "# $c: $output"
		status_is 3
		[ "$(grep -c '^site.yaml:2:1: error: invalid YAML' <<<"$output")" = 1 ]
		[ "${#lines[@]}" = 1 ]
	done
}

@test "a site the table says a command needs stops it when missing; one it reads when present does not" {
	mkdir p
	cp "$NF_SRCDIR"/profiles/*.yaml p/
	rm p/site.yaml
	for c in $(with site); do
		run nf -C p ${RUN[$c]}
		echo "# $c: $output"
		status_is 1
		[ "${lines[0]}" = "nodeforge $c: cannot read 'p/site.yaml': No such file or directory" ]
	done
	# a broken racks.yaml is the first thing those that read one meet
	echo "- [" > racks.yaml
	for c in $(with site-if-present); do
		run nf -C p ${RUN[$c]}
		echo "# $c: $output"
		[[ "$output" != *site.yaml* ]]
	done
}

@test "every command that reads an inventory stops on a broken one: FILE:LINE:COL, exit 3" {
	echo "gpu-01: [" > racks.yaml
	for c in $(with site-if-present); do
		run nf -s site.yaml ${RUN[$c]}
		echo "# $c: $output"
		# one that reads it without its entry saying so meets no
		# inventory and fails another way
		[[ "$output" != *"internal error"* ]]
		with inventory | grep -qx "$c" || continue
		status_is 3
		[ "$(grep -c '^racks.yaml:2:1: error: invalid YAML' <<<"$output")" = 1 ]
	done
}
