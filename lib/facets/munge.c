/* SPDX-License-Identifier: MIT */
/*
 * munge: the key's place, owner, mode and size.  The key itself never
 * enters an image; its sha256 fingerprint comes from the site.
 */
#include "internal.h"

#define NF_MUNGE_KEY_DEFAULT "/etc/munge/munge.key"

static const struct nf_field fields[] = {
	{ "key_path", NF_T_PATH },
	{ "key_size", NF_T_INT },
	{ "owner", NF_T_STR },
	{ "mode", NF_T_MODE },
	{ "max_ttl", NF_T_INT },
	{ "socket", NF_T_PATH },
	{ 0 }
};

/* Where the key must be: the verifier's checks below, and enrollment and
 * rotation (lib/enroll_client.c, lib/enroll_rotate.c), which write it */
const char *nf_munge_key_path(const json_t *sec)
{
	const char *p = json_string_value(json_object_get(sec, "key_path"));

	return p ? p : NF_MUNGE_KEY_DEFAULT;
}

const char *nf_munge_key_owner(const json_t *sec)
{
	const char *o = json_string_value(json_object_get(sec, "owner"));

	return o ? o : "munge";
}

unsigned nf_munge_key_mode(const json_t *sec)
{
	const char *m = json_string_value(json_object_get(sec, "mode"));

	return m ? (unsigned)strtoul(m, NULL, 8) : 0400;
}

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const char *mode = json_string_value(json_object_get(sec, "mode"));
	const char *key = json_string_value(json_object_get(sec, "key_path"));
	json_int_t size = json_integer_value(json_object_get(sec, "key_size"));

	if (mode && strcmp(mode, "0400") && strcmp(mode, "0600"))
		nf_lint_at(l, "munge.mode", NF_SEV_ERROR,
			   "munge key mode %s: munged refuses a key readable by "
			   "group or others; use 0400", mode);
	if (key && key[strspn(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			       "0123456789._/+-")])
		nf_lint_at(l, "munge.key_path", NF_SEV_ERROR,
			   "munge key path '%s': munged's unit and the enrollment "
			   "units name it; use letters, digits and . _ + - /", key);
	if (json_object_get(sec, "key_size") && (size < 32 || size > 1024))
		nf_lint_at(l, "munge.key_size", NF_SEV_ERROR,
			   "munge key size %lld: munged accepts 32 to 1024 bytes",
			   (long long)size);
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* The common overlay's units that test for the key: enrollment runs while
 * it is absent, the rotation agent once it is there */
static const struct {
	const char *unit, *cond;
} key_units[] = {
	{ "nodeforge-enroll", "!" },
	{ "nodeforge-rotate", "" },
};

/* munged's credential lifetime (--max-ttl) and, for a key that is not at
 * /etc/munge/munge.key, its --key-file, through a unit drop-in; the key
 * directory's permissions.  The key itself never enters the
 * image: it arrives at first boot from the server. */
static int apply(struct nf_apply *a, const json_t *sec)
{
	const json_t *ttl = json_object_get(sec, "max_ttl");
	const char *key = json_string_value(json_object_get(sec, "key_path"));
	const char *owner = json_string_value(json_object_get(sec, "owner"));
	struct nf_buf b = { 0 };
	uid_t uid = 0;
	gid_t gid = 0;
	int r, moved;

	/* munged reads /etc/munge/munge.key unless told otherwise */
	moved = key && strcmp(key, NF_MUNGE_KEY_DEFAULT);
	if (json_is_integer(ttl) || moved) {
		nf_apply_header(&b, "#", "munge");
		nf_buf_printf(&b, "[Service]\nExecStart=\n"
			      "ExecStart=/usr/sbin/munged $OPTIONS");
		if (json_is_integer(ttl))
			nf_buf_printf(&b, " --max-ttl=%lld",
				      (long long)json_integer_value(ttl));
		if (moved)
			nf_buf_printf(&b, " --key-file=%s", key);
		nf_buf_printf(&b, "\n");
		if ((r = nf_apply_write_buf(a, "/etc/systemd/system/munge.service.d/"
					    "nodeforge.conf", &b, 0644, 0, 0)))
			return r;
	}
	/* the enrollment and rotation units of the common overlay test for
	 * the key at the default place: a moved key moves their conditions
	 * (an empty assignment resets the unit's own) */
	for (size_t i = 0; moved && i < NF_ARRAY_SIZE(key_units); i++) {
		char dropin[128], unit[96];

		snprintf(unit, sizeof(unit), "/etc/systemd/system/%s.service",
			 key_units[i].unit);
		if (!nf_apply_exists(a, unit))
			continue;
		nf_apply_header(&b, "#", "munge");
		nf_buf_printf(&b, "[Unit]\nConditionPathExists=\n"
			      "ConditionPathExists=%s%s\n", key_units[i].cond, key);
		snprintf(dropin, sizeof(dropin), "/etc/systemd/system/%s.service.d/"
			 "nodeforge-key.conf", key_units[i].unit);
		if ((r = nf_apply_write_buf(a, dropin, &b, 0644, 0, 0)))
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
		unsigned m = nf_err_mark(a->ctx);

		if (owner && nf_apply_user(a, owner, &uid, &gid) == -ENOENT)
			uid = 0, gid = 0;
		nf_err_drop(a->ctx, m);
		if ((r = nf_apply_mkdir(a, "/etc/munge", 0700, uid, gid)))
			return r;
	}
	/* ... by enrollment: the common overlay's unit, enabled as its
	 * [Install] says (multi-user.target, and munge.service requires it) */
	if (nf_apply_exists(a, "/etc/systemd/system/nodeforge-enroll.service")) {
		if ((r = nf_apply_enable(a, "nodeforge-enroll")))
			return r;
		if ((r = nf_apply_symlink(a, "/etc/systemd/system/munge.service.requires/"
					  "nodeforge-enroll.service",
					  "/etc/systemd/system/nodeforge-enroll.service")))
			return r;
	}
	return 0;
}

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* The name of user or group `id` in the node's own /etc/passwd or
 * /etc/group (both keep the id in their third field); else the number */
static void id_name(struct nf_vcheck *c, const char *file, unsigned id,
		    char *out, size_t sz)
{
	char *db = NULL, *save = NULL;

	snprintf(out, sz, "%u", id);
	if (nf_v_read(c, NF_VROOT, file, 1 << 20, &db, NULL))
		return;
	for (char *l = strtok_r(db, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *f1 = strchr(l, ':'), *f2 = f1 ? strchr(f1 + 1, ':') : NULL;

		if (f2 && strtoul(f2 + 1, NULL, 10) == id) {
			*f1 = '\0';
			snprintf(out, sz, "%s", l);
			break;
		}
	}
	free(db);
}

/* The login group (gid) of user `name` in the node's own /etc/passwd;
 * 0 or -ENOENT */
static int user_gid(struct nf_vcheck *c, const char *name, unsigned *gid)
{
	size_t n = strlen(name);
	char *pw = NULL, *save = NULL;
	int r = -ENOENT;

	if (nf_v_read(c, NF_VROOT, "/etc/passwd", 1 << 20, &pw, NULL))
		return r;
	for (char *l = strtok_r(pw, "\n", &save); l && r; l = strtok_r(NULL, "\n", &save)) {
		char *f2 = !strncmp(l, name, n) && l[n] == ':' ? strchr(l + n + 1, ':') : NULL;
		char *f3 = f2 ? strchr(f2 + 1, ':') : NULL;

		if (f3) {
			*gid = (unsigned)strtoul(f3 + 1, NULL, 10);
			r = 0;
		}
	}
	free(pw);
	return r;
}

static int check_present(struct nf_vcheck *c, const json_t *sec)
{
	struct stat st;
	int r = nf_v_stat(c, NF_VROOT, nf_munge_key_path(sec), &st);

	nf_v_expect(c, "a regular file '%s'", nf_munge_key_path(sec));
	if (r == 0 && S_ISREG(st.st_mode)) {
		nf_v_seen(c, "present");
		return NF_V_PASS;
	}
	nf_v_seen(c, "%s", r ? strerror(-r) : "not a regular file");
	nf_v_remedy(c, "nodeforge enroll   # fetches the munge key from the boot server");
	return NF_V_FAIL;
}

static int check_mode(struct nf_vcheck *c, const json_t *sec)
{
	unsigned w = nf_munge_key_mode(sec);
	struct stat st;

	if (nf_v_stat(c, NF_VROOT, nf_munge_key_path(sec), &st))
		return NF_V_FAIL;
	nf_v_expect(c, "mode %04o", w);
	nf_v_seen(c, "mode %04o", (unsigned)st.st_mode & 07777);
	if ((st.st_mode & 07777) == w)
		return NF_V_PASS;
	nf_v_remedy(c, "chmod %04o %s && systemctl restart munge", w,
		    nf_munge_key_path(sec));
	return NF_V_FAIL;
}

static int check_owner(struct nf_vcheck *c, const json_t *sec)
{
	const char *want = nf_munge_key_owner(sec);
	char name[64];
	struct stat st;

	if (nf_v_stat(c, NF_VROOT, nf_munge_key_path(sec), &st))
		return NF_V_FAIL;
	id_name(c, "/etc/passwd", st.st_uid, name, sizeof(name));
	nf_v_expect(c, "owner %s", want);
	nf_v_seen(c, "owner %s", name);
	if (!strcmp(name, want))
		return NF_V_PASS;
	nf_v_remedy(c, "chown %s:%s %s && systemctl restart munge", want, want,
		    nf_munge_key_path(sec));
	return NF_V_FAIL;
}

/* The key's group is its owner's login group (chown munge:munge), as
 * enrollment and rotation leave it: another group is a key handled by
 * hand, and with a group-readable mode its members could forge
 * credentials */
static int check_group(struct nf_vcheck *c, const json_t *sec)
{
	const char *owner = nf_munge_key_owner(sec);
	char want[64], have[64];
	struct stat st;
	unsigned gid;

	if (nf_v_stat(c, NF_VROOT, nf_munge_key_path(sec), &st))
		return NF_V_FAIL;
	if (user_gid(c, owner, &gid))
		return nf_v_skip(c, "no user '%s' in /etc/passwd", owner);
	id_name(c, "/etc/group", gid, want, sizeof(want));
	id_name(c, "/etc/group", st.st_gid, have, sizeof(have));
	nf_v_expect(c, "group %s (%s's login group)", want, owner);
	nf_v_seen(c, "group %s", have);
	if (st.st_gid == gid)
		return NF_V_PASS;
	nf_v_remedy(c, "chown %s:%s %s && systemctl restart munge", owner, want,
		    nf_munge_key_path(sec));
	return NF_V_FAIL;
}

static int check_size(struct nf_vcheck *c, const json_t *sec)
{
	json_int_t want = json_integer_value(json_object_get(sec, "key_size"));
	struct stat st;

	if (!want)
		return nf_v_skip(c, "the profile sets no munge.key_size");
	if (nf_v_stat(c, NF_VROOT, nf_munge_key_path(sec), &st))
		return NF_V_FAIL;
	nf_v_expect(c, "%lld bytes", (long long)want);
	nf_v_seen(c, "%lld bytes", (long long)st.st_size);
	if (st.st_size == want)
		return NF_V_PASS;
	nf_v_remedy(c, "nodeforge enroll   # the key on this node is not the cluster's");
	return NF_V_FAIL;
}

static int check_fingerprint(struct nf_vcheck *c, const json_t *sec)
{
	const char *want = json_string_value(json_object_get(json_object_get(
		json_object_get(nf_v_profile(c), "site"), "fingerprints"), "munge_key"));
	const char *prev;
	char hex[NF_SHA256_HEX];
	char *key = NULL;
	size_t len = 0;
	int r;

	if (!want)
		return nf_v_skip(c, "the site records no munge_key fingerprint");
	if ((r = nf_v_read(c, NF_VROOT, nf_munge_key_path(sec), 1 << 16, &key,
			   &len))) {
		nf_v_seen(c, "cannot read the key: %s", r < 0 ? strerror(-r) : nf_strerror(r));
		return NF_V_FAIL;
	}
	nf_sha256_hex(key, len, hex);
	explicit_bzero(key, len);
	free(key);
	if (!strncmp(want, "sha256:", 7))
		want += 7;
	nf_v_expect(c, "sha256 %.16s...", want);
	nf_v_seen(c, "sha256 %.16s...", hex);
	if (!strcasecmp(hex, want))
		return NF_V_PASS;
	prev = json_string_value(json_object_get(json_object_get(json_object_get(
		nf_v_profile(c), "site"), "fingerprints"), "munge_key.previous"));
	if (prev && !strncmp(prev, "sha256:", 7))
		prev += 7;
	if (prev && !strcasecmp(hex, prev)) {
		nf_v_seen(c, "sha256 %.16s... (the key before the last rotation)", hex);
		nf_v_remedy(c, "%s", nf_munge_fingerprint_remedy(NF_MUNGE_FP_PREVIOUS));
		return NF_V_FAIL;
	}
	{
		/* the remedy names this node (its short host name) */
		const char *t = nf_munge_fingerprint_remedy(NF_MUNGE_FP_OTHER);
		const char *at = strstr(t, "NODE");
		char *host = NULL;

		if (at && !nf_v_read(c, NF_VSYS, "/proc/sys/kernel/hostname", 256, &host, NULL)) {
			host[strcspn(host, ".\n")] = '\0';
			nf_v_remedy(c, "%.*s%s%s", (int)(at - t), t, *host ? host : "NODE", at + 4);
		} else {
			nf_v_remedy(c, "%s", t);
		}
		free(host);
	}
	return NF_V_FAIL;
}

static int check_roundtrip(struct nf_vcheck *c, const json_t *sec)
{
	const char *sock = json_string_value(json_object_get(sec, "socket"));
	const char *enc[] = { "munge", "-n", "-S", sock ? sock : "/run/munge/munge.socket.2", NULL };
	const char *dec[] = { "unmunge", "-S", enc[3], NULL };
	char *cred = NULL, *out = NULL;
	int st = 0, r;

	nf_v_expect(c, "munge | unmunge through %s: STATUS: Success", enc[3]);
	nf_v_remedy(c, "systemctl restart munge && journalctl -u munge -n 20");
	if ((r = nf_v_exec(c, enc, NULL, &cred, &st)))
		goto err;
	if (st) {
		cred[strcspn(cred, "\n")] = '\0';
		nf_v_seen(c, "munge exited %d: %.200s", st, cred);
		free(cred);
		return NF_V_FAIL;
	}
	r = nf_v_exec(c, dec, cred, &out, &st);
	free(cred);
	if (r)
		goto err;
	{
		char *status = strstr(out, "STATUS:");
		int ok = !st && status && strstr(status, "Success");

		if (status)
			status[strcspn(status, "\n")] = '\0';
		else
			out[strcspn(out, "\n")] = '\0';
		nf_v_seen(c, "%.200s", status ? status : out);
		free(out);
		return ok ? NF_V_PASS : NF_V_FAIL;
	}
err:
	if (r == NF_E_TIMEOUT)
		return NF_V_HUNG;
	nf_v_seen(c, "cannot run munge: %s", r < 0 ? strerror(-r) : nf_strerror(r));
	return NF_V_FAIL;
}

static const struct nf_check_def defs[] = {
	{ "munge.key.present", "the munge key is installed", NULL, 0, 0, check_present },
	{ "munge.key.mode", "the key's mode", "munge.key.present", 0, 0, check_mode },
	{ "munge.key.owner", "the key's owner", "munge.key.present", 0, 0, check_owner },
	{ "munge.key.group", "the key's group", "munge.key.owner", 0, 0, check_group },
	{ "munge.key.size", "the key's size", "munge.key.present", 0, 0, check_size },
	{ "munge.key.fingerprint", "the key is the cluster's (site fingerprint)",
	  "munge.key.present", 0, 0, check_fingerprint,
	  .needs = "cluster-key" },
	{ "munge.roundtrip", "a credential round trip through munged",
	  "munge.key.mode munge.key.owner munge.key.fingerprint", NF_CHECK_PROBE, 3000,
	  check_roundtrip },
};

static const struct nf_checkset checks = NF_CHECKSET(defs);

/* ---- end of check ---- */

/* The key: enrollment delivers it; it signs the node's verdicts */
static size_t secrets(const json_t *sec, struct nf_secret_file *out, size_t max)
{
	if (!max)
		return 0;
	out[0] = (struct nf_secret_file){
		.id = "ci.secrets.munge_key",
		.path = nf_munge_key_path(sec),
		.name = "munge.key",
		.what = "munge key in the image",
		.remedy = "keys are delivered at enrollment (nodeforge enroll), "
			  "never built in",
		.flags = NF_SECRET_SIGNS,
	};
	return 1;
}

const struct nf_facet nf_facet_munge = {
	.name = "munge",
	.summary = "munge key and daemon",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = &checks,
	.secrets = secrets,
};
