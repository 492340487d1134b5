#!/bin/sh
# deb-for-suite.sh SUITE TARBALL OUTDIR [MIRROR]
#
# Build the nodeforge .deb for a Debian release other than the build
# host's: a throw-away root of SUITE (mmdebstrap, variant buildd, with
# debian/control's Build-Depends) builds the source tarball with
# dpkg-buildpackage, and the package lands in OUTDIR.  The image of that
# release installs this package (nodeforge build --self-package), so the
# first-boot verifier inside an image links against the image's own
# libraries, not the build host's.
set -eu

[ $# -ge 3 ] || { echo "usage: $0 SUITE TARBALL OUTDIR [MIRROR]" >&2; exit 2; }
suite=$1
tarball=$2
outdir=$3
mirror=${4:-http://deb.debian.org/debian}
jobs=${PKG_JOBS:-2}
here=$(cd "$(dirname "$0")/.." && pwd)

[ -f "$tarball" ] || { echo "$0: no source tarball '$tarball' (make pkg-src)" >&2; exit 1; }
src=$(basename "$tarball" .tar.gz)

# debian/control's Build-Depends, names only (debhelper-compat is
# debhelper's); releases after bookworm keep systemd.pc in systemd-dev
deps=$(awk '/^Build-Depends:/ { on = 1; sub(/^Build-Depends:/, "") }
	on && /^[A-Za-z-]+:/ && !/^Build-Depends:/ { on = 0 }
	on { print }' "$here/debian/control" |
	tr ',' '\n' | sed 's/(.*)//; s/[[:space:]]//g; /^$/d; s/^debhelper-compat$/debhelper/' |
	tr '\n' ',')
case $suite in bookworm|bullseye) ;; *) deps=${deps}systemd-dev, ;; esac

mkdir -p "$outdir"
# the same source tarball (by content) built for this suite before: done
sum=$(sha256sum "$tarball" | cut -d' ' -f1)
if [ -f "$outdir/.source-sha256" ] && [ "$(cat "$outdir/.source-sha256")" = "$sum" ] &&
	ls "$outdir"/nodeforge_*.deb >/dev/null 2>&1; then
	echo "deb-for-suite: $suite package of this source is current" >&2
	exit 0
fi
rm -f "$outdir"/nodeforge_*.deb "$outdir/.source-sha256"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nodeforge-deb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# dpkg need not fsync a root that is thrown away: mmdebstrap's eatmydata
# hooks where the build host has them
fast=
hooks=/usr/share/mmdebstrap/hooks/eatmydata
[ -x /usr/bin/eatmydata ] && [ -r "$hooks/extract.sh" ] && fast=--hook-dir=$hooks

echo "deb-for-suite: building $src for $suite in a $suite root from $mirror" >&2
mmdebstrap --variant=buildd --format=null --include="${deps%,}" $fast \
	--customize-hook="upload '$tarball' /tmp/$src.tar.gz" \
	--customize-hook="chroot \"\$1\" sh -ec 'mkdir /tmp/b /tmp/out; cd /tmp/b;
		tar -xzf /tmp/$src.tar.gz; cd $src;
		dpkg-buildpackage -us -uc -b -j$jobs >/tmp/out/build.log 2>&1 ||
		{ tail -n 40 /tmp/out/build.log; exit 1; };
		mv /tmp/b/*.deb /tmp/out/'" \
	--customize-hook="sync-out /tmp/out '$tmp'" \
	"$suite" /dev/null "$mirror"
# the package itself; the debug symbols stay out of images
for f in "$tmp"/nodeforge_*.deb; do
	[ -f "$f" ] || { echo "$0: the build made no nodeforge package" >&2; exit 1; }
	mv "$f" "$outdir/"
	echo "deb-for-suite: $outdir/$(basename "$f")" >&2
done
echo "$sum" > "$outdir/.source-sha256"
