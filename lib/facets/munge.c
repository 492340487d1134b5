/* SPDX-License-Identifier: MIT */
/*
 * munge: the key's place, owner, mode and size.  The key itself never
 * enters an image; its sha256 fingerprint comes from the site.
 */
#include "internal.h"

static const struct nf_field fields[] = {
	{ "key_path", NF_T_PATH },
	{ "key_size", NF_T_INT },
	{ "owner", NF_T_STR },
	{ "mode", NF_T_MODE },
	{ "max_ttl", NF_T_INT },
	{ "socket", NF_T_PATH },
	{ 0 }
};

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const char *mode = json_string_value(json_object_get(sec, "mode"));
	json_int_t size = json_integer_value(json_object_get(sec, "key_size"));

	if (mode && strcmp(mode, "0400") && strcmp(mode, "0600"))
		nf_lint_at(l, "munge.mode", NF_SEV_ERROR,
			   "munge key mode %s: munged refuses a key readable by "
			   "group or others; use 0400", mode);
	if (json_object_get(sec, "key_size") && (size < 32 || size > 1024))
		nf_lint_at(l, "munge.key_size", NF_SEV_ERROR,
			   "munge key size %lld: munged accepts 32 to 1024 bytes",
			   (long long)size);
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* munged's credential lifetime (--max-ttl) through a unit drop-in, and
 * the key directory's permissions.  The key itself never enters the
 * image: it arrives at first boot from the server. */
static int apply(struct nf_apply *a, const json_t *sec)
{
	const json_t *ttl = json_object_get(sec, "max_ttl");
	const char *key = json_string_value(json_object_get(sec, "key_path"));
	const char *owner = json_string_value(json_object_get(sec, "owner"));
	struct nf_buf b = { 0 };
	uid_t uid = 0;
	gid_t gid = 0;
	int r;

	if (json_is_integer(ttl)) {
		nf_apply_header(&b, "#", "munge");
		nf_buf_printf(&b, "[Service]\nExecStart=\n"
			      "ExecStart=/usr/sbin/munged $OPTIONS --max-ttl=%lld\n",
			      (long long)json_integer_value(ttl));
		if ((r = nf_apply_write_buf(a, "/etc/systemd/system/munge.service.d/"
					    "nodeforge.conf", &b, 0644, 0, 0)))
			return r;
	}
	/* Debian's munge postinst generates a key: a secret, and every node
	 * built from this image would share it.  The node gets the cluster's
	 * key at first boot. */
	if (key && (r = nf_apply_remove(a, key)))
		return r;
	if (key && !strncmp(key, "/etc/munge/", 11)) {
		/* the munge user exists once the package is installed; a bare
		 * root (tests) keeps root ownership */
		if (owner && nf_apply_user(a, owner, &uid, &gid) == -ENOENT)
			uid = 0, gid = 0;
		a->ctx->errmsg[0] = '\0';
		if ((r = nf_apply_mkdir(a, "/etc/munge", 0700, uid, gid)))
			return r;
	}
	return 0;
}

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_munge = {
	.name = "munge",
	.summary = "munge key and daemon",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = NULL,
};
