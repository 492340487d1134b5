/* SPDX-License-Identifier: MIT */
/*
 * gres render's texts: the parsers of what it reads (PCI addresses, a
 * GPU's /proc/driver/nvidia information, the build's gres.auto.json), the
 * NVLink counts between the node's GPUs, the gres.conf lines of an entry
 * and their merge into gres.conf between the two marker comments.  The
 * node's side (discovery, its files, nf_gres_render) is lib/gres.c.
 */
#include "internal.h"
#include "internal/gres.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AUTO_ENTRIES_MAX 16
#define REMOTE_MAX 64           /* NVLinks per GPU (NVML has 18) */

static const char block_begin[] = "# BEGIN nodeforge gres render";
static const char block_end[] = "# END nodeforge gres render";

/* ------------------------------------------------------------ parsers */

static int hexfield(const char **p, unsigned maxdigits, unsigned long *out)
{
	const char *s = *p;
	unsigned n = 0;

	*out = 0;
	while (isxdigit((unsigned char)*s) && n < maxdigits + 1) {
		*out = *out * 16 + (unsigned long)(isdigit((unsigned char)*s)
			? *s - '0' : (tolower((unsigned char)*s) - 'a' + 10));
		s++;
		n++;
	}
	if (!n || n > maxdigits)
		return -1;
	*p = s;
	return 0;
}

int nf_pci_addr_norm(const char *s, char out[NF_PCI_ADDR_LEN])
{
	unsigned long dom, bus, dev, fn;
	const char *p = s;

	while (*p == ' ' || *p == '\t')
		p++;
	if (hexfield(&p, 8, &dom) || *p++ != ':' || hexfield(&p, 2, &bus) ||
	    *p++ != ':' || hexfield(&p, 2, &dev) || *p++ != '.' ||
	    hexfield(&p, 1, &fn))
		return NF_E_PARSE;
	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	if (*p || dom > 0xfffff || dev > 0x1f || fn > 7)
		return NF_E_PARSE;
	snprintf(out, NF_PCI_ADDR_LEN, "%04lx:%02lx:%02lx.%lx", dom, bus, dev,
		 fn);
	return 0;
}

/* The value after "Key:" on a line of `text` starting with key; copied
 * into val (trimmed); 0 or -1 */
static int info_value(const char *text, const char *key, char *val,
		      size_t valsz)
{
	size_t klen = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		const char *e, *v;
		size_t n;

		if (strncmp(l, key, klen) || l[klen] != ':')
			continue;
		v = l + klen + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		e = strchr(v, '\n');
		n = e ? (size_t)(e - v) : strlen(v);
		while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r'))
			n--;
		if (n >= valsz)
			return -1;
		memcpy(val, v, n);
		val[n] = '\0';
		return 0;
	}
	return -1;
}

int nf_gres_parse_information(const char *text, int *minor,
			      char bus_id[NF_PCI_ADDR_LEN])
{
	char v[64];
	char *end;
	long m;

	if (info_value(text, "Device Minor", v, sizeof(v)) ||
	    !isdigit((unsigned char)v[0]))
		return NF_E_PARSE;
	m = strtol(v, &end, 10);
	if (*end || m < 0 || m > NF_GRES_MINOR_MAX)
		return NF_E_PARSE;
	if (info_value(text, "Bus Location", v, sizeof(v)) ||
	    nf_pci_addr_norm(v, bus_id))
		return NF_E_PARSE;
	*minor = (int)m;
	return 0;
}

/* A value gres.conf can hold on one line as Key=Value */
static int conf_word(const char *s)
{
	if (!*s || strlen(s) > 1024)
		return 0;
	for (; *s; s++)
		if (!isgraph((unsigned char)*s) || *s == '#' || *s == '"')
			return 0;
	return 1;
}

int nf_gres_auto_parse(struct nf_ctx *ctx, const char *buf, size_t len,
		       json_t **out)
{
	static const char *const strs[] = { "name", "type", "file", "cores",
					    "links" };
	json_error_t err;
	json_t *doc, *g;
	size_t i;

	*out = NULL;
	if (len > NF_GRES_AUTO_MAX)
		return nf_fail(ctx, NF_E_LIMIT, "'%s' is larger than %u bytes",
			       NF_GRES_AUTO_JSON, NF_GRES_AUTO_MAX);
	doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
	if (!doc)
		return nf_fail(ctx, NF_E_PARSE, "%s:%d:%d: %s", NF_GRES_AUTO_JSON,
			       err.line, err.column, err.text);
	if (!json_is_array(doc) || json_array_size(doc) > AUTO_ENTRIES_MAX) {
		json_decref(doc);
		return nf_fail(ctx, NF_E_INVALID, "'%s' must be a list of at "
			       "most %d gres entries", NF_GRES_AUTO_JSON,
			       AUTO_ENTRIES_MAX);
	}
	json_array_foreach(doc, i, g) {
		const char *k;
		json_t *v;

		if (!json_is_object(g) ||
		    !json_is_string(json_object_get(g, "name"))) {
			json_decref(doc);
			return nf_fail(ctx, NF_E_INVALID, "'%s': entry %zu has "
				       "no name", NF_GRES_AUTO_JSON, i);
		}
		json_object_foreach(g, k, v) {
			int ok = 0;

			for (size_t s = 0; s < NF_ARRAY_SIZE(strs); s++)
				if (!strcmp(k, strs[s]))
					ok = json_is_string(v) &&
					     conf_word(json_string_value(v));
			if (!strcmp(k, "count"))
				ok = json_is_integer(v) && json_integer_value(v) >= 0 &&
				     json_integer_value(v) <= NF_GRES_MAX_GPUS;
			if (!ok) {
				int r = nf_fail(ctx, NF_E_INVALID, "'%s': entry %zu: "
						"'%.64s' is not a gres field or has a "
						"value gres.conf cannot hold",
						NF_GRES_AUTO_JSON, i, k);

				json_decref(doc);
				return r;
			}
		}
	}
	*out = doc;
	return 0;
}

/* --------------------------------------------------------- topology */

static int find_bus(const struct nf_gres_topo *t, const char *bus)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->gpu[i].bus_id, bus))
			return (int)i;
	return -1;
}

/* The far ends of one GPU's NVLinks, normalized */
struct remotes {
	size_t n;
	char id[REMOTE_MAX][NF_PCI_ADDR_LEN];
};

static int has_remote(const struct remotes *r, const char *id)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->id[i], id))
			return 1;
	return 0;
}

int nf_gres_topo_links(struct nf_ctx *ctx, struct nf_gres_topo *t,
		       const json_t *nvml)
{
	const json_t *gpus = json_object_get(nvml, "gpus");
	struct remotes *rem;
	int *seen;
	json_t *g;
	size_t i;

	memset(t->links, 0, sizeof(t->links));
	t->nvlink_known = 0;
	if (!json_is_array(gpus))
		return 0;
	/* every GPU must say where its links go, or nothing is known */
	json_array_foreach(gpus, i, g)
		if (!json_is_array(json_object_get(g, "nvlink_remote")) ||
		    !json_is_string(json_object_get(g, "pci_bus_id")))
			return 0;
	if (!(rem = calloc(t->n ? t->n : 1, sizeof(*rem))))
		return -ENOMEM;
	if (!(seen = calloc(t->n ? t->n : 1, sizeof(*seen)))) {
		free(rem);
		return -ENOMEM;
	}
	json_array_foreach(gpus, i, g) {
		const char *bus = json_string_value(json_object_get(g, "pci_bus_id"));
		char id[NF_PCI_ADDR_LEN];
		json_t *r;
		size_t j;
		int k;

		if (nf_pci_addr_norm(bus, id) || (k = find_bus(t, id)) < 0 ||
		    seen[k]++) {
			free(rem);
			free(seen);
			return nf_fail(ctx, NF_E_CONFLICT, "NVML reports GPU "
				       "'%.32s' that /proc/driver/nvidia does not "
				       "list once: nothing written", bus);
		}
		json_array_foreach(json_object_get(g, "nvlink_remote"), j, r) {
			if (rem[k].n >= REMOTE_MAX ||
			    nf_pci_addr_norm(json_string_value(r) ?: "",
					     rem[k].id[rem[k].n])) {
				free(rem);
				free(seen);
				return nf_fail(ctx, NF_E_INVALID, "NVML NVLink data "
					       "of GPU '%s' is not a list of at "
					       "most %d PCI addresses", id,
					       REMOTE_MAX);
			}
			rem[k].n++;
		}
	}
	for (size_t k = 0; k < t->n; k++)
		if (!seen[k]) {
			free(rem);
			free(seen);
			return nf_fail(ctx, NF_E_CONFLICT, "NVML does not report "
				       "GPU '%s' (/dev/nvidia%d): nothing written",
				       t->gpu[k].bus_id, t->gpu[k].minor);
		}
	for (size_t a = 0; a < t->n; a++)
		for (size_t l = 0; l < rem[a].n; l++) {
			int peer = find_bus(t, rem[a].id[l]);

			if (peer >= 0) {
				if ((size_t)peer != a)
					t->links[a][peer]++;
				continue;
			}
			/* an NVSwitch: the link reaches every GPU on it */
			for (size_t b = 0; b < t->n; b++)
				if (b != a && has_remote(&rem[b], rem[a].id[l]))
					t->links[a][b]++;
		}
	t->nvlink_known = 1;
	free(rem);
	free(seen);
	return 0;
}

/* ------------------------------------------------------------- render */

int nf_gres_any_link(const struct nf_gres_topo *t)
{
	for (size_t a = 0; a < t->n; a++)
		for (size_t b = 0; b < t->n; b++)
			if (t->links[a][b])
				return 1;
	return 0;
}

/* The topology indexes `entry` covers, from its File= list of
 * /dev/nvidiaN (else every GPU) */
int nf_gres_entry_gpus(struct nf_ctx *ctx, const json_t *entry,
		       const struct nf_gres_topo *t, size_t *idx, size_t *n)
{
	const char *file = json_string_value(json_object_get(entry, "file"));
	char **names;
	size_t nn;
	int r;

	*n = 0;
	if (!file) {
		for (size_t i = 0; i < t->n; i++)
			idx[(*n)++] = i;
		return 0;
	}
	if ((r = nf_hostlist_expand(file, &names, &nn, NF_GRES_MAX_GPUS)))
		return nf_fail(ctx, NF_E_INVALID, "'%s': File=%s is not a list "
			       "of at most %d devices", NF_GRES_AUTO_JSON, file,
			       NF_GRES_MAX_GPUS);
	for (size_t i = 0; i < nn; i++) {
		const char *d = names[i];
		char *end;
		long m = -1;
		size_t k;

		if (!strncmp(d, "/dev/nvidia", 11) && isdigit((unsigned char)d[11]))
			m = strtol(d + 11, &end, 10);
		if (m < 0 || *end) {
			r = nf_fail(ctx, NF_E_INVALID, "'%s': '%s' is not an "
				    "NVIDIA GPU device (/dev/nvidiaN)", NF_GRES_AUTO_JSON, d);
			break;
		}
		for (k = 0; k < t->n && t->gpu[k].minor != m; k++)
			;
		if (k == t->n) {
			r = nf_fail(ctx, NF_E_CONFLICT, "'%s' (%s) is not a GPU "
				    "of this node: nothing written", d, NF_GRES_AUTO_JSON);
			break;
		}
		idx[(*n)++] = k;
	}
	nf_strv_free(names, nn);
	return r;
}

int nf_gres_entry_lines(struct nf_ctx *ctx, const json_t *entry,
			const struct nf_gres_topo *t, unsigned ncores,
			int nvlink_required, struct nf_buf *out)
{
	const char *name = json_string_value(json_object_get(entry, "name"));
	const char *type = json_string_value(json_object_get(entry, "type"));
	const char *cores = json_string_value(json_object_get(entry, "cores"));
	const char *links = json_string_value(json_object_get(entry, "links"));
	int auto_cores = cores && !strcmp(cores, "auto");
	int auto_links = links && !strcmp(links, "auto");
	size_t idx[NF_GRES_MAX_GPUS], n;
	int r;

	if (!name || strcmp(name, "gpu"))
		return nf_fail(ctx, NF_E_UNSUPPORTED, "'%s': gres '%s' cannot be "
			       "rendered from the topology: only 'gpu' can",
			       NF_GRES_AUTO_JSON, name ? name : "?");
	if (auto_cores && (!ncores || ncores > NF_GRES_MAX_CPUS))
		return nf_fail(ctx, NF_E_INVALID, "Cores=auto needs the node's "
			       "shape: the profile has no slurm.node sockets and "
			       "cores_per_socket");
	if (auto_links && nvlink_required && !t->nvlink_known)
		return nf_fail(ctx, NF_E_NOHW, "the profile declares NVLink GPUs "
			       "but NVML gives no NVLink data (is "
			       "'libnvidia-ml.so.1' installed and the driver "
			       "loaded?): nothing written");
	if (auto_links && nvlink_required && !nf_gres_any_link(t))
		return nf_fail(ctx, NF_E_CONFLICT, "the profile declares NVLink "
			       "GPUs but NVML reports no active NVLink between "
			       "them (fabric manager down?): nothing written");
	if ((r = nf_gres_entry_gpus(ctx, entry, t, idx, &n)))
		return r;
	for (size_t i = 0; i < n; i++) {
		const struct nf_gres_gpu *g = &t->gpu[idx[i]];

		nf_buf_printf(out, "Name=gpu");
		if (type)
			nf_buf_printf(out, " Type=%s", type);
		nf_buf_printf(out, " File=/dev/nvidia%d", g->minor);
		if (auto_cores) {
			uint8_t set[NF_GRES_MAX_CPUS / 8] = { 0 };
			char *s;

			if (nf_cpulist_fold_cores(g->cpulist, ncores, set,
						  NF_GRES_MAX_CPUS))
				return nf_fail(ctx, NF_E_PARSE, "local_cpulist '%.64s' "
					       "of GPU '%s' is not a CPU list",
					       g->cpulist, g->bus_id);
			if (!(s = nf_cpulist_format(set, NF_GRES_MAX_CPUS)))
				return -ENOMEM;
			nf_buf_printf(out, " Cores=%s", s);
			free(s);
		} else if (cores) {
			nf_buf_printf(out, " Cores=%s", cores);
		}
		if (auto_links && t->nvlink_known && nf_gres_any_link(t)) {
			nf_buf_printf(out, " Links=");
			for (size_t j = 0; j < t->n; j++) {
				if (j == idx[i])
					nf_buf_printf(out, "%s-1", j ? "," : "");
				else
					nf_buf_printf(out, "%s%u", j ? "," : "",
						      t->links[idx[i]][j]);
			}
		} else if (links && !auto_links) {
			nf_buf_printf(out, " Links=%s", links);
		}
		nf_buf_printf(out, "\n");
	}
	return out->err;
}

/* A gres.conf line that declares a GPU by itself (not commented) */
static int static_gpu_line(const char *l, size_t n)
{
	while (n && (*l == ' ' || *l == '\t'))
		l++, n--;
	return n >= 8 && !strncasecmp(l, "Name=gpu", 8) &&
	       (n == 8 || l[8] == ' ' || l[8] == '\t');
}

static int starts(const char *l, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);

	return n >= k && !strncmp(l, prefix, k);
}

int nf_gres_merge(struct nf_ctx *ctx, const char *old, const char *lines,
		  char **out)
{
	struct nf_buf b = { 0 };
	const char *p = old ? old : "", *anchor = NULL;
	int in_block = 0, placed = 0;

	/* where the block goes when there is none yet: after the last
	 * placeholder comment the build left for it */
	for (const char *l = p; *l;) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);

		if (starts(l, n, "# Name=") &&
		    memmem(l, n, "(nodeforge gres render)", 23))
			anchor = l;
		l = e ? e + 1 : l + n;
	}
	for (const char *l = p; *l;) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);

		if (starts(l, n, block_begin)) {
			if (in_block || placed) {
				nf_buf_free(&b);
				return nf_fail(ctx, NF_E_PARSE, "'%s' has more than "
					       "one rendered block: nothing written",
					       NF_GRES_CONF);
			}
			in_block = 1;
		} else if (starts(l, n, block_end)) {
			if (!in_block) {
				nf_buf_free(&b);
				return nf_fail(ctx, NF_E_PARSE, "'%s': '%s' without "
					       "its begin line: nothing written",
					       NF_GRES_CONF, block_end);
			}
			in_block = 0;
			placed = 1;
			nf_buf_printf(&b, "%s: this node's GPUs, from %s\n%s%s\n",
				      block_begin, NF_GRES_AUTO_JSON, lines, block_end);
		} else if (!in_block) {
			if (static_gpu_line(l, n)) {
				nf_buf_free(&b);
				return nf_fail(ctx, NF_E_CONFLICT, "'%s' already "
					       "declares GPUs outside the rendered "
					       "block ('%.*s'): nothing written",
					       NF_GRES_CONF, (int)(n > 80 ? 80 : n), l);
			}
			nf_buf_printf(&b, "%.*s\n", (int)n, l);
			if (l == anchor && !placed && !strstr(p, block_begin)) {
				placed = 1;
				nf_buf_printf(&b, "%s: this node's GPUs, from %s\n%s%s\n",
					      block_begin, NF_GRES_AUTO_JSON, lines,
					      block_end);
			}
		}
		l = e ? e + 1 : l + n;
	}
	if (in_block) {
		nf_buf_free(&b);
		return nf_fail(ctx, NF_E_PARSE, "'%s': the rendered block has no "
			       "end line: nothing written", NF_GRES_CONF);
	}
	if (!placed)
		nf_buf_printf(&b, "%s: this node's GPUs, from %s\n%s%s\n",
			      block_begin, NF_GRES_AUTO_JSON, lines, block_end);
	if (b.err) {
		int r = b.err;

		nf_buf_free(&b);
		return r;
	}
	*out = b.s;
	return 0;
}
