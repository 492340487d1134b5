/* SPDX-License-Identifier: MIT */
/*
 * gres render: the GPU lines of gres.conf that depend on the node's own
 * topology, written at first boot.  The build keeps them, with
 * Cores=/Links= "auto", in /etc/nodeforge/gres.auto.json; here they get
 * the node's device minors and PCI addresses (/proc/driver/nvidia), the
 * GPUs' NUMA-local cores (/sys/bus/pci/devices/BUS/local_cpulist, folded
 * as the verifier folds them) and NVLink counts (NVML).  The rendered
 * lines sit in gres.conf between two marker comments, so rendering again
 * replaces them and changes nothing when the topology is the same.
 */
#include "internal.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define AUTO_JSON "/etc/nodeforge/gres.auto.json"
#define GRES_CONF "/etc/slurm/gres.conf"
#define PROFILE_JSON "/etc/nodeforge/profile.json"
#define AUTO_MAX (64u * 1024)
#define AUTO_ENTRIES_MAX 16
#define INFO_MAX (16u * 1024)
#define CONF_MAX (256u * 1024)
#define PROFILE_MAX (4u << 20)
#define CLUSTER_MAX (16u << 20)
#define REMOTE_MAX 64           /* NVLinks per GPU (NVML has 18) */
#define MINOR_MAX 255

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
	if (*end || m < 0 || m > MINOR_MAX)
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
	if (len > AUTO_MAX)
		return nf_fail(ctx, NF_E_LIMIT, "'%s' is larger than %u bytes",
			       AUTO_JSON, AUTO_MAX);
	doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
	if (!doc)
		return nf_fail(ctx, NF_E_PARSE, "%s:%d:%d: %s", AUTO_JSON,
			       err.line, err.column, err.text);
	if (!json_is_array(doc) || json_array_size(doc) > AUTO_ENTRIES_MAX) {
		json_decref(doc);
		return nf_fail(ctx, NF_E_INVALID, "'%s' must be a list of at "
			       "most %d gres entries", AUTO_JSON,
			       AUTO_ENTRIES_MAX);
	}
	json_array_foreach(doc, i, g) {
		const char *k;
		json_t *v;

		if (!json_is_object(g) ||
		    !json_is_string(json_object_get(g, "name"))) {
			json_decref(doc);
			return nf_fail(ctx, NF_E_INVALID, "'%s': entry %zu has "
				       "no name", AUTO_JSON, i);
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
						AUTO_JSON, i, k);

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

static int any_link(const struct nf_gres_topo *t)
{
	for (size_t a = 0; a < t->n; a++)
		for (size_t b = 0; b < t->n; b++)
			if (t->links[a][b])
				return 1;
	return 0;
}

/* The topology indexes `entry` covers, from its File= list of
 * /dev/nvidiaN (else every GPU) */
static int entry_gpus(struct nf_ctx *ctx, const json_t *entry,
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
			       "of at most %d devices", AUTO_JSON, file,
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
				    "NVIDIA GPU device (/dev/nvidiaN)", AUTO_JSON, d);
			break;
		}
		for (k = 0; k < t->n && t->gpu[k].minor != m; k++)
			;
		if (k == t->n) {
			r = nf_fail(ctx, NF_E_CONFLICT, "'%s' (%s) is not a GPU "
				    "of this node: nothing written", d, AUTO_JSON);
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
			       AUTO_JSON, name ? name : "?");
	if (auto_cores && (!ncores || ncores > NF_GRES_MAX_CPUS))
		return nf_fail(ctx, NF_E_INVALID, "Cores=auto needs the node's "
			       "shape: the profile has no slurm.node sockets and "
			       "cores_per_socket");
	if (auto_links && nvlink_required && !t->nvlink_known)
		return nf_fail(ctx, NF_E_NOHW, "the profile declares NVLink GPUs "
			       "but NVML gives no NVLink data (is "
			       "'libnvidia-ml.so.1' installed and the driver "
			       "loaded?): nothing written");
	if (auto_links && nvlink_required && !any_link(t))
		return nf_fail(ctx, NF_E_CONFLICT, "the profile declares NVLink "
			       "GPUs but NVML reports no active NVLink between "
			       "them (fabric manager down?): nothing written");
	if ((r = entry_gpus(ctx, entry, t, idx, &n)))
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
		if (auto_links && t->nvlink_known && any_link(t)) {
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
					       GRES_CONF);
			}
			in_block = 1;
		} else if (starts(l, n, block_end)) {
			if (!in_block) {
				nf_buf_free(&b);
				return nf_fail(ctx, NF_E_PARSE, "'%s': '%s' without "
					       "its begin line: nothing written",
					       GRES_CONF, block_end);
			}
			in_block = 0;
			placed = 1;
			nf_buf_printf(&b, "%s: this node's GPUs, from %s\n%s%s\n",
				      block_begin, AUTO_JSON, lines, block_end);
		} else if (!in_block) {
			if (static_gpu_line(l, n)) {
				nf_buf_free(&b);
				return nf_fail(ctx, NF_E_CONFLICT, "'%s' already "
					       "declares GPUs outside the rendered "
					       "block ('%.*s'): nothing written",
					       GRES_CONF, (int)(n > 80 ? 80 : n), l);
			}
			nf_buf_printf(&b, "%.*s\n", (int)n, l);
			if (l == anchor && !placed && !strstr(p, block_begin)) {
				placed = 1;
				nf_buf_printf(&b, "%s: this node's GPUs, from %s\n%s%s\n",
					      block_begin, AUTO_JSON, lines,
					      block_end);
			}
		}
		l = e ? e + 1 : l + n;
	}
	if (in_block) {
		nf_buf_free(&b);
		return nf_fail(ctx, NF_E_PARSE, "'%s': the rendered block has no "
			       "end line: nothing written", GRES_CONF);
	}
	if (!placed)
		nf_buf_printf(&b, "%s: this node's GPUs, from %s\n%s%s\n",
			      block_begin, AUTO_JSON, lines, block_end);
	if (b.err) {
		int r = b.err;

		nf_buf_free(&b);
		return r;
	}
	*out = b.s;
	return 0;
}

/* ---------------------------------------------------------- discovery */

static int cmp_minor(const void *a, const void *b)
{
	const struct nf_gres_gpu *x = a, *y = b;

	return x->minor - y->minor;
}

static int discover(struct nf_ctx *ctx, struct nf_gres_topo *t)
{
	char *dir = nf_sr_path(ctx, "/proc/driver/nvidia/gpus");
	struct dirent *de;
	DIR *d;
	int r = 0;

	t->n = 0;
	if (!dir)
		return -ENOMEM;
	if (!(d = opendir(dir))) {
		r = errno == ENOENT ? 0 : nf_fail(ctx, -errno, "cannot read '%s': %s",
						  dir, strerror(errno));
		free(dir);
		return r;
	}
	while (!r && (de = readdir(d))) {
		struct nf_gres_gpu *g;
		char *path, *buf;
		size_t len;

		if (de->d_name[0] == '.')
			continue;
		if (t->n == NF_GRES_MAX_GPUS) {
			r = nf_fail(ctx, NF_E_LIMIT, "more than %d GPUs in '%s'",
				    NF_GRES_MAX_GPUS, dir);
			break;
		}
		g = &t->gpu[t->n];
		if (!(path = nf_asprintf("%s/%s/information", dir, de->d_name))) {
			r = -ENOMEM;
			break;
		}
		r = nf_read_file(ctx, path, INFO_MAX, &buf, &len);
		if (!r) {
			if (nf_gres_parse_information(buf, &g->minor, g->bus_id))
				r = nf_fail(ctx, NF_E_PARSE, "cannot read GPU '%s': "
					    "'%s' has no Device Minor and Bus "
					    "Location", de->d_name, path);
			free(buf);
		}
		free(path);
		if (r)
			break;
		for (size_t i = 0; i < t->n; i++)
			if (t->gpu[i].minor == g->minor) {
				r = nf_fail(ctx, NF_E_CONFLICT, "GPUs '%s' and '%s' "
					    "both claim /dev/nvidia%d",
					    t->gpu[i].bus_id, g->bus_id, g->minor);
				break;
			}
		if (r)
			break;
		if (!(path = nf_sr_path(ctx, "/sys/bus/pci/devices/%s/local_cpulist",
					g->bus_id))) {
			r = -ENOMEM;
			break;
		}
		if (!(r = nf_read_file(ctx, path, NF_GRES_CPULIST_MAX - 1, &buf,
				       &len))) {
			uint8_t *bits = malloc(NF_GRES_MAX_CPUS / 8);

			buf[strcspn(buf, "\n")] = '\0';
			snprintf(g->cpulist, sizeof(g->cpulist), "%s", buf);
			if (!bits)
				r = -ENOMEM;
			else if (nf_cpulist_parse(buf, bits, NF_GRES_MAX_CPUS, NULL))
				r = nf_fail(ctx, NF_E_PARSE, "cannot read GPU '%s': "
					    "'%s' is not a CPU list", g->bus_id,
					    path);
			free(bits);
			free(buf);
		}
		free(path);
		if (!r)
			t->n++;
	}
	closedir(d);
	free(dir);
	if (!r)
		qsort(t->gpu, t->n, sizeof(t->gpu[0]), cmp_minor);
	return r;
}

/* ------------------------------------------------------ root files */

static int root_read(struct nf_apply *a, const char *path, size_t max,
		     char **buf, size_t *len)
{
	int r = nf_apply_read(a, path, max, buf, len);

	if (r == -ENOENT)
		nf_fail(a->ctx, r, "cannot read '%s': %s", path, strerror(ENOENT));
	return r;
}

/* Replace ROOT/etc/slurm/gres.conf: temp file, fsync, rename, fsync of
 * the directory; mode and owner of the file it replaces */
static int write_conf(struct nf_ctx *ctx, int rootfd, const char *text)
{
	static const char tmp[] = ".gres.conf.nf-tmp";
	size_t len = strlen(text);
	unsigned mode = 0644;
	uid_t uid = 0;
	gid_t gid = 0;
	struct stat st;
	int etc, dfd, fd, r = 0;

	etc = openat(rootfd, "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (etc < 0)
		return nf_fail(ctx, -errno, "cannot open '/etc': %s", strerror(errno));
	if (mkdirat(etc, "slurm", 0755) < 0 && errno != EEXIST) {
		r = -errno;
		close(etc);
		return nf_fail(ctx, r, "cannot create '/etc/slurm': %s",
			       strerror(-r));
	}
	dfd = openat(etc, "slurm", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(etc);
	if (dfd < 0)
		return nf_fail(ctx, -errno, "cannot open '/etc/slurm': %s",
			       strerror(errno));
	if (fstatat(dfd, "gres.conf", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISREG(st.st_mode)) {
			close(dfd);
			return nf_fail(ctx, NF_E_UNSAFE, "'%s' is not a regular "
				       "file", GRES_CONF);
		}
		mode = st.st_mode & 07777;
		uid = st.st_uid;
		gid = st.st_gid;
	}
	unlinkat(dfd, tmp, 0);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    0600);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = nf_write_full(fd, text, len);
	if (!r && (fchmod(fd, mode) < 0 || fchown(fd, uid, gid) < 0 ||
		   fsync(fd) < 0))
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && renameat(dfd, tmp, dfd, "gres.conf") < 0)
		r = -errno;
	if (r)
		unlinkat(dfd, tmp, 0);
	else
		(void)fsync(dfd);
out:
	close(dfd);
	if (r)
		return nf_fail(ctx, r, "cannot write '%s': %s", GRES_CONF,
			       strerror(-r));
	return 0;
}

/* ------------------------------------------------------------- driver */

/* "/dev/nvidia[0-3,5]" for the GPUs seen */
static char *minors_text(const struct nf_gres_topo *t)
{
	uint8_t set[(MINOR_MAX + 8) / 8] = { 0 };
	char *l, *s;

	if (!t->n)
		return nf_strdup("none");
	for (size_t i = 0; i < t->n; i++)
		set[t->gpu[i].minor / 8] |= (uint8_t)(1u << (t->gpu[i].minor % 8));
	if (!(l = nf_cpulist_format(set, MINOR_MAX + 1)))
		return NULL;
	s = t->n == 1 ? nf_asprintf("/dev/nvidia%s", l)
		      : nf_asprintf("/dev/nvidia[%s]", l);
	free(l);
	return s;
}

struct render {
	struct nf_ctx *ctx;
	const struct nf_gres_opts *o;
	struct nf_gres_result *res;
	struct nf_apply a;
	json_t *autos, *prof, *fixture;
	struct nf_gres_topo *t;
};

/* The type the cluster declares for this node (its line in cluster.conf,
 * Gres=gpu:TYPE:N: the inventory's gpu_type for its rack, fetched at
 * boot) replaces the role's in the entries that carry the role's, as it
 * does on the node's line: slurmd refuses a gres.conf Type that its
 * slurm.conf line does not have.  No cluster.conf, no line for this node
 * or no type on it: the entries keep theirs. */
static void cluster_type(struct render *x)
{
	const char *role = json_string_value(json_object_get(json_object_get(x->prof, "gpu"),
							     "type"));
	char *conf = NULL, *host = NULL, type[64];
	size_t i, len;
	json_t *e;

	if (!role || nf_apply_read(&x->a, NF_CLUSTER_CONF, CLUSTER_MAX, &conf, &len) ||
	    !(host = nf_node_name(nf_ctx_sysroot(x->ctx))) ||
	    !nf_cluster_conf_gpu_type(conf, host, type, sizeof(type)) ||
	    !strcmp(type, role)) {
		free(conf);
		free(host);
		return;
	}
	json_array_foreach(x->autos, i, e) {
		const char *t = json_string_value(json_object_get(e, "type"));

		if (t && !strcmp(t, role))
			json_object_set_new(e, "type", json_string(type));
	}
	free(conf);
	free(host);
}

static int render(struct render *x)
{
	const json_t *node = json_object_get(json_object_get(x->prof, "slurm"), "node");
	const json_t *gpu = json_object_get(x->prof, "gpu");
	json_int_t sockets = json_integer_value(json_object_get(node, "sockets"));
	json_int_t cps = json_integer_value(json_object_get(node, "cores_per_socket"));
	unsigned ncores = sockets > 0 && cps > 0 && sockets * cps <= NF_GRES_MAX_CPUS
		? (unsigned)(sockets * cps) : 0;
	int nvlink = json_is_true(json_object_get(gpu, "nvswitch")) ||
		     json_is_true(json_object_get(gpu, "nvlink"));
	int want_links = 0;
	long long want = 0;
	struct nf_buf lines = { 0 };
	char *old = NULL, *conf = NULL;
	unsigned char used[NF_GRES_MAX_GPUS] = { 0 };
	size_t i, len;
	json_t *e;
	int r;

	json_array_foreach(x->autos, i, e) {
		const char *l = json_string_value(json_object_get(e, "links"));

		want_links |= l && !strcmp(l, "auto");
		if (!json_is_integer(json_object_get(gpu, "count")))
			want += json_integer_value(json_object_get(e, "count"));
	}
	if (json_is_integer(json_object_get(gpu, "count")))
		want = json_integer_value(json_object_get(gpu, "count"));
	if ((r = discover(x->ctx, x->t)))
		return r;
	x->res->ngpu = x->t->n;
	if ((long long)x->t->n != want) {
		char *seen = minors_text(x->t);

		r = nf_fail(x->ctx, NF_E_CONFLICT, "this node has %zu GPUs (%s) "
			    "but the profile declares %lld%s: nothing written",
			    x->t->n, seen ? seen : "?", want,
			    x->t->n ? "" : " (no /proc/driver/nvidia/gpus: is the "
			    "driver loaded?)");
		free(seen);
		return r;
	}
	if (want_links) {
		json_t *snap = NULL;

		r = nf_nvml_snapshot(x->fixture, &snap);
		if (r)
			json_decref(snap);
		if (r && r != NF_E_NOHW)
			return nf_fail(x->ctx, r, "cannot read NVLink data from "
				       "NVML: %s", nf_strerror(r));
		if (!r) {
			r = nf_gres_topo_links(x->ctx, x->t, snap);
			json_decref(snap);
			if (r)
				return r;
		}
		x->res->nvlink = x->t->nvlink_known && any_link(x->t);
	}
	cluster_type(x);
	/* two entries naming one GPU would declare it twice */
	json_array_foreach(x->autos, i, e) {
		size_t idx[NF_GRES_MAX_GPUS], n;

		if ((r = entry_gpus(x->ctx, e, x->t, idx, &n)))
			return r;
		for (size_t k = 0; k < n; k++)
			if (used[idx[k]]++)
				return nf_fail(x->ctx, NF_E_CONFLICT, "'%s' names "
					       "/dev/nvidia%d twice: nothing written",
					       AUTO_JSON, x->t->gpu[idx[k]].minor);
	}
	json_array_foreach(x->autos, i, e) {
		if ((r = nf_gres_entry_lines(x->ctx, e, x->t, ncores, nvlink,
					     &lines))) {
			nf_buf_free(&lines);
			return r;
		}
	}
	if (lines.err) {
		r = lines.err;
		nf_buf_free(&lines);
		return r;
	}
	r = nf_apply_read(&x->a, GRES_CONF, CONF_MAX, &old, &len);
	if (r && r != -ENOENT) {
		nf_buf_free(&lines);
		return r;
	}
	r = nf_gres_merge(x->ctx, old, lines.s ? lines.s : "", &conf);
	x->res->lines = lines.s ? lines.s : nf_strdup("");
	if (r) {
		free(old);
		return r;
	}
	x->res->conf = conf;
	x->res->changed = !old || strcmp(old, conf);
	free(old);
	if (!x->res->changed || x->o->dry_run)
		return 0;
	return write_conf(x->ctx, x->a.rootfd, conf);
}

int nf_gres_render(struct nf_ctx *ctx, const struct nf_gres_opts *o,
		   struct nf_gres_result *res)
{
	const char *root = o->root && *o->root ? o->root : "/";
	struct render x = { .ctx = ctx, .o = o, .res = res };
	char *buf = NULL;
	size_t len;
	json_error_t err;
	int r;

	memset(res, 0, sizeof(*res));
	x.a.ctx = ctx;
	x.a.rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (x.a.rootfd < 0)
		return nf_fail(ctx, -errno, "cannot open root '%s': %s", root,
			       strerror(errno));
	if ((r = nf_apply_read(&x.a, AUTO_JSON, AUTO_MAX, &buf, &len))) {
		if (r == -ENOENT)
			r = nf_fail(ctx, NF_E_NOTFOUND, "nothing to render: no '%s' "
				    "(the image has no GPU lines that depend on "
				    "the node)", AUTO_JSON);
		goto out;
	}
	r = nf_gres_auto_parse(ctx, buf, len, &x.autos);
	free(buf);
	if (r)
		goto out;
	if ((r = root_read(&x.a, PROFILE_JSON, PROFILE_MAX, &buf, &len)))
		goto out;
	x.prof = json_loadb(buf, len, 0, &err);
	free(buf);
	if (!json_is_object(x.prof)) {
		r = nf_fail(ctx, NF_E_PARSE, "%s:%d:%d: %s", PROFILE_JSON,
			    err.line, err.column, x.prof ? "not an object" : err.text);
		goto out;
	}
	if (o->fixture && (r = nf_hw_fixture_load(ctx, o->fixture, &x.fixture)))
		goto out;
	if (!(x.t = calloc(1, sizeof(*x.t)))) {
		r = -ENOMEM;
		goto out;
	}
	r = render(&x);
out:
	free(x.t);
	json_decref(x.autos);
	json_decref(x.prof);
	json_decref(x.fixture);
	close(x.a.rootfd);
	return r;
}

void nf_gres_result_free(struct nf_gres_result *res)
{
	free(res->conf);
	free(res->lines);
	memset(res, 0, sizeof(*res));
}
