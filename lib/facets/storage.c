/* SPDX-License-Identifier: MIT */
/* storage: local NVMe for the enroot cache, picked by a disk rule. */
#include "internal.h"

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

static int check_mount(struct nf_vcheck *c, const json_t *sec)
{
	const json_t *ec = json_object_get(sec, "enroot_cache");
	const char *mnt = json_string_value(json_object_get(ec, "mount"));
	const char *fs = json_string_value(json_object_get(ec, "fs"));
	char *buf = NULL, *save = NULL, seen_fs[64] = "";
	int found = 0;

	if (!mnt)
		return nf_v_skip(c, "the profile sets no enroot cache mount");
	nf_v_expect(c, "%s mounted%s%s", mnt, fs ? " as " : "", fs ? fs : "");
	if (nf_v_read(c, NF_VSYS, "/proc/mounts", 1 << 20, &buf, NULL)) {
		nf_v_seen(c, "no /proc/mounts");
		return NF_V_FAIL;
	}
	for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char dev[256], mp[512], type[64];

		if (sscanf(l, "%255s %511s %63s", dev, mp, type) == 3 && !strcmp(mp, mnt)) {
			found = 1;
			snprintf(seen_fs, sizeof(seen_fs), "%s", type);
		}
	}
	free(buf);
	if (!found) {
		nf_v_seen(c, "not mounted");
		nf_v_remedy(c, "lsblk -o NAME,TRAN,SIZE,MOUNTPOINT; mount the local NVMe on %s", mnt);
		return NF_V_FAIL;
	}
	nf_v_seen(c, "mounted as %s", seen_fs);
	if (!fs || !strcmp(fs, seen_fs))
		return NF_V_PASS;
	nf_v_remedy(c, "reformat the cache device as %s (its contents are a cache)", fs);
	return NF_V_FAIL;
}

static const struct nf_check_def defs[] = {
	{ "storage.enroot_cache.mount", "the enroot cache file system is mounted", NULL, 0, 0,
	  check_mount },
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
