#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The library's parts call only down: fail on a call (or data reference)
from a file of a lower part to a file of a higher one that allow.txt does
not list, and on an include that crosses a boundary.

usage: check-layers.py [--build DIR] [--src DIR] [--sccs] [--parts FILE]
                       [--allow FILE]

Reads `nm` of every object under DIR/lib and DIR/cmd (default: build):
what each file defines and what it uses.  parts.txt lists the parts,
lowest first, each with the source files (globs) it holds; a file in no
part is an error, so a new file must be placed.  allow.txt lists the
upward uses that remain, one a line: `FILE SYMBOL reason`; a listed use
that no longer happens is an error too, so the list only shrinks.

The sources under DIR (--src, default: this checkout) are read for their
#include lines: a command (cmd/) includes of lib/ only the public
headers, lib/nodeforge.h and lib/nodeforge/*.h, and those include of the
system only the C library's headers (PUBLIC_SYSTEM: no jansson, no other
library a command would be built against); only lib/adapters/
includes the headers of a library that has an adapter there (ADAPTED),
directly or through a header of lib/adapters/; and a function of a
library loaded on first use (lib/adapters/*_dl.c) is called from
lib/adapters/ only.  A path of /proc or /sys under a sysroot is built by
SYSROOT_HELPER only: a format string that starts "%s/proc or "%s/sys
anywhere else fails.  A command prints a failure's text with
nf_error_text(ctx, code), never the context's last message alone
(nf_errmsg): that may be an older failure's, of another code.

--sccs prints the strongly connected components of lib/'s file graph
(its cycles), largest first, and those of the part graph."""
import argparse
import fnmatch
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE = re.compile(r'\s*#\s*include\s*([<"])([^>"]+)[>"]')
# The headers of the libraries that have an adapter in lib/adapters/ (a
# name ending in '/': every header under it), and the library.  jansson
# is the JSON of every part: it has none.
PUBLIC_SYSTEM = {"limits.h", "signal.h", "stdarg.h", "stdbool.h", "stddef.h",
                 "stdint.h", "stdio.h", "sys/types.h", "time.h"}
SYSROOT_HELPER = "lib/sysroot.c"
HAND_BUILT = re.compile(r'"%s/(proc|sys)\b')
ADAPTED = [
    ("archive.h", "libarchive"), ("archive_entry.h", "libarchive"),
    ("blkid.h", "libblkid"), ("blkid/", "libblkid"),
    ("curl/", "libcurl"),
    ("efivar.h", "efivar"), ("efiboot.h", "efivar"), ("efivar/", "efivar"),
    ("microhttpd.h", "libmicrohttpd"),
    ("openssl/", "OpenSSL"),
    ("systemd/", "libsystemd"),
    ("yaml.h", "libyaml"),
    ("zstd.h", "libzstd"), ("zstd_errors.h", "libzstd"), ("zdict.h", "libzstd"),
]


def read_parts(path):
    parts = []  # (name, [globs])
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, _, globs = line.partition(":")
            if not globs.strip():
                sys.exit(f"{path}:{n}: expected 'part: glob...'")
            parts.append((name.strip(), globs.split()))
    return parts


def read_allow(path):
    allow = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            w = s.split(None, 2)
            if len(w) < 3:
                sys.exit(f"{path}:{n}: expected 'FILE SYMBOL reason', got '{s}'")
            allow[(w[0], w[1])] = n
    return allow


def source_of(obj, build):
    rel = os.path.relpath(obj, build)
    return rel[:-2] + ".c"


def scan(build):
    objs = []
    for top in ("lib", "cmd"):
        for d, _, fs in os.walk(os.path.join(build, top)):
            objs += [os.path.join(d, f) for f in fs if f.endswith(".o")]
    if not objs:
        sys.exit(f"check-layers: no objects under '{build}/lib': build first")
    out = subprocess.run(["nm", "-A", "--defined-only"] + sorted(objs),
                         capture_output=True, text=True, check=True).stdout
    defs = {}
    for line in out.splitlines():
        path, _, rest = line.partition(":")
        w = rest.split()
        if len(w) == 3 and w[1] in "TDBRVW" and w[1].isupper():
            defs.setdefault(w[2], source_of(path, build))
    out = subprocess.run(["nm", "-A", "--undefined-only"] + sorted(objs),
                         capture_output=True, text=True, check=True).stdout
    uses = []
    for line in out.splitlines():
        path, _, rest = line.partition(":")
        w = rest.split()
        if w and w[-1] in defs:
            src = source_of(path, build)
            if defs[w[-1]] != src:
                uses.append((src, w[-1], defs[w[-1]]))
    return sorted(set(uses)), sorted({source_of(o, build) for o in objs})


def includes(src, top):
    """(file, line, name, quoted) of every #include under SRC/TOP"""
    out = []
    for d, dirs, fs in os.walk(os.path.join(src, top)):
        dirs.sort()
        for f in sorted(fs):
            if not f.endswith((".c", ".h", ".def")):
                continue
            path = os.path.join(d, f)
            with open(path, errors="replace") as fp:
                for n, line in enumerate(fp, 1):
                    m = INCLUDE.match(line)
                    if m:
                        out.append((os.path.relpath(path, src), n,
                                    m.group(2), m.group(1) == '"'))
    return out


def adapted(name):
    """The library of an adapted header, or None"""
    for h, lib in ADAPTED:
        if name == h or (h.endswith("/") and name.startswith(h)):
            return lib
    return None


def reaches_adapted(src, path, seen=None):
    """(header, library) of the first adapted header that PATH (under
    SRC) includes, itself or through the headers it includes, or None"""
    seen = seen if seen is not None else set()
    if path in seen or not os.path.isfile(os.path.join(src, path)):
        return None
    seen.add(path)
    with open(os.path.join(src, path), errors="replace") as fp:
        for line in fp:
            m = INCLUDE.match(line)
            if not m:
                continue
            if adapted(m.group(2)):
                return m.group(2), adapted(m.group(2))
            for d in (os.path.dirname(path), "lib"):
                inner = os.path.normpath(os.path.join(d, m.group(2)))
                if m.group(1) == '"' and os.path.isfile(os.path.join(src, inner)):
                    hit = reaches_adapted(src, inner, seen)
                    if hit:
                        return hit
                    break
    return None


def check_includes(src):
    """The includes that cross a boundary, as messages"""
    bad = []
    for f, n, name, quoted in includes(src, "lib"):
        public = f == "lib/nodeforge.h" or f.startswith("lib/nodeforge/")
        if public and not quoted and name not in PUBLIC_SYSTEM:
            bad.append(f"{f}:{n}: includes <{name}>: a public header "
                       "includes the C library's headers only (a "
                       "forward declaration will do)")
    for f, n, name, quoted in includes(src, "lib") + includes(src, "cmd"):
        if f.startswith("lib/adapters/"):
            continue
        if adapted(name):
            bad.append(f"{f}:{n}: includes <{name}>: {adapted(name)} is "
                       "reached through its adapter in lib/adapters/ only")
            continue
        for d in (os.path.dirname(f), "lib"):
            inner = os.path.normpath(os.path.join(d, name))
            if quoted and os.path.isfile(os.path.join(src, inner)):
                if inner.startswith("lib/adapters/"):
                    hit = reaches_adapted(src, inner)
                    if hit:
                        bad.append(f"{f}:{n}: includes '{name}', which "
                                   f"includes <{hit[0]}>: {hit[1]} is "
                                   "reached through its adapter in "
                                   "lib/adapters/ only")
                break
    for f, n, name, quoted in includes(src, "cmd"):
        here = os.path.join(src, os.path.dirname(f), name)
        if quoted and os.path.exists(here):
            continue
        if not os.path.exists(os.path.join(src, "lib", name)):
            continue
        if name == "nodeforge.h" or (name.startswith("nodeforge/") and
                                     name.endswith(".h")):
            continue
        bad.append(f"{f}:{n}: includes '{name}', private to lib/: a "
                   "command includes lib/nodeforge.h and lib/nodeforge/*.h")
    return bad


def check_sysroot_paths(src):
    """The /proc and /sys paths built by hand, as messages"""
    bad = []
    for top in ("lib", "cmd"):
        for d, dirs, fs in os.walk(os.path.join(src, top)):
            dirs.sort()
            for f in sorted(fs):
                path = os.path.join(d, f)
                rel = os.path.relpath(path, src)
                if not f.endswith((".c", ".h")) or rel == SYSROOT_HELPER:
                    continue
                with open(path, errors="replace") as fp:
                    for n, line in enumerate(fp, 1):
                        m = HAND_BUILT.search(line)
                        if m:
                            bad.append(f"{rel}:{n}: builds a /{m.group(1)} "
                                       "path by hand: nf_sysroot_path() or "
                                       f"nf_sr_path() ({SYSROOT_HELPER})")
    return bad


ERRMSG = re.compile(r'\bnf_errmsg\s*\(')


def check_cmd_errmsg(src):
    """The commands that print the context's last message, as messages"""
    bad = []
    top = os.path.join(src, "cmd")
    for f in sorted(os.listdir(top)) if os.path.isdir(top) else []:
        if not f.endswith((".c", ".h")):
            continue
        with open(os.path.join(top, f), errors="replace") as fp:
            for n, line in enumerate(fp, 1):
                if ERRMSG.search(line):
                    bad.append(f"cmd/{f}:{n}: prints nf_errmsg(): the text "
                               "of a failure is nf_error_text(ctx, code)")
    return bad


def sccs(nodes, edges):
    """Tarjan, iterative: the components of more than one node"""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out, key=lambda c: (-len(c), c))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--src", default=os.path.dirname(os.path.dirname(HERE)))
    ap.add_argument("--parts", default=os.path.join(HERE, "parts.txt"))
    ap.add_argument("--allow", default=os.path.join(HERE, "allow.txt"))
    ap.add_argument("--sccs", action="store_true")
    a = ap.parse_args()

    parts = read_parts(a.parts)
    allow = read_allow(a.allow)
    uses, files = scan(a.build)
    rank, part_of, bad = {}, {}, 0
    for i, (name, _) in enumerate(parts):
        rank[name] = i
    for f in files:
        for name, globs in parts:
            if any(fnmatch.fnmatchcase(f, g) for g in globs):
                part_of[f] = name
                break
        else:
            print(f"check-layers: '{f}' is in no part of {a.parts}")
            bad += 1

    seen, upward = set(), 0
    for src, sym, dst in uses:
        if src not in part_of or dst not in part_of:
            continue
        if rank[part_of[src]] >= rank[part_of[dst]]:
            continue
        if (src, sym) in allow:
            seen.add((src, sym))
            upward += 1
            continue
        print(f"check-layers: {src} ({part_of[src]}) uses {sym} of {dst} "
              f"({part_of[dst]}), a higher part")
        bad += 1
    for (src, sym), n in sorted(allow.items(), key=lambda x: x[1]):
        if (src, sym) not in seen:
            print(f"check-layers: {a.allow}:{n}: '{src} {sym}' is no upward "
                  "use any more: remove the line")
            bad += 1

    for msg in (check_includes(a.src) + check_sysroot_paths(a.src) +
                check_cmd_errmsg(a.src)):
        print(f"check-layers: {msg}")
        bad += 1
    for src, sym, dst in uses:
        if (dst.startswith("lib/adapters/") and dst.endswith("_dl.c") and
                not src.startswith("lib/adapters/")):
            print(f"check-layers: {src} calls {sym} of {dst}: a library "
                  "loaded on first use is called through its adapter only")
            bad += 1

    if a.sccs:
        fe, pe = {}, {}
        for src, _, dst in uses:
            fe.setdefault(src, set()).add(dst)
            if src in part_of and dst in part_of and part_of[src] != part_of[dst]:
                pe.setdefault(part_of[src], set()).add(part_of[dst])
        # cmd/ is the top part: its files meet in the command table
        fc = sccs([f for f in files if f.startswith("lib/")],
                  {k: {d for d in v if d.startswith("lib/")}
                   for k, v in fe.items() if k.startswith("lib/")})
        pc = sccs([p for p, _ in parts], pe)
        print(f"lib file cycles: {len(fc)} components, "
              f"{sum(len(c) for c in fc)} files; largest {len(fc[0]) if fc else 0}")
        for c in fc:
            print(f"  {len(c)}: {' '.join(c)}")
        print(f"part cycles: {len(pc)} components; largest {len(pc[0]) if pc else 0} "
              f"of {len(parts)} parts")
        for c in pc:
            print(f"  {len(c)}: {' '.join(c)}")
    print(f"check-layers: {len(parts)} parts, {len(files)} files, "
          f"{upward} allowed upward uses, {bad} errors")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
