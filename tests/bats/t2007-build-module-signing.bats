#!/usr/bin/env bats
# Kernel modules the image builds (kernel.built_modules), signed as the
# site file says: with the site's key (module_signing: sign: true, cert;
# the key in secrets.module_signing_key, read on the build host only) or
# left unsigned (sign: false).  The stand-in bootstrap brings two .ko
# files as a driver's artifact would leave them (NF_STUB_EXTRA); the
# signature is checked with openssl and the host's modinfo.
load helper

setup() {
	nf_setup
	command -v openssl >/dev/null || skip "needs openssl"
	export NODEFORGE_MMDEBSTRAP=$FIXTURES/bin/mmdebstrap NF_STUB_EXTRA=$SCRATCH/extra
	# /lib/modules through a symlink, as on a merged-/usr image
	mkdir -p prof "extra/usr/lib/modules/6.1.0-test/drv" extra/usr/lib/modules/6.1.0-test/kernel extra/lib
	ln -s ../usr/lib/modules extra/lib/modules
	head -c 5000 /dev/urandom > extra/lib/modules/6.1.0-test/drv/a.ko
	printf 'second module\n' > extra/lib/modules/6.1.0-test/drv/b.ko
	printf 'the distro kernel module\n' > extra/lib/modules/6.1.0-test/kernel/c.ko
	cp "$NF_SRCDIR"/profiles/base.yaml prof/
	cat > prof/drv.yaml <<-'EOR'
	description: a role that builds kernel modules
	inherits: [base]
	kernel:
	  built_modules: [drv]
	EOR
	openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=nodeforge test module key" \
		-keyout key.pem -out cert.pem 2>/dev/null
	chmod 600 key.pem
	grep -v '^module_signing:\|^  sign: false' "$NF_SRCDIR/profiles/site.yaml" > plain.yaml
}

teardown() { nf_teardown; }

# site SIGN: the embedded site with module_signing (and the key when
# SIGN is true)
site() {
	cp plain.yaml prof/site.yaml
	if [ "$1" = true ]; then
		printf 'module_signing:\n  sign: true\n  cert: %s\n' "$SCRATCH/cert.pem" >> prof/site.yaml
		sed -i "s#^secrets:#secrets:\n  module_signing_key:\n    path: $SCRATCH/key.pem#" prof/site.yaml
	elif [ "$1" = false ]; then
		printf 'module_signing:\n  sign: false\n' >> prof/site.yaml
	fi
}

b() { nf -C prof build drv --cache "$SCRATCH/cache" --out out --self-package host "$@"; }

unpack() {
	rm -rf root && mkdir root
	zstd -dc "out/drv/$(jq -r .rootfs out/drv/drv.current)" | tar -x -C root
}

@test "module signing: the modules the image builds are signed with the site's key (openssl verifies the appended CMS signature; modinfo names the signer); the distro's are not touched; the key is not in the image" {
	site true
	run b
	echo "$output"
	status_is 0
	[[ "$output" == *"2 kernel modules signed with the site's key"* ]]
	unpack
	m=root/lib/modules/6.1.0-test/drv/a.ko
	orig=extra/lib/modules/6.1.0-test/drv/a.ko
	magic='~Module signature appended~'
	[ "$(tail -c 28 "$m")" = "$magic" ]
	# the original bytes, then the signature, its 12-byte descriptor
	# (id_type 2: PKCS#7; the length, big-endian), the magic
	n=$(stat -c %s "$orig")
	cmp -n "$n" "$m" "$orig"
	total=$(stat -c %s "$m")
	siglen=$(tail -c 32 "$m" | head -c 4 | od -An -tu1 | awk '{print $1*16777216+$2*65536+$3*256+$4}')
	[ "$(tail -c 40 "$m" | head -c 3 | od -An -tu1 | awk '{print $3}')" = 2 ]
	[ $((n + siglen + 12 + 28)) = "$total" ]
	tail -c $((siglen + 40)) "$m" | head -c "$siglen" > sig.der
	openssl cms -verify -binary -inform DER -in sig.der -content "$orig" \
		-certfile cert.pem -CAfile cert.pem -purpose any -out /dev/null
	if modinfo -F signer "$m" >/dev/null 2>&1; then
		[ "$(modinfo -F signer "$m")" = "nodeforge test module key" ]
	fi
	[ "$(tail -c 28 root/lib/modules/6.1.0-test/drv/b.ko)" = "$magic" ]
	cmp root/lib/modules/6.1.0-test/kernel/c.ko extra/lib/modules/6.1.0-test/kernel/c.ko
	# the private key went nowhere near the image
	! grep -rqF "$(sed -n 2p key.pem)" root
	! grep -q PRIVATE "$(jq -r .manifest out/drv/drv.current | sed 's#^#out/drv/#')"
	# the same inputs and key give the same image (no signing time)
	sha=$(jq -r .rootfs_sha256 out/drv/drv.current)
	run b --no-cache
	status_is 0
	[ "$(jq -r .rootfs_sha256 out/drv/drv.current)" = "$sha" ]
}

@test "module signing off (sign: false): the modules are left as built, and the build says so" {
	site false
	run b
	echo "$output"
	status_is 0
	[[ "$output" == *"kernel modules left unsigned (module_signing: sign: false)"* ]]
	unpack
	cmp root/lib/modules/6.1.0-test/drv/a.ko extra/lib/modules/6.1.0-test/drv/a.ko
}

@test "module signing: a site that does not say how built modules are signed, or says sign: true without its key, is refused before anything is fetched" {
	site none
	run b
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"role 'drv' builds kernel modules (kernel.built_modules) and the site file does not say how they are signed"* ]]
	[ ! -e cache/bootstrap ]
	cp plain.yaml prof/site.yaml
	printf 'module_signing:\n  sign: true\n  cert: %s\n' "$SCRATCH/cert.pem" >> prof/site.yaml
	run b
	[ "$status" -ne 0 ]
	[[ "$output" == *"needs 'cert' (the X.509 certificate, PEM) and secrets.module_signing_key.path"* ]]
	[ ! -e cache/bootstrap ]
}

@test "module signing: a key readable by others, or one that does not match the certificate, stops the build; nothing is published" {
	site true
	chmod 644 key.pem
	run b
	echo "$output"
	[ "$status" -ne 0 ]
	[ ! -e out/drv/drv.current ]
	chmod 600 key.pem
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out other.pem 2>/dev/null
	chmod 600 other.pem
	sed -i "s#$SCRATCH/key.pem#$SCRATCH/other.pem#" prof/site.yaml
	run b
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"the certificate does not match secrets.module_signing_key"* ]]
	[ ! -e out/drv/drv.current ]
}
