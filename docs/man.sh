#!/bin/sh
# Manual pages: nodeforge.1 lists the commands and the exit codes; one
# nodeforge-CMD.1 per command, util-linux's sections in their order:
#   NAME         the command's summary ('nodeforge --help')
#   SYNOPSIS     the usage lines of 'nodeforge CMD --help'
#   DESCRIPTION  docs/nodeforge-CMD.md (its own synopsis block, the
#                sections lifted below and "## Tests..." left out)
#   OPTIONS      the option lines of 'nodeforge CMD --help'
#   EXIT STATUS  the page's "## Exit status", else --help's "Exit status:"
#   EXAMPLES     the page's "## Examples", when it has one
#   SEE ALSO     nodeforge(1) and the commands the page links to or names
# A command's options are written once, in its --help text in cmd/CMD.c:
# the OPTIONS section, like the completion (nodeforge __complete), is
# read from there, so the two cannot disagree (tests/bats/t0001-man-options.bats).
# Usage: docs/man.sh NODEFORGE-BINARY OUT-DIR VERSION
set -eu
bin=$1 out=$2 version=$3
docs=$(dirname "$0")
command -v go-md2man >/dev/null || { echo "man.sh: go-md2man is not installed (make deps)" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# go-md2man keeps the source's line breaks: a wrapped line of text or of a
# code block that starts with '.' or "'" would be read by groff as a request
# ('...', '.rootfs.tar.zst'); the zero-width \& keeps it text
md2man() {
	go-md2man -in "$1" -out "$2.tmp"
	sed -E "/^\.(TH|SH|SS|PP|IP|TP|RS|RE|TS|TE|nf|fi|nh|EX|EE|br|sp)( |\$)/! s/^([.'])/\\\\\&\1/" \
		"$2.tmp" > "$2"
	rm -f "$2.tmp"
}

# --help's usage lines (its first paragraph) as a code block
help_synopsis() {
	awk 'NR == 1 { sub(/^usage: /, "") ; print "    " $0; next }
	     /^$/ { exit }
	     { sub(/^       /, ""); print "    " $0 }' "$1"
}

# --help's option lines as a definition list.  An option line starts with
# two to six spaces and '-': "  -o, --out DIR   what it is"; the option
# and its value end at two spaces, lines indented past it continue the
# description.
help_options() {
	awk '
	function esc(s) { gsub(/[\\`*_<>\[\]]/, "\\\\&", s); return s }
	function term(t,    n, w, i, r, sep, c) {
		n = split(t, w, " ")
		r = ""
		for (i = 1; i <= n; i++) {
			c = ""
			if (w[i] ~ /,$/) { c = ","; sub(/,$/, "", w[i]) }
			sep = (i > 1) ? " " : ""
			if (w[i] ~ /^-/) {
				# --opt=VALUE
				if (w[i] ~ /=/) {
					split(w[i], kv, "=")
					r = r sep "**" esc(kv[1]) "**=*" esc(substr(w[i], length(kv[1]) + 2)) "*" c
				} else
					r = r sep "**" esc(w[i]) "**" c
			} else
				r = r sep "*" esc(w[i]) "*" c
		}
		return r
	}
	function flush() {
		if (t == "") return
		if (t ~ /--json/) json = 0
		printf "%s\n: %s\n\n", term(t), esc(d)
		t = ""; d = ""
	}
	!body { if ($0 == "") body = 1; else if ($0 ~ /--json/) json = 1; next }
	/^  +-/ && match($0, /^ +/) && RLENGTH <= 6 {
		line = $0
		sub(/^ +/, "", line)
		flush()
		p = index(line, "  ")
		if (p) { t = substr(line, 1, p - 1); d = substr(line, p); sub(/^ +/, "", d) }
		else { t = line; d = "" }
		next
	}
	t != "" && /^       [ ]*[^ ]/ {
		line = $0; sub(/^ +/, "", line)
		d = (d == "") ? line : d " " line
		next
	}
	{ flush() }
	END {
		flush()
		# a usage line that takes the global --json after the command
		if (json) printf "**--json**\n: print JSON instead of text, as **nodeforge --json** COMMAND does\n\n"
		printf "**-h**, **--help**\n: print the usage and the options, and exit\n\n"
	}' "$1"
}

# --help's "Exit status:" paragraph
help_exit() {
	awk '/^Exit status: / { p = 1; sub(/^Exit status: /, "") }
	     p && /^$/ { exit }
	     p { print }' "$1"
}

# A markdown table becomes a definition list: a row's first cell is the
# term, the others "header: cell" ("ids: ...; reads: ...", the cell alone
# when it is the only one); tbl would
# make a table wider than the terminal (man warns, a pager garbles it)
md_tables() {
	awk -F '|' '
	function cell(s) { sub(/^ +/, "", s); sub(/ +$/, "", s); return s }
	/^\|/ {
		if (!intable) {
			intable = 1; row = 0
			for (i = 2; i < NF; i++) head[i] = cell($i)
			next
		}
		if (++row == 1 && $0 ~ /^\|[-:| ]+\|$/) next
		d = ""
		for (i = 3; i < NF; i++)
			d = d (d == "" ? "" : "; ") (NF > 4 ? head[i] ": " : "") cell($i)
		printf "%s\n: %s\n\n", cell($2), d
		next
	}
	{ intable = 0; print }'
}

# one "## Title" section of a page, without its title line
md_section() {
	awk -v s="$2" '$0 == "## " s { p = 1; next } /^## / { p = 0 } p' "$1"
}

"$bin" --help | awk '/^  [a-z]/ { c = $1; $1 = ""; sub(/^ +/, ""); print c "\t" $0 }' > "$tmp/commands"
for md in "$docs"/nodeforge-*.md; do
	page=$(basename "$md" .md)
	cmd=${page#nodeforge-}
	summary=$(awk -F '\t' -v c="$cmd" '$1 == c { print $2 }' "$tmp/commands")
	[ -n "$summary" ] || summary="nodeforge $cmd"
	upper=$(echo "$page" | tr 'a-z' 'A-Z')
	"$bin" "$cmd" --help > "$tmp/help"
	{
		printf '%% %s 1 "" "nodeforge %s" "nodeforge manual"\n\n' "$upper" "$version"
		printf '# NAME\n%s \\- %s\n\n# SYNOPSIS\n' "$page" "$summary"
		help_synopsis "$tmp/help"
		printf '\n# DESCRIPTION\n'
		# the page's title and its synopsis block give way to the sections
		# above; its own sections become subsections (go-md2man: "##" is
		# .SH, "###" .SS), and those that are sections of a man page move
		# to theirs
		awk 'NR == 1 && /^# / { next }
		     !started && (/^$/ || /^    /) { next }
		     { started = 1 }
		     /^## / { skip = ($0 == "## Exit status" || $0 == "## Examples" || $0 == "## See also" ||
				      $0 ~ /^## Tests/) }
		     skip { next }
		     $0 == "## Options" { print "### Options in detail"; next }
		     /^# / { print "##" $0; next }
		     /^##+ / { print "#" $0; next }
		     { print }' "$md" | md_tables
		printf '\n# OPTIONS\n'
		help_options "$tmp/help"
		printf 'The options of **nodeforge**(1) (**-C** *DIR*, **-s** *FILE*, **--json**, **-q**, **-v**) go before COMMAND.\n'
		printf '\n# EXIT STATUS\n'
		if grep -q '^## Exit status$' "$md"; then
			md_section "$md" "Exit status" | md_tables
		else
			help_exit "$tmp/help"
		fi
		if grep -q '^## Examples$' "$md"; then
			printf '\n# EXAMPLES\n'
			md_section "$md" "Examples"
		fi
		printf '\n# SEE ALSO\n'
		# the commands the page links to (nodeforge-pxe.md) or names
		# ('nodeforge pxe'), then nodeforge(1)
		{ grep -o 'nodeforge-[a-z]*\.md' "$md" | sed 's/^nodeforge-//; s/\.md$//'
		  grep -o 'nodeforge [a-z]*' "$md" | sed 's/^nodeforge //'
		} | sort -u | while read -r c; do
			if [ "$c" != "$cmd" ] && [ -f "$docs/nodeforge-$c.md" ]; then
				printf '**nodeforge-%s**(1), ' "$c"
			fi
		done
		printf '**nodeforge**(1)\n'
	} > "$tmp/$page.md"
	md2man "$tmp/$page.md" "$out/$page.1"
done
{
	printf '%% NODEFORGE 1 "" "nodeforge %s" "nodeforge manual"\n\n' "$version"
	printf '# NAME\nnodeforge \\- provision Slurm GPU clusters: golden images, network boot, first-boot verification\n\n'
	printf '# SYNOPSIS\n**nodeforge** [-C DIR] [--site FILE] [--json] [-q] [-v] COMMAND [ARGS]\n\n'
	printf '# COMMANDS\n'
	while IFS="$(printf '\t')" read -r c s; do
		printf '**%s**\n: %s (**nodeforge-%s**(1))\n\n' "$c" "$s" "$c"
	done < "$tmp/commands"
	sed '1{/^# /d}' "$docs/exit-codes.md" | sed '1i # EXIT STATUS' | md_tables
} > "$tmp/nodeforge.md"
md2man "$tmp/nodeforge.md" "$out/nodeforge.1"
