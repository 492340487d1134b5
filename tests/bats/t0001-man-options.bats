#!/usr/bin/env bats
# make test: beside the cluster
# Each command's options are written once, in its --help text; the man
# page's OPTIONS section comes from there (docs/man.sh).  These tests read
# both as a user sees them (--help, man -l) and fail on any option that one
# names and the other does not, or names with another value.
load helper

# "NAME<TAB>VALUE" for every option a text names: "-o, --out DIR",
# "[--tree DIR]...", "-m/--mirror SRC", "--kernel-args ROLE[+]=ARGS"; a
# short option written beside a long one takes its value
opts_of() {
	sed -E 's#(^|[^-[:alnum:]])(-[[:alnum:]])(, |/)(--[[:alnum:]][-[:alnum:]]*)([ =][^ ,]+)?#\1\2\5, \4\5#g' |
	grep -oE '(^|[][ |(,])--?[[:alnum:]][-[:alnum:]]*([ =][^ ,]+)?' |
	sed -E 's/^[][ |(,]//' |
	awk '{
		n = $0; v = ""
		if (match(n, /[ =]/)) { v = substr(n, RSTART + 1); n = substr(n, 1, RSTART - 1) }
		while (v ~ /(\]|\)|\.\.\.)$/) sub(/(\]|\)|\.\.\.)$/, "", v)
		if (v !~ /^[[:alnum:]]/ || (v !~ /^[A-Z]/ && v !~ /\|/ && v !~ /\./)) v = ""
		print n "\t" v
	}' | sort -u
}

# --help: its usage lines (the first paragraph) and the option part of its
# option lines (up to two spaces); -h, --help, which every command takes
# (nf_getopt), its page says once for all
help_opts() {
	{ printf -- '-h\n--help\n'; nf "$1" --help; } | awk '
		!body { if ($0 == "") body = 1; else print; next }
		/^  +-/ && match($0, /^ +/) && RLENGTH <= 6 { sub(/^ +/, ""); p = index($0, "  "); print (p ? substr($0, 1, p - 1) : $0) }' | opts_of
}

# man: the tags of the OPTIONS section (indented 7); a tag short enough
# shares its line with the description ("--gate first-boot mode: ..."),
# so the tag ends at the first word that is neither an option nor a value
man_opts() {
	MANWIDTH=200 man -l "$MAN/nodeforge-$1.1" 2>/dev/null | awk '
		/^[A-Z]/ { sect = $0; next }
		sect == "OPTIONS" && /^       -/ {
			n = split($0, w, " "); t = ""
			for (i = 1; i <= n; i++) {
				if (w[i] !~ /^-/ && w[i] !~ /^[A-Z]/ && w[i] !~ /[|.]/) break
				t = t (i > 1 ? " " : "") w[i]
			}
			print t
		}' | opts_of
}

# the two lists agree: the same option names, and every value one names
# is the value the other names
agree() {
	local c=$1 h m
	h=$(help_opts "$c") m=$(man_opts "$c")
	diff <(cut -f1 <<<"$h" | grep . | sort -u) <(cut -f1 <<<"$m" | grep . | sort -u) >&2 ||
		{ echo "$c: options differ (< --help, > man page)" >&2; return 1; }
	diff <(awk -F '\t' '$2 != ""' <<<"$h") <(awk -F '\t' '$2 != ""' <<<"$m") >&2 ||
		{ echo "$c: option values differ (< --help, > man page)" >&2; return 1; }
}

setup() {
	nf_setup
	command -v man >/dev/null || skip "man-db not installed (make deps)"
	MAN=${NF_MAN:-$(dirname "$NF_BIN")/man}
}

commands() {
	nf --help | awk '/^Commands:/ { f = 1; next } f && /^  [a-z]/ { print $1 }'
}

@test "every command's man page has an OPTIONS section that names exactly the options of its --help, with the same values" {
	local c bad=0
	for c in $(commands); do
		agree "$c" || bad=1
	done
	[ $bad -eq 0 ]
}

@test "every command's man page has util-linux's sections in their order" {
	local c bad=0 s
	for c in $(commands); do
		s=$(MANWIDTH=100 man -l "$MAN/nodeforge-$c.1" 2>/dev/null | grep -E '^[A-Z][A-Z ]+$' | tr '\n' ' ')
		[[ "$s" == "NAME SYNOPSIS DESCRIPTION OPTIONS EXIT STATUS "*"SEE ALSO " ]] ||
			{ echo "$c: sections: $s"; bad=1; }
	done
	[ $bad -eq 0 ]
}

@test "the check itself: a man page that lacks an option of --help, or names another value, fails" {
	local d c=build
	d=$BATS_TEST_TMPDIR/man
	mkdir -p "$d"
	# the page with --offline misspelt: --help's is missing from it
	sed 's/^\\fB--offline\\fP$/\\fB--offlin\\fP/' "$MAN/nodeforge-$c.1" > "$d/nodeforge-$c.1"
	grep -q '^\\fB--offlin\\fP$' "$d/nodeforge-$c.1"
	MAN=$d run agree "$c"
	status_is 1
	[[ "$output" == *"< --offline"* ]]
	# --epoch with another value
	sed 's/^\\fB--epoch\\fP \\fIN\\fP$/\\fB--epoch\\fP \\fISECONDS\\fP/' "$MAN/nodeforge-$c.1" > "$d/nodeforge-$c.1"
	grep -q 'fISECONDS' "$d/nodeforge-$c.1"
	MAN=$d run agree "$c"
	status_is 1
	[[ "$output" == *"> --epoch"*"SECONDS"* ]]
}

@test "man pages fit 80 columns: no table wider than the line, no test file named" {
	local f w bad=0
	for f in "$MAN"/*.1; do
		w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$f" 2>&1 >/dev/null)
		if grep 'table wider' <<<"$w"; then echo "in $f"; bad=1; fi
		if MANWIDTH=80 man -l "$f" 2>/dev/null | grep -E 'tests/(bats|e2e|fixtures)/|bench/'; then
			echo "in $f"; bad=1
		fi
	done
	[ $bad -eq 0 ]
}

@test "man pages: EXAMPLES where the page has some, SEE ALSO names the commands the page refers to" {
	run env MANWIDTH=100 man -l "$MAN/nodeforge-verify.1"
	status_is 0
	[[ "$output" == *"EXAMPLES"*"nodeforge verify --role cpu --root"*"SEE ALSO"*"nodeforge-build(1)"*"nodeforge(1)"* ]]
	run env MANWIDTH=100 man -l "$MAN/nodeforge-pxe.1"
	[[ "$output" == *"OPTIONS"*"--kernel-args ROLE+=ARGS"*"EXAMPLES"*"SEE ALSO"*"nodeforge-serve(1)"* ]]
}

# the long options of a getopt table: { "name", required_argument, ... }
longopts() {
	grep -oE '\{ *"[a-z0-9-]+", *(required|no|optional)_argument' "$@" |
		sed -E 's/^[^"]*"([^"]+)".*/\1/' | grep -vx help | sort -u
}

@test "every long option a command's getopt table takes is named in its --help (so in its man page)" {
	local f c o h bad=0
	for f in "$NF_SRCDIR"/cmd/*.c; do
		c=$(basename "$f" .c)
		c=${c%_rotate}
		case $c in main|complete) continue ;; esac
		h=$(nf "$c" --help 2>/dev/null) || continue
		# power.c parses for power and bootdev (bootdev's --once)
		[ "$c" = power ] && h+=$(nf bootdev --help)
		for o in $(longopts "$f"); do
			grep -qE -- "--$o([^-[:alnum:]]|\$)" <<<"$h" || { echo "$c --help does not name --$o"; bad=1; }
		done
	done
	# the tables cmd.h shares: build's options (build, ci), verify's (verify, gate)
	for c in build ci; do
		h=$(nf "$c" --help)
		for o in $(sed -n '/#define NF_BUILD_LONGOPTS/,/^$/p' "$NF_SRCDIR/cmd/cmd.h" | longopts); do
			grep -qE -- "--$o([^-[:alnum:]]|\$)" <<<"$h" || { echo "$c --help does not name --$o"; bad=1; }
		done
	done
	h=$(nf verify --help)
	for o in $(sed -n '/#define NF_VERIFY_LONGOPTS/,/^$/p' "$NF_SRCDIR/cmd/cmd.h" | longopts); do
		grep -qE -- "--$o([^-[:alnum:]]|\$)" <<<"$h" || { echo "verify --help does not name --$o"; bad=1; }
	done
	[ $bad -eq 0 ]
}
