/* SPDX-License-Identifier: MIT */
/*
 * One line of `scontrol show node -o`: KEY=VALUE pairs separated by
 * spaces, where some values hold spaces themselves (OS=Linux 6.1 #1 SMP,
 * Reason=...).  A key starts after a space and is letters, digits and '_'
 * up to '='; a value runs to the next key.  Reason is printed last and
 * may hold anything ("a=b" included), so it runs to the end of the line.
 */
#include "internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <time.h>

static void put(char *dst, size_t sz, const char *v, size_t n)
{
	if (n >= sz)
		n = sz - 1;
	memcpy(dst, v, n);
	dst[n] = '\0';
}

/* Length of the key at s ("State" of "State=IDLE"), 0 when s is no key */
static size_t key_len(const char *s, const char *end)
{
	const char *k = s;

	while (k < end && (isalnum((unsigned char)*k) || *k == '_'))
		k++;
	return k > s && k < end && *k == '=' ? (size_t)(k - s) : 0;
}

/* "2026-12-05T07:52:58" in local time; 0 for "None", "Unknown" */
static long long parse_time(const char *v, size_t n)
{
	char buf[32];
	struct tm tm = { 0 };
	char *end;

	if (n == 0 || n >= sizeof(buf))
		return 0;
	memcpy(buf, v, n);
	buf[n] = '\0';
	end = strptime(buf, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end || *end)
		return 0;
	tm.tm_isdst = -1;
	return (long long)mktime(&tm);
}

int nf_slurm_node_parse(const char *line, size_t len, struct nf_slurm_node *out)
{
	const char *p = line, *end;
	int have_name = 0, have_state = 0;

	memset(out, 0, sizeof(*out));
	if (len > NF_SLURM_LINE_MAX)
		return NF_E_LIMIT;
	end = memchr(line, '\n', len);
	if (!end)
		end = line + len;
	while (p < end && *p == ' ')
		p++;
	while (p < end) {
		size_t kl = key_len(p, end);
		const char *v, *q;

		if (!kl)
			return NF_E_PARSE;
		v = p + kl + 1;
		q = v;
		if (kl == 6 && !memcmp(p, "Reason", 6))
			q = end;
		else
			while (q < end && !(*q == ' ' && q + 1 < end &&
					    key_len(q + 1, end)))
				q++;
		/* the value without the spaces that separate it from the next */
		{
			const char *ve = q;

			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\0'))
				ve--;
			if (memchr(v, '\0', (size_t)(ve - v)))
				return NF_E_PARSE;
			if (kl == 8 && !memcmp(p, "NodeName", 8)) {
				put(out->name, sizeof(out->name), v, (size_t)(ve - v));
				have_name = ve > v;
			} else if (kl == 5 && !memcmp(p, "State", 5)) {
				put(out->state, sizeof(out->state), v, (size_t)(ve - v));
				have_state = ve > v;
			} else if (kl == 6 && !memcmp(p, "Reason", 6)) {
				put(out->reason, sizeof(out->reason), v,
				    (size_t)(ve - v));
			} else if (kl == 15 && !memcmp(p, "SlurmdStartTime", 15)) {
				out->slurmd_start = parse_time(v, (size_t)(ve - v));
			}
		}
		p = q;
		while (p < end && *p == ' ')
			p++;
	}
	return have_name && have_state ? 0 : NF_E_PARSE;
}

int nf_slurm_state_has(const char *state, const char *word)
{
	size_t wl = strlen(word);
	const char *p = state;

	while (*p) {
		size_t n = strcspn(p, "+");
		size_t m = n;

		while (m && (p[m - 1] == '*' || p[m - 1] == '~' ||
			     p[m - 1] == '#' || p[m - 1] == '$' ||
			     p[m - 1] == '@' || p[m - 1] == '!' || p[m - 1] == '%'))
			m--;
		if (m == wl && !strncasecmp(p, word, wl))
			return 1;
		p += n;
		if (*p == '+')
			p++;
	}
	return 0;
}

/* The NodeName= line of HOST (a hostlist names it) in a cluster.conf
 * (slurm.conf syntax): its start, its length in *len; NULL when none */
const char *nf_cluster_conf_node_line(const char *conf, const char *host,
				      size_t *len)
{
	const char *l, *e;

	for (l = conf; l && *l; l = e ? e + 1 : NULL) {
		char **names = NULL, *list;
		size_t hl, n = 0;
		int me = 0;

		e = strchr(l, '\n');
		*len = e ? (size_t)(e - l) : strlen(l);
		if (*len < 9 || strncmp(l, "NodeName=", 9))
			continue;
		hl = strcspn(l + 9, " \t\n");
		if (!(list = strndup(l + 9, hl)))
			return NULL;
		if (!nf_hostlist_expand(list, &names, &n, 0))
			for (size_t j = 0; j < n; j++)
				me |= !strcmp(names[j], host);
		nf_strv_free(names, n);
		free(list);
		if (me)
			return l;
	}
	return NULL;
}

/* The value of KEY= (a whole word, any case, as Slurm reads keys) on the
 * NodeName= line of HOST: 1 and out set, else 0 */
int nf_cluster_conf_node_value(const char *conf, const char *host,
			       const char *key, char *out, size_t outsz)
{
	size_t len, kl = strlen(key);
	const char *l = nf_cluster_conf_node_line(conf, host, &len), *w;

	for (w = l; w && w < l + len; w += strcspn(w, " \t"), w += strspn(w, " \t")) {
		size_t wl = strcspn(w, " \t\n");

		if (w + wl > l + len)
			wl = (size_t)(l + len - w);
		if (wl > kl && w[kl] == '=' && !strncasecmp(w, key, kl)) {
			snprintf(out, outsz, "%.*s", (int)(wl - kl - 1), w + kl + 1);
			return 1;
		}
	}
	return 0;
}

/* The GPU type of HOST in a cluster.conf: TYPE of the first "gpu:TYPE:N"
 * in the Gres= of its NodeName line; 1 when found, 0 otherwise */
int nf_cluster_conf_gpu_type(const char *conf, const char *host, char *out,
			     size_t outsz)
{
	char gres[1024];

	if (!nf_cluster_conf_node_value(conf, host, "Gres", gres, sizeof(gres)))
		return 0;
	for (const char *w = gres; *w; w += strspn(w, ",")) {
		size_t wl = strcspn(w, ",");
		const char *c;

		if (wl > 4 && !strncmp(w, "gpu:", 4) &&
		    (c = memchr(w + 4, ':', wl - 4)) && c > w + 4) {
			snprintf(out, outsz, "%.*s", (int)(c - (w + 4)), w + 4);
			return 1;
		}
		w += wl;
	}
	return 0;
}
