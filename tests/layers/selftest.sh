#!/bin/sh
# check-layers.py on a two-file library of its own: a call from the lower
# part to the higher one fails the check, the same call listed in the
# allow file passes, and an allow line no call needs fails again.  A
# command that includes a private header of the library fails it too, as
# does a public header that includes a library's header (jansson's), as
# does a file outside lib/adapters/ that includes a library's header
# which has an adapter there (itself or through an adapter's header), or
# that calls a function of a library loaded on first use, or that builds
# a /proc or /sys path under a sysroot by hand, or a command that prints
# the context's last message instead of its failure's text.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
# obj NAME CODE: CODE (printf's escapes) compiled into build/NAME.o
obj() {
	mkdir -p "$(dirname "$t/build/$1")"
	printf "$2" > "$t/obj.c"
	${CC:-cc} -c -o "$t/build/$1.o" "$t/obj.c"
}
obj lib/low 'int high(void);\nint low(void) { return high(); }\n'
obj lib/high 'int high(void) { return 1; }\n'
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
# fails ALLOW WHAT MESSAGE: the check fails with ALLOW, and says MESSAGE
fails() {
	if out=$(run "$1"); then
		echo "selftest: $2 passed: $out" >&2; exit 1
	fi
	echo "$out" | grep -qF -- "$3" ||
		{ echo "selftest: $2: no '$3' in: $out" >&2; exit 1; }
}

fails "$t/none.txt" "an upward call" "lib/low.c (lower) uses high of lib/high.c (upper)"
run "$t/allow.txt" > /dev/null ||
	{ echo "selftest: an allowed call failed" >&2; exit 1; }
fails "$t/stale.txt" "a stale allow line" "'lib/low.c gone' is no upward use"
printf '#include "cmd.h"\n#include "internal.h"\n' > "$t/src/cmd/bad.c"
fails "$t/allow.txt" "a command including internal.h" "cmd/bad.c:2: includes 'internal.h', private to lib/"
rm "$t/src/cmd/bad.c"
printf '#include <stdint.h>\n#include <jansson.h>\n' > "$t/src/lib/nodeforge/part.h"
fails "$t/allow.txt" "a public header including jansson.h" "lib/nodeforge/part.h:2: includes <jansson.h>: a public header"
printf '#include <stdint.h>\ntypedef struct json_t json_t;\n' > "$t/src/lib/nodeforge/part.h"
mkdir -p "$t/src/lib/adapters"
printf '#include <yaml.h>\n' > "$t/src/lib/adapters/yaml.c"
printf '#include "internal.h"\n#include <yaml.h>\n' > "$t/src/lib/adapters/yaml_int.h"
printf '#include "yaml_int.h"\n' > "$t/src/lib/adapters/yaml2.c"
run "$t/allow.txt" > /dev/null ||
	{ echo "selftest: an adapter including its library failed" >&2; exit 1; }
printf '#include <stdio.h>\n\n#include <yaml.h>\n' > "$t/src/lib/bad.c"
fails "$t/allow.txt" "lib/bad.c including yaml.h" "lib/bad.c:3: includes <yaml.h>: libyaml is reached through its adapter"
printf '#include "adapters/yaml_int.h"\n' > "$t/src/lib/bad.c"
fails "$t/allow.txt" "lib/bad.c including yaml.h through yaml_int.h" "lib/bad.c:1: includes 'adapters/yaml_int.h', which includes <yaml.h>"
printf 'char *p = nf_asprintf("%%s/proc/cmdline", sysroot);\n' > "$t/src/lib/bad.c"
fails "$t/allow.txt" "a /proc path built by hand" "lib/bad.c:1: builds a /proc path by hand"
printf 'char *p = nf_asprintf("%%s%%s", sysroot, rel);\n' > "$t/src/lib/sysroot.c"
printf 'char *p = nf_asprintf("%%s/sys/class/net", sysroot);\n' > "$t/src/lib/bad.c"
fails "$t/allow.txt" "a /sys path built by hand" "lib/bad.c:1: builds a /sys path by hand"
rm "$t/src/lib/bad.c"
printf 'fprintf(stderr, "%%s\\n", nf_errmsg(g->ctx));\n' > "$t/src/cmd/bad.c"
fails "$t/allow.txt" "a command printing nf_errmsg" "cmd/bad.c:1: prints nf_errmsg()"
rm "$t/src/cmd/bad.c"
obj lib/adapters/lazy_dl 'int lazy_call(void) { return 1; }\n'
obj lib/high 'int lazy_call(void);\nint high(void) { return lazy_call(); }\n'
printf 'adapters: lib/adapters/*.c\nlower: lib/low.c\nupper: lib/high.c\n' > "$t/parts.txt"
fails "$t/allow.txt" "a call of a lazily loaded function" "lib/high.c calls lazy_call of lib/adapters/lazy_dl.c"
rm "$t/build/lib/adapters/lazy_dl.o"
obj lib/high 'int high(void) { return 1; }\n'
printf 'lower: lib/low.c\n' > "$t/parts.txt"
if run "$t/allow.txt" > /dev/null; then
	echo "selftest: a file in no part passed" >&2; exit 1
fi
echo "check-layers selftest: ok"
