/* SPDX-License-Identifier: MIT */
/*
 * sysctl: kernel settings as data.  The profile's `sysctl:` mapping
 * (`vm.max_map_count: 262144`) is written to /etc/sysctl.d, which
 * systemd-sysctl applies at boot, and each key is checked against
 * /proc/sys on the node by its own check, sysctl.KEY.  Adding a setting
 * is one line of a profile.
 */
#include "internal.h"

#include <ctype.h>

#define SYSCTL_KEY_MAX 128
#define SYSCTL_VAL_MAX 256

/* A key names a file below /proc/sys as sysctl.d(5) reads it: words of
 * [A-Za-z0-9_-] joined by single separators.  When the first separator
 * is a dot, a dot separates and a slash stands for a dot in a word
 * ("net.ipv4.conf.eth0/100.rp_filter": the VLAN interface eth0.100);
 * when it is a slash, slashes separate and dots are kept
 * ("net/ipv4/conf/eth0.100/rp_filter").  With no separator first or
 * last and none next to another, no word is empty, "." or "..", so the
 * path stays below /proc/sys.  The path relative to /proc/sys into
 * out; -1 if the key is not one. */
static int key_path(const char *k, char *out, size_t sz)
{
	size_t n = strlen(k), i;
	int dotted = k[strcspn(k, "./")] == '.';

	if (!n || n > SYSCTL_KEY_MAX || n >= sz || !k[strcspn(k, "./")])
		return -1;
	for (i = 0; i < n; i++) {
		int sep = k[i] == '.' || k[i] == '/';

		if (!isalnum((unsigned char)k[i]) && !sep && k[i] != '_' && k[i] != '-')
			return -1;
		if (sep && (i == 0 || i == n - 1 || k[i + 1] == '.' || k[i + 1] == '/'))
			return -1;
		out[i] = dotted && sep ? (k[i] == '.' ? '/' : '.') : k[i];
	}
	out[n] = '\0';
	return 0;
}

/* The value as sysctl.d and /proc/sys write it: an integer, or a string
 * on one line (white space runs read as one space); -1 if neither */
static int value_text(const json_t *v, char *out, size_t sz)
{
	size_t w = 0;
	const char *s;

	if (json_is_integer(v)) {
		snprintf(out, sz, "%lld", (long long)json_integer_value(v));
		return 0;
	}
	if (!json_is_string(v) || strlen(json_string_value(v)) >= sz)
		return -1;
	for (s = json_string_value(v); *s; s++) {
		/* quotes: the remedy quotes the value for a shell */
		if (*s == '\n' || *s == '\r' || (unsigned char)*s < 0x09 ||
		    *s == '\'' || *s == '"')
			return -1;
		if (isspace((unsigned char)*s) && (!w || out[w - 1] == ' '))
			continue;
		out[w++] = isspace((unsigned char)*s) ? ' ' : *s;
	}
	while (w && out[w - 1] == ' ')
		w--;
	out[w] = '\0';
	return w ? 0 : -1;
}

struct setting {
	char file[SYSCTL_KEY_MAX + 1];  /* below /proc/sys */
	const char *key;
};

static int setting_cmp(const void *a, const void *b)
{
	const struct setting *x = a, *y = b;
	int r = strcmp(x->file, y->file);

	return r ? r : strcmp(x->key, y->key);
}

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	size_t n = 0;
	struct setting *set;
	const char *k;
	json_t *v;
	char path[256], val[SYSCTL_VAL_MAX];

	if (!(set = calloc(json_object_size(sec) + 1, sizeof(*set))))
		return -ENOMEM;
	json_object_foreach((json_t *)sec, k, v) {
		snprintf(path, sizeof(path), "sysctl.%s", k);
		if (key_path(k, set[n].file, sizeof(set[n].file)))
			nf_lint_at(l, path, NF_SEV_ERROR,
				   "sysctl key '%s' names no file below /proc/sys: words "
				   "of letters, digits, '_' and '-' joined by single '.' "
				   "or '/'", k);
		else if (value_text(v, val, sizeof(val)))
			nf_lint_at(l, path, NF_SEV_ERROR,
				   "sysctl '%s' must be an integer or a one-line string "
				   "without quotes", k);
		else
			set[n++].key = k;
	}
	/* two spellings of one setting: which one systemd-sysctl applies
	 * last would decide the value */
	qsort(set, n, sizeof(*set), setting_cmp);
	for (size_t i = 1; i < n; i++)
		if (!strcmp(set[i].file, set[i - 1].file)) {
			snprintf(path, sizeof(path), "sysctl.%s", set[i].key);
			nf_lint_at(l, path, NF_SEV_ERROR,
				   "sysctl '%s' and '%s' are the same setting, "
				   "/proc/sys/%s", set[i - 1].key, set[i].key, set[i].file);
		}
	free(set);
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Keys in name order, so the file does not depend on the profiles'
 * merge order */
static int apply(struct nf_apply *a, const json_t *sec)
{
	size_t n = json_object_size(sec), i = 0;
	const char **keys;
	struct nf_buf b = { 0 };
	const char *k;
	json_t *v;
	char val[SYSCTL_VAL_MAX], file[SYSCTL_KEY_MAX + 1];
	int r = 0;

	if (!n)
		return 0;
	if (!(keys = calloc(n, sizeof(*keys))))
		return -ENOMEM;
	json_object_foreach((json_t *)sec, k, v)
		keys[i++] = k;
	qsort(keys, n, sizeof(*keys), key_cmp);
	nf_apply_header(&b, "#", "sysctl");
	for (i = 0; i < n && !r; i++) {
		if (key_path(keys[i], file, sizeof(file)) ||
		    value_text(json_object_get(sec, keys[i]), val, sizeof(val)))
			r = nf_fail(a->ctx, NF_E_INVALID, "sysctl '%s' is not a key with "
				    "an integer or one-line value", keys[i]);
		else
			nf_buf_printf(&b, "%s = %s\n", keys[i], val);
	}
	free(keys);
	if (r) {
		nf_buf_free(&b);
		return r;
	}
	/* 90: after the distribution's own files (10-*, 50-*), which it
	 * overrides; a site's 99-local.conf still comes after */
	return nf_apply_write_buf(a, "/etc/sysctl.d/90-nodeforge.conf", &b, 0644, 0, 0);
}

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

static int check_key(struct nf_vcheck *c, const json_t *sec)
{
	const char *key = nf_v_id(c) + strlen("sysctl.");
	char file[SYSCTL_KEY_MAX + 1], path[SYSCTL_KEY_MAX + 16];
	char want[SYSCTL_VAL_MAX], have[SYSCTL_VAL_MAX];
	char *buf = NULL;
	int r;

	if (key_path(key, file, sizeof(file)) ||
	    value_text(json_object_get(sec, key), want, sizeof(want)))
		return nf_v_skip(c, "not a valid setting (nodeforge lint says why)");
	snprintf(path, sizeof(path), "/proc/sys/%s", file);
	nf_v_expect(c, "%s = %s", key, want);
	if ((r = nf_v_read(c, NF_VSYS, path, 4096, &buf, NULL))) {
		nf_v_seen(c, "no %s: %s", path, strerror(-r));
		nf_v_remedy(c, "the running kernel has no %s: load the module that "
			    "provides it, or remove it from the profile's sysctl", key);
		return NF_V_FAIL;
	}
	/* /proc/sys separates the fields of a vector with tabs and ends
	 * with a newline: compared as one line, single spaces */
	for (char *p = buf; *p; p++)
		if (*p == '\n')
			*p = ' ';
	{
		json_t *s = json_string(buf);

		if (!s || value_text(s, have, sizeof(have)))
			snprintf(have, sizeof(have), "%.*s", (int)strcspn(buf, " "), buf);
		json_decref(s);
	}
	free(buf);
	nf_v_seen(c, "%s", have);
	if (!strcmp(have, want))
		return NF_V_PASS;
	nf_v_remedy(c, "sysctl -w %s='%s'   # /etc/sysctl.d/90-nodeforge.conf sets it "
		    "at boot", key, want);
	return NF_V_FAIL;
}

static const struct nf_check_def defs[] = {
	{ "sysctl.KEY", "the running kernel has the profile's setting", NULL,
	  NF_CHECK_FAMILY, 0, check_key },
};

static const struct nf_checkset checks = NF_CHECKSET(defs);

/* ---- end of check ---- */

const struct nf_facet nf_facet_sysctl = {
	.name = "sysctl",
	.summary = "kernel settings (sysctl.d), each checked in /proc/sys",
	.map = true,
	.lint = lint,
	.apply = apply,
	.checks = &checks,
};
