#!/bin/sh
# setup.sh: what a fresh Debian 12 needs before the README's commands,
# as root: make (the one thing a minimal Debian lacks to read the
# Makefile), then everything the build and the tests use (make deps).
set -eu
cd "$(dirname "$0")"
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		exec sudo "$0" "$@"
	fi
	echo "$0: run as root: it installs Debian packages (apt-get)" >&2
	exit 1
fi
command -v apt-get >/dev/null 2>&1 || {
	echo "$0: no apt-get: the build host is Debian 12 (README.md)" >&2
	exit 1
}
export DEBIAN_FRONTEND=noninteractive
if ! command -v make >/dev/null 2>&1; then
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends make
fi
exec make deps
