#!/bin/sh
# Manual pages from the command pages in docs/: nodeforge-CMD.md becomes
# OUT/nodeforge-CMD.1 through go-md2man, with the NAME line from the
# command's own summary ('nodeforge --help'); nodeforge.1 lists the
# commands and the exit codes.
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
"$bin" --help | awk '/^  [a-z]/ { c = $1; $1 = ""; sub(/^ +/, ""); print c "\t" $0 }' > "$tmp/commands"
for md in "$docs"/nodeforge-*.md; do
	page=$(basename "$md" .md)
	cmd=${page#nodeforge-}
	summary=$(awk -F '\t' -v c="$cmd" '$1 == c { print $2 }' "$tmp/commands")
	[ -n "$summary" ] || summary="nodeforge $cmd"
	upper=$(echo "$page" | tr 'a-z' 'A-Z')
	{
		printf '%% %s 1 "" "nodeforge %s" "nodeforge manual"\n\n' "$upper" "$version"
		printf '# NAME\n%s \\- %s\n\n# SYNOPSIS\n' "$page" "$summary"
		# the page's own title line gives way to the sections above
		sed '1{/^# /d}' "$md"
		printf '\n# SEE ALSO\n**nodeforge**(1)\n'
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
	sed '1{/^# /d}' "$docs/exit-codes.md" | sed '1i # EXIT STATUS'
} > "$tmp/nodeforge.md"
md2man "$tmp/nodeforge.md" "$out/nodeforge.1"
