#!/bin/sh
# ls-source.sh: the files of the source, NUL-terminated, relative to the
# top of the tree (run there): what git tracks or would track in a
# checkout; in a tree without .git (a source tarball, git archive), every
# file but what .gitignore names: the build's and the tests' outputs.
# make pkg-src packs this list.
set -eu
if [ "$(git rev-parse --show-toplevel 2>/dev/null || :)" = "$(pwd -P)" ]; then
	exec git ls-files -z -co --exclude-standard
fi
[ -f .gitignore ] || { echo "$0: no .gitignore in '$(pwd)': not the top of a nodeforge tree" >&2; exit 1; }
# .gitignore's two kinds of pattern: /DIR/ (from the top, globs allowed)
# and NAME (a glob matched against every base name)
set -f
set -- -path ./.git
while IFS= read -r p || [ -n "$p" ]; do
	case $p in
	'' | '#'*) ;;
	/*/) set -- "$@" -o -path ".${p%/}" ;;
	*/* | '!'*)
		echo "$0: .gitignore pattern '$p': only /DIR/ and NAME are understood" >&2
		exit 1 ;;
	*) set -- "$@" -o -name "$p" ;;
	esac
done < .gitignore
find . \( "$@" \) -prune -o \( -type f -o -type l \) -print0 | sed -z 's,^\./,,' | sort -z
