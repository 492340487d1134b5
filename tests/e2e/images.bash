# The Debian 13 images of the embedded default, built once and shared by
# the tests that need them (t2950's daemon checks, t4920's GPU boot, the
# cluster test): the same profiles, site, overlays, cache and output
# directory give the same inputs, so every build after the first finds
# its image current ("inputs unchanged") instead of packing it again.
#
#   E2E          the shared cache (NF_E2E_CACHE)
#   IMG_OUT      $E2E/cluster/out: the images
#   IMG_OVL      $E2E/cluster/overlays: the source tree's overlays plus
#                the cluster test's ssh key as root's authorized_keys (a
#                throwaway key for VMs inside the test's namespace)
#   KEY          that key
#   NF_TEST_SITE the embedded site plus the pin of a STAND-IN fabric
#                manager deb (tests/fixtures/fabricmanager), which the
#                GPU role needs from the site, and the controllers'
#                shared StateSaveLocation (IMG_STATE_NFS);
#                NODEFORGE_ARTIFACT_MIRROR a mirror with the deb beside
#                the pinned sources
#
# img_setup SITEDIR: the above, the site written into SITEDIR.

# the NFS export of the controllers' StateSaveLocation: the boot server's
# (tests/cluster/cluster_helper.bash serves it at SRV_IP)
IMG_STATE_NFS=10.0.0.1:/slurmctld

img_setup() {
	local sitedir=$1
	export IMG_OUT=$E2E/cluster/out IMG_OVL=$E2E/cluster/overlays
	mkdir -p "$E2E/cluster/ssh" "$IMG_OUT"
	chmod 700 "$E2E/cluster/ssh"
	export KEY=$E2E/cluster/ssh/id_ed25519
	[ -s "$KEY" ] || ssh-keygen -q -t ed25519 -N '' -C nodeforge-cluster-test -f "$KEY" || return 1
	rm -rf "$IMG_OVL"
	cp -R "$NF_SRCDIR/overlays" "$IMG_OVL"
	mkdir -p "$IMG_OVL/common/root/.ssh"
	cp "$KEY.pub" "$IMG_OVL/common/root/.ssh/authorized_keys"
	"$NF_SRCDIR/tests/fixtures/fabricmanager/test-site.sh" "$sitedir" \
		"$NF_SRCDIR/profiles/site.yaml" "${NODEFORGE_ARTIFACT_MIRROR:-}" || return 1
	# two controllers keep slurmctld's state on the boot server's NFS
	# export (site slurm.state_save), which the cluster test serves
	# (cl_nfs): the controller image mounts it on StateSaveLocation
	cat >>"$sitedir/site.yaml" <<-EOF || return 1

	# the controllers' shared StateSaveLocation (the cluster test serves it)
	slurm:
	  state_save:
	    nfs: "$IMG_STATE_NFS"
	EOF
	export NF_TEST_SITE=$sitedir/site.yaml
	export NODEFORGE_ARTIFACT_MIRROR=$sitedir/mirror
}

# img_build ROLE LOG [build options...]: the shared image of ROLE
img_build() {
	local role=$1 log=$2
	shift 2
	"$NF_BIN" -C "$NF_SRCDIR/profiles" -s "$NF_TEST_SITE" build "$role" \
		--cache "$E2E" --out "$IMG_OUT" --overlays "$IMG_OVL" "$@" >"$log" 2>&1
}
