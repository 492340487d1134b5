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
 * This file is the node's side (discovery, its files, the driver); the
 * parsers, the lines and their merge are lib/gres_conf.c.
 */
#include "internal.h"
#include "internal/gres.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROFILE_JSON "/etc/nodeforge/profile.json"
#define INFO_MAX (16u * 1024)
#define CONF_MAX (256u * 1024)
#define PROFILE_MAX (4u << 20)
#define CLUSTER_MAX (16u << 20)

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
				       "file", NF_GRES_CONF);
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
		return nf_fail(ctx, r, "cannot write '%s': %s", NF_GRES_CONF,
			       strerror(-r));
	return 0;
}

/* ------------------------------------------------------------- driver */

/* "/dev/nvidia[0-3,5]" for the GPUs seen */
static char *minors_text(const struct nf_gres_topo *t)
{
	uint8_t set[(NF_GRES_MINOR_MAX + 8) / 8] = { 0 };
	char *l, *s;

	if (!t->n)
		return nf_strdup("none");
	for (size_t i = 0; i < t->n; i++)
		set[t->gpu[i].minor / 8] |= (uint8_t)(1u << (t->gpu[i].minor % 8));
	if (!(l = nf_cpulist_format(set, NF_GRES_MINOR_MAX + 1)))
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
	unsigned m = nf_err_mark(x->ctx);
	size_t i, len;
	json_t *e;

	/* no cluster.conf it can read: the entries keep their type */
	if (role && nf_apply_read(&x->a, NF_CLUSTER_CONF, CLUSTER_MAX, &conf, &len))
		nf_err_drop(x->ctx, m);
	if (!role || !conf ||
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
		x->res->nvlink = x->t->nvlink_known && nf_gres_any_link(x->t);
	}
	cluster_type(x);
	/* two entries naming one GPU would declare it twice */
	json_array_foreach(x->autos, i, e) {
		size_t idx[NF_GRES_MAX_GPUS], n;

		if ((r = nf_gres_entry_gpus(x->ctx, e, x->t, idx, &n)))
			return r;
		for (size_t k = 0; k < n; k++)
			if (used[idx[k]]++)
				return nf_fail(x->ctx, NF_E_CONFLICT, "'%s' names "
					       "/dev/nvidia%d twice: nothing written",
					       NF_GRES_AUTO_JSON, x->t->gpu[idx[k]].minor);
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
	r = nf_apply_read(&x->a, NF_GRES_CONF, CONF_MAX, &old, &len);
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
	if ((r = nf_apply_read(&x.a, NF_GRES_AUTO_JSON, NF_GRES_AUTO_MAX, &buf, &len))) {
		if (r == -ENOENT)
			r = nf_fail(ctx, NF_E_NOTFOUND, "nothing to render: no '%s' "
				    "(the image has no GPU lines that depend on "
				    "the node)", NF_GRES_AUTO_JSON);
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
