/* SPDX-License-Identifier: MIT */
/* build --inventory: hostlist compression, the inventory's Slurm nodes and
 * the controller's slurm.conf lines made from them. */
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "internal.h"

static const char *srcdir(void)
{
	const char *s = getenv("NF_SRCDIR");

	return s && *s ? s : ".";
}

static void compress(const char *joined, const char *want)
{
	char *copy = strdup(joined), *names[64], *save = NULL, *out, **back;
	size_t n = 0, nb;

	for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save))
		names[n++] = t;
	assert_int_equal(nf_hostlist_compress(names, n, &out), 0);
	assert_string_equal(out, want);
	/* and back: the same names (sorted, once each) */
	if (n) {
		assert_int_equal(nf_hostlist_expand(out, &back, &nb, 0), 0);
		for (size_t i = 0; i < nb; i++) {
			int found = 0;

			for (size_t j = 0; j < n; j++)
				found |= !strcmp(back[i], names[j]);
			assert_true(found);
		}
		nf_strv_free(back, nb);
	}
	free(out);
	free(copy);
}

static void test_compress(void **s)
{
	(void)s;
	compress("gpu-004 gpu-001 gpu-002 login-01", "gpu-[001-002,004],login-01");
	compress("gpu-01", "gpu-01");
	compress("a b a", "a,b");
	compress("n9 n10 n11 n8", "n[8-9],n[10-11]");
	compress("r1n01 r1n02 r2n01", "r1n[01-02],r2n01");
	compress("x-1 x-1 x-2", "x-[1-2]");
	compress("", "");
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(p);
}

static void test_controller_conf(void **s)
{
	struct nf_ctx *ctx;
	struct nf_site *site;
	struct nf_profile *p;
	struct nf_diags d;
	char dir[PATH_MAX], sitep[PATH_MAX + 16], inv[PATH_MAX + 32];
	char root[] = "/tmp/nf-slurmnodes.XXXXXX", *buf = NULL;
	json_t *nodes;
	int fd;

	(void)s;
	snprintf(dir, sizeof(dir), "%s/profiles", srcdir());
	snprintf(sitep, sizeof(sitep), "%s/site.yaml", dir);
	snprintf(inv, sizeof(inv), "%s/examples/racks.yaml", srcdir());
	assert_int_equal(nf_ctx_new(&ctx), 0);
	nf_ctx_set_profiles_dir(ctx, dir);
	nf_diags_init(&d);
	assert_int_equal(nf_site_load(ctx, sitep, &site, &d), 0);
	if (nf_slurm_nodes(ctx, inv, site, &nodes))
		fail_msg("%s", nf_errmsg(ctx));
	/* every role of the inventory, sorted; only compute runs slurmd */
	assert_int_equal(json_array_size(nodes), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(nodes, 0),
							      "role")), "compute");
	assert_string_equal(json_string_value(json_object_get(json_array_get(nodes, 0),
							      "nodes")), "gpu-[01-04]");
	assert_true(json_is_true(json_object_get(json_array_get(nodes, 0), "slurmd")));
	assert_false(json_is_true(json_object_get(json_array_get(nodes, 1), "slurmd")));
	assert_false(json_is_true(json_object_get(json_array_get(nodes, 2), "slurmd")));

	assert_non_null(mkdtemp(root));
	assert_int_equal(nf_profile_resolve(ctx, "controller", site, &p, &d), 0);
	assert_int_equal(nf_apply_open_root(ctx, root, &fd), 0);
	if (nf_apply_all_nodes(ctx, fd, p, nodes))
		fail_msg("%s", nf_errmsg(ctx));
	{
		struct nf_apply a = { .ctx = ctx, .rootfd = fd };

		assert_int_equal(nf_apply_read(&a, "/etc/slurm/slurm.conf", 1 << 20,
					       &buf, NULL), 0);
	}
	assert_non_null(strstr(buf, "\nNodeName=gpu-[01-04] Sockets=2 CoresPerSocket=64 "
			       "ThreadsPerCore=2 RealMemory=2000000 "
			       "Gres=gpu:h100:8,nvme:local:1 Feature=h100,ib "
			       "State=UNKNOWN\n"
			       "PartitionName=compute Nodes=gpu-[01-04] Default=YES "
			       "MaxTime=INFINITE State=UP\n"));
	assert_null(strstr(buf, "login-01"));
	assert_null(strstr(buf, "ctl-01"));
	free(buf);
	close(fd);
	nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	/* a compute image does not list the cluster: only slurmctld does */
	assert_non_null(mkdtemp(strcpy(root, "/tmp/nf-slurmnodes.XXXXXX")));
	nf_profile_free(p);
	assert_int_equal(nf_profile_resolve(ctx, "compute", site, &p, &d), 0);
	assert_int_equal(nf_apply_open_root(ctx, root, &fd), 0);
	assert_int_equal(nf_apply_all_nodes(ctx, fd, p, nodes), 0);
	{
		struct nf_apply a = { .ctx = ctx, .rootfd = fd };

		assert_int_equal(nf_apply_read(&a, "/etc/slurm/slurm.conf", 1 << 20,
					       &buf, NULL), 0);
	}
	assert_null(strstr(buf, "gpu-[01-04]"));
	assert_null(strstr(buf, "PartitionName=compute"));
	free(buf);
	close(fd);
	nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	json_decref(nodes);
	nf_profile_free(p);
	nf_site_free(site);
	nf_diags_free(&d);
	nf_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compress),
		cmocka_unit_test(test_controller_conf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
