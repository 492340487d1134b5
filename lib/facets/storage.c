/* SPDX-License-Identifier: MIT */
/* storage: local NVMe for the enroot cache, picked by a disk rule. */
#include "internal.h"
#include "internal/storage.h"

static const struct nf_field cache_fields[] = {
	{ "rule", NF_T_STR },
	{ "mount", NF_T_PATH, .required = true },
	{ "fs", NF_T_STR, .choices = (const char *const[]){ "xfs", "ext4", "tmpfs", NULL } },
	{ 0 }
};

static const struct nf_field fields[] = {
	{ "enroot_cache", NF_T_OBJ, cache_fields },
	{ "install_disk", NF_T_STR },
	{ 0 }
};

/* A disk rule in the profile must parse (nodeforge disk pick grammar) */
static void lint_rule(struct nf_facet_lint *l, const char *path,
		      const char *text)
{
	struct nf_diskrule *r;

	if (!text)
		return;
	if (nf_diskrule_parse(l->ctx, text, &r) < 0)
		nf_lint_at(l, path, NF_SEV_ERROR, "%s", nf_errmsg(l->ctx));
	else
		nf_diskrule_free(r);
}

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const json_t *ec = json_object_get(sec, "enroot_cache");
	const char *mount = json_string_value(json_object_get(ec, "mount"));
	const char *cache = json_string_value(json_object_get(json_object_get(
		json_object_get(nf_profile_json(l->profile), "containers"),
		"enroot"), "cache_path"));

	lint_rule(l, "storage.enroot_cache.rule",
		  json_string_value(json_object_get(ec, "rule")));
	lint_rule(l, "storage.install_disk",
		  json_string_value(json_object_get(sec, "install_disk")));
	if (json_string_value(json_object_get(ec, "rule")) &&
	    !strcmp(json_string_value(json_object_get(ec, "fs")) ?: "", "tmpfs"))
		nf_lint_at(l, "storage.enroot_cache.rule", NF_SEV_ERROR,
			   "a tmpfs enroot cache is on no disk: drop the disk rule or choose xfs or ext4");
	if (mount && cache && strncmp(cache, mount, strlen(mount)))
		nf_lint_at(l, "storage.enroot_cache.mount", NF_SEV_ERROR,
			   "enroot cache_path '%s' is not under the cache mount '%s'",
			   cache, mount);
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* The disk is chosen on the node (blkid rule); the image only holds the
 * mount point */
static int apply(struct nf_apply *a, const json_t *sec)
{
	const char *m = json_string_value(json_object_get(
		json_object_get(sec, "enroot_cache"), "mount"));

	if (!m)
		return 0;
	return nf_apply_mkdir(a, m, 0755, 0, 0);
}

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

#define INSTALLED_MANIFEST "/etc/nodeforge/installed.manifest.json"

/* The enroot cache section, the mount the profile puts it on and the path
 * enroot uses (containers.enroot.cache_path up to its per-user part, or
 * the mount itself) */
struct cache_want {
	const char *mount, *path, *fs, *rule;
	char shared[NF_ENROOT_DIR_MAX];
};

static int cache_want(struct nf_vcheck *c, const json_t *sec,
		      struct cache_want *w)
{
	const json_t *ec = json_object_get(sec, "enroot_cache");

	w->mount = json_string_value(json_object_get(ec, "mount"));
	w->fs = json_string_value(json_object_get(ec, "fs"));
	w->rule = json_string_value(json_object_get(ec, "rule"));
	w->path = json_string_value(json_object_get(json_object_get(
		json_object_get(nf_v_profile(c), "containers"), "enroot"),
		"cache_path"));
	if (w->path && nf_enroot_shared_dir(w->path, w->shared, sizeof(w->shared)) > 0)
		w->path = w->shared;
	else
		w->path = w->mount;
	return w->mount != NULL;
}

/* The mount holding the cache path (<sysroot>/proc/self/mountinfo, the
 * same lookup as `nodeforge disk where`); on failure the check's seen is
 * set */
static int cache_mount(struct nf_vcheck *c, const struct cache_want *w,
		       struct nf_mount_info *m)
{
	struct nf_ctx *ctx = nf_v_ctx(c);
	int r;

	memset(m, 0, sizeof(*m));
	if (!ctx) {
		nf_v_seen(c, "out of memory");
		return -ENOMEM;
	}
	if ((r = nf_mount_find(ctx, w->path, m)) < 0) {
		nf_v_seen(c, "%s", nf_errmsg(ctx));
		nf_v_remedy(c, "cat /proc/self/mountinfo   # is /proc mounted?");
	}
	return r;
}

static int check_mount(struct nf_vcheck *c, const json_t *sec)
{
	struct cache_want w;
	struct nf_mount_info m;

	if (!cache_want(c, sec, &w))
		return nf_v_skip(c, "the profile sets no enroot cache");
	if (strcmp(w.path, w.mount))
		nf_v_expect(c, "%s on the %s mount", w.path, w.mount);
	else
		nf_v_expect(c, "a mount on %s", w.mount);
	if (cache_mount(c, &w, &m) < 0)
		return NF_V_FAIL;
	if (!strcmp(m.mountpoint, w.mount)) {
		nf_v_seen(c, "%s (%s from %s)", m.mountpoint, m.fstype, m.source);
		nf_mount_info_clear(&m);
		return NF_V_PASS;
	}
	if (strlen(m.mountpoint) < strlen(w.mount))
		nf_v_seen(c, "%s is not a mount point: %s is on %s (%s from %s)",
			  w.mount, w.path, m.mountpoint, m.fstype, m.source);
	else
		nf_v_seen(c, "%s is on %s (%s from %s), not on the %s mount",
			  w.path, m.mountpoint, m.fstype, m.source, w.mount);
	if (w.rule)
		nf_v_remedy(c, "nodeforge disk pick '%s'   # then mount that disk on %s and add it to /etc/fstab",
			    w.rule, w.mount);
	else
		nf_v_remedy(c, "lsblk -o NAME,TRAN,SIZE,MOUNTPOINT; mount the local NVMe on %s and add it to /etc/fstab",
			    w.mount);
	nf_mount_info_clear(&m);
	return NF_V_FAIL;
}

static int check_fs(struct nf_vcheck *c, const json_t *sec)
{
	struct cache_want w;
	struct nf_mount_info m;

	if (!cache_want(c, sec, &w))
		return nf_v_skip(c, "the profile sets no enroot cache");
	if (!w.fs)
		return nf_v_skip(c, "the profile names no file system for the enroot cache");
	nf_v_expect(c, "%s on %s", w.fs, w.mount);
	if (cache_mount(c, &w, &m) < 0)
		return NF_V_FAIL;
	nf_v_seen(c, "%s on %s (from %s)", m.fstype, m.mountpoint, m.source);
	if (!strcmp(m.fstype, w.fs)) {
		nf_mount_info_clear(&m);
		return NF_V_PASS;
	}
	/* its contents are a cache: enroot imports again on demand */
	if (!strcmp(w.fs, "tmpfs"))
		nf_v_remedy(c, "umount %s && mount -t tmpfs tmpfs %s", w.mount, w.mount);
	else
		nf_v_remedy(c, "umount %s && mkfs.%s %s %s && mount %s %s   # the cache refills on demand",
			    w.mount, w.fs, strcmp(w.fs, "xfs") ? "-F" : "-f", m.source,
			    m.source, w.mount);
	nf_mount_info_clear(&m);
	return NF_V_FAIL;
}

static int check_device(struct nf_vcheck *c, const json_t *sec)
{
	struct nf_ctx *ctx = nf_v_ctx(c);
	struct nf_diskrule *rule = NULL;
	struct nf_disks disks = { 0 };
	struct nf_mount_info m = { 0 };
	struct cache_want w;
	char dropped[128], note[192] = "";
	const char *picked;
	size_t idx;
	int v = NF_V_FAIL;

	if (!cache_want(c, sec, &w))
		return nf_v_skip(c, "the profile sets no enroot cache");
	if (!w.rule)
		return nf_v_skip(c, "the profile sets no disk rule for the enroot cache");
	if (!ctx) {
		nf_v_seen(c, "out of memory");
		return NF_V_FAIL;
	}
	nf_v_expect(c, "%s on the disk '%s' picks", w.mount, w.rule);
	if (nf_diskrule_parse(ctx, w.rule, &rule) < 0) {
		nf_v_seen(c, "%s", nf_errmsg(ctx));
		nf_v_remedy(c, "nodeforge lint   # fix storage.enroot_cache.rule");
		return NF_V_FAIL;
	}
	/* the cache disk holds a file system now: "empty" chose it before */
	if (nf_diskrule_hardware_only(rule, dropped, sizeof(dropped)) > 0)
		snprintf(note, sizeof(note), " (%s not applied: they describe the disk before provisioning)",
			 dropped);
	if (nf_disk_scan_hw(ctx, &disks) < 0) {
		nf_v_seen(c, "%s", nf_errmsg(ctx));
		nf_v_remedy(c, "ls /sys/block   # is /sys mounted?");
		goto out;
	}
	if (nf_disk_pick(ctx, rule, &disks, &idx) < 0) {
		nf_v_seen(c, "%s%s", nf_errmsg(ctx), note);
		nf_v_remedy(c, "nodeforge disk list   # then fix storage.enroot_cache.rule in the profile");
		goto out;
	}
	picked = disks.v[idx].name;
	nf_v_expect(c, "%s on %s, the disk '%s' picks%s", w.mount, picked, w.rule, note);
	if (cache_mount(c, &w, &m) < 0)
		goto out;
	if (m.disk && !strcmp(m.disk, picked)) {
		nf_v_seen(c, "%s from %s (disk %s)", m.mountpoint, m.source, m.disk);
		v = NF_V_PASS;
		goto out;
	}
	if (m.disk)
		nf_v_seen(c, "%s from %s: disk %s, not %s", m.mountpoint, m.source, m.disk,
			  picked);
	else
		nf_v_seen(c, "%s from %s: not on a disk (%u:%u has no /sys/dev/block entry)",
			  m.mountpoint, m.source, m.major, m.minor);
	nf_v_remedy(c, "umount %s; mount /dev/%s (or its partition) on %s and fix /etc/fstab   # nodeforge disk pick '%s'",
		    m.mountpoint, picked, w.mount, w.rule);
out:
	nf_mount_info_clear(&m);
	nf_disks_free(&disks);
	nf_diskrule_free(rule);
	return v;
}

/* An entry's description, or "?" */
static const char *entry_desc(const struct nf_efi_entry *v, size_t n, int num)
{
	for (size_t i = 0; i < n; i++)
		if ((int)v[i].num == num)
			return v[i].description ? v[i].description : "";
	return "?";
}

/* After an install the node boots from its disk; a BootNext left on a
 * network entry (re-provisioning asked for, or a stale one) sends the next
 * reboot back to PXE.  Worth telling, never a reason to keep slurmd down. */
static int check_boot_next(struct nf_vcheck *c, const json_t *sec)
{
	struct nf_ctx *ctx = nf_v_ctx(c);
	struct nf_efi_entry *ents = NULL;
	struct nf_efi *efi = NULL;
	unsigned *order = NULL;
	size_t nents = 0, norder = 0;
	struct stat st;
	int yes = 0, num = -1, disk = -1, r;

	(void)sec;
	if (nf_v_stat(c, NF_VROOT, INSTALLED_MANIFEST, &st))
		return nf_v_skip(c, "not installed to disk (no %s)", INSTALLED_MANIFEST);
	if (!ctx) {
		nf_v_seen(c, "out of memory");
		return NF_V_FAIL;
	}
	if ((r = nf_efi_open(ctx, &efi)) == NF_E_NOHW)
		return nf_v_skip(c, "not an EFI system: %s", nf_errmsg(ctx));
	if (r)
		return nf_v_skip(c, "cannot read the EFI variables: %s", nf_errmsg(ctx));
	nf_v_expect(c, "the next reboot boots from the installed disk");
	if ((r = nf_efi_next_boot_is_network(efi, &yes, &num)) < 0 ||
	    (r = nf_efi_entries(efi, &ents, &nents)) < 0) {
		nf_efi_free(efi);
		return nf_v_skip(c, "cannot read the EFI variables: %s", nf_errmsg(ctx));
	}
	if (!yes) {
		if (num < 0)
			nf_v_seen(c, "no BootNext: BootOrder applies");
		else
			nf_v_seen(c, "BootNext is Boot%04X '%s'", (unsigned)num,
				  entry_desc(ents, nents, num));
		r = NF_V_PASS;
		goto out;
	}
	nf_v_seen(c, "reboot will boot from network: BootNext is Boot%04X '%s'",
		  (unsigned)num, entry_desc(ents, nents, num));
	/* the first active disk entry of BootOrder takes the next boot back */
	if (nf_efi_boot_order(efi, &order, &norder) == 0)
		for (size_t i = 0; i < norder && disk < 0; i++)
			for (size_t k = 0; k < nents; k++)
				if (ents[k].num == order[i] && ents[k].active &&
				    !ents[k].network)
					disk = (int)order[i];
	if (disk >= 0)
		nf_v_remedy(c, "nodeforge efi bootnext %04X   # unless a re-provisioning is intended",
			    (unsigned)disk);
	else
		nf_v_remedy(c, "efibootmgr --delete-bootnext   # unless a re-provisioning is intended");
	r = NF_V_WARN;
out:
	free(order);
	nf_efi_entries_free(ents, nents);
	nf_efi_free(efi);
	return r;
}

static const struct nf_check_def defs[] = {
	{ "storage.enroot_cache.mount", "the enroot cache is on its own mount", NULL, 0, 0,
	  check_mount,
	  .needs = "nvme" },
	{ "storage.enroot_cache.fs", "the enroot cache mount has the profile's file system",
	  "storage.enroot_cache.mount", 0, 0, check_fs,
	  .needs = "nvme" },
	{ "storage.enroot_cache.device", "the enroot cache mount is on the disk the rule picks",
	  "storage.enroot_cache.mount", 0, 0, check_device,
	  .needs = "nvme" },
	{ "storage.install.boot_next", "an installed node's next reboot boots from its disk",
	  NULL, 0, 0, check_boot_next,
	  .needs = "disk" },
};

static const struct nf_checkset checks = NF_CHECKSET(defs);

/* ---- end of check ---- */

const struct nf_facet nf_facet_storage = {
	.name = "storage",
	.summary = "local NVMe for the enroot cache",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = &checks,
};
