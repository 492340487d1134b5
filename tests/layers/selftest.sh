#!/bin/sh
# check-layers.py on a two-file library of its own: a call from the lower
# part to the higher one fails the check, the same call listed in the
# allow file passes, and an allow line no call needs fails again.  A
# command that includes a private header of the library fails it too.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/build/lib"
printf 'int high(void);\nint low(void) { return high(); }\n' > "$t/low.c"
printf 'int high(void) { return 1; }\n' > "$t/high.c"
${CC:-cc} -c -o "$t/build/lib/low.o" "$t/low.c"
${CC:-cc} -c -o "$t/build/lib/high.o" "$t/high.c"
printf 'lower: lib/low.c\nupper: lib/high.c\n' > "$t/parts.txt"
: > "$t/none.txt"
printf 'lib/low.c high a reason\n' > "$t/allow.txt"
printf 'lib/low.c high a reason\nlib/low.c gone a stale line\n' > "$t/stale.txt"
mkdir -p "$t/src/cmd" "$t/src/lib/nodeforge"
: > "$t/src/lib/nodeforge.h"
: > "$t/src/lib/nodeforge/part.h"
: > "$t/src/lib/internal.h"
printf '#include "cmd.h"\n#include "nodeforge.h"\n#include "nodeforge/part.h"\n#include <stdio.h>\n' > "$t/src/cmd/ok.c"
: > "$t/src/cmd/cmd.h"
run() { python3 "$here/check-layers.py" --build "$t/build" --src "$t/src" --parts "$t/parts.txt" --allow "$@"; }

if out=$(run "$t/none.txt"); then
	echo "selftest: an upward call passed: $out" >&2; exit 1
fi
echo "$out" | grep -q "lib/low.c (lower) uses high of lib/high.c (upper)" ||
	{ echo "selftest: the upward call is not named: $out" >&2; exit 1; }
run "$t/allow.txt" > /dev/null ||
	{ echo "selftest: an allowed call failed" >&2; exit 1; }
if out=$(run "$t/stale.txt"); then
	echo "selftest: a stale allow line passed: $out" >&2; exit 1
fi
echo "$out" | grep -q "'lib/low.c gone' is no upward use" ||
	{ echo "selftest: the stale line is not named: $out" >&2; exit 1; }
printf '#include "cmd.h"\n#include "internal.h"\n' > "$t/src/cmd/bad.c"
if out=$(run "$t/allow.txt"); then
	echo "selftest: a command including internal.h passed: $out" >&2; exit 1
fi
echo "$out" | grep -q "cmd/bad.c:2: includes 'internal.h', private to lib/" ||
	{ echo "selftest: the include is not named: $out" >&2; exit 1; }
rm "$t/src/cmd/bad.c"
printf 'lower: lib/low.c\n' > "$t/parts.txt"
if run "$t/allow.txt" > /dev/null; then
	echo "selftest: a file in no part passed" >&2; exit 1
fi
echo "check-layers selftest: ok"
