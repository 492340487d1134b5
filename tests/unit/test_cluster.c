/* SPDX-License-Identifier: MIT */
/* The cluster of an inventory: hostlist compression, controllers and nodes,
 * one slurm.conf for every role and the cluster.conf it includes. */
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

static char *read_in(struct nf_ctx *ctx, int fd, const char *path)
{
	struct nf_apply a = { .ctx = ctx, .rootfd = fd };
	char *buf = NULL;

	assert_int_equal(nf_apply_read(&a, path, 1 << 20, &buf, NULL), 0);
	return buf;
}

static char *apply_role(struct nf_ctx *ctx, struct nf_site *site, const char *role,
			const json_t *cluster, const char *path)
{
	char root[] = "/tmp/nf-cluster.XXXXXX", *buf;
	struct nf_profile *p;
	struct nf_diags d;
	int fd;

	nf_diags_init(&d);
	assert_non_null(mkdtemp(root));
	assert_int_equal(nf_profile_resolve(ctx, role, site, &p, &d), 0);
	assert_int_equal(nf_apply_open_root(ctx, root, &fd), 0);
	if (nf_apply_all_cluster(ctx, fd, p, cluster))
		fail_msg("%s", nf_errmsg(ctx));
	buf = read_in(ctx, fd, path);
	close(fd);
	nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	nf_profile_free(p);
	nf_diags_free(&d);
	return buf;
}

static void load(struct nf_ctx **ctx, struct nf_site **site, const char *sitefile)
{
	char dir[PATH_MAX], sitep[PATH_MAX + 16];
	struct nf_diags d;

	snprintf(dir, sizeof(dir), "%s/profiles", srcdir());
	if (sitefile)
		snprintf(sitep, sizeof(sitep), "%s/%s", srcdir(), sitefile);
	else
		snprintf(sitep, sizeof(sitep), "%s/site.yaml", dir);
	assert_int_equal(nf_ctx_new(ctx), 0);
	nf_ctx_set_profiles_dir(*ctx, dir);
	nf_diags_init(&d);
	assert_int_equal(nf_site_load(*ctx, sitep, site, &d), 0);
	nf_diags_free(&d);
}

/* The inventory's cluster: controllers, dbd, every role */
static void test_cluster_load(void **s)
{
	struct nf_ctx *ctx;
	struct nf_site *site;
	char inv[PATH_MAX + 32];
	json_t *cl, *roles;

	(void)s;
	load(&ctx, &site, NULL);
	snprintf(inv, sizeof(inv), "%s/examples/racks.yaml", srcdir());
	if (nf_cluster_load(ctx, inv, site, &cl))
		fail_msg("%s", nf_errmsg(ctx));
	roles = json_object_get(cl, "roles");
	/* every role of the inventory, sorted; only compute runs slurmd */
	assert_int_equal(json_array_size(roles), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(roles, 0),
							      "nodes")), "gpu-[01-04]");
	assert_true(json_is_true(json_object_get(json_array_get(roles, 0), "slurmd")));
	assert_true(json_is_true(json_object_get(json_array_get(roles, 1), "slurmctld")));
	assert_int_equal(json_array_size(json_object_get(cl, "controllers")), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
		json_object_get(cl, "controllers"), 0), "ip")), "10.0.0.2");
	assert_string_equal(json_string_value(json_object_get(json_object_get(
		cl, "dbd"), "name")), "ctl-01");
	assert_int_equal(json_array_size(json_object_get(cl, "hosts")), 6);
	json_decref(cl);
	nf_site_free(site);
	nf_ctx_free(ctx);
}

/* Every role's image carries the same slurm.conf, which includes
 * cluster.conf; build --inventory bakes the same cluster.conf into each */
static void test_same_conf_every_role(void **s)
{
	struct nf_ctx *ctx;
	struct nf_site *site;
	char inv[PATH_MAX + 32], *ctl, *cmp, *login, *cc;
	json_t *cl;

	(void)s;
	load(&ctx, &site, NULL);
	snprintf(inv, sizeof(inv), "%s/examples/racks.yaml", srcdir());
	if (nf_cluster_load(ctx, inv, site, &cl))
		fail_msg("%s", nf_errmsg(ctx));
	ctl = apply_role(ctx, site, "controller", cl, "/etc/slurm/slurm.conf");
	cmp = apply_role(ctx, site, "compute", NULL, "/etc/slurm/slurm.conf");
	login = apply_role(ctx, site, "login", NULL, "/etc/slurm/slurm.conf");
	assert_string_equal(ctl, cmp);
	assert_string_equal(ctl, login);
	assert_non_null(strstr(ctl, "\nInclude /etc/slurm/cluster.conf\n"));
	assert_null(strstr(ctl, "NodeName="));
	assert_null(strstr(ctl, "SlurmctldHost="));
	cc = apply_role(ctx, site, "compute", cl, NF_CLUSTER_CONF);
	assert_non_null(strstr(cc, "\nSlurmctldHost=ctl-01(10.0.0.2)\n"
			       "AccountingStorageHost=ctl-01\n"
			       "NodeName=gpu-[01-04] Sockets=2 CoresPerSocket=64 "
			       "ThreadsPerCore=2 RealMemory=2000000 "
			       "Gres=gpu:h100:8,nvme:local:1 Feature=h100,ib CpuSpecList=0-1,128-129 "
			       "State=UNKNOWN\n"
			       "PartitionName=compute Nodes=gpu-[01-04] "
			       "MaxTime=INFINITE State=UP\n"));
	/* the reference's three partitions, from profiles/base.yaml */
	assert_non_null(strstr(cc, "\nPartitionName=training Nodes=gpu-[01-04] "
			       "MaxTime=7-00:00:00 DefaultTime=1-00:00:00 State=UP "
			       "OverSubscribe=NO PriorityTier=1 "
			       "TRESBillingWeights=GRES/gpu=100\n"
			       "PartitionName=inference Nodes=gpu-[01-04] "
			       "MaxTime=INFINITE DefaultTime=4:00:00 State=UP "
			       "OverSubscribe=YES:4 PriorityTier=2 "
			       "TRESBillingWeights=GRES/gpu=50\n"
			       "PartitionName=interactive Nodes=gpu-[01-04] "
			       "Default=YES MaxTime=4:00:00 DefaultTime=1:00:00 "
			       "State=UP OverSubscribe=NO PriorityTier=3\n"));
	assert_null(strstr(cc, "login-01"));
	free(ctl);
	free(cmp);
	free(login);
	free(cc);
	json_decref(cl);
	nf_site_free(site);
	nf_ctx_free(ctx);
}

/* A site naming controllers that are not the inventory's is refused,
 * naming both */
static void test_site_disagrees(void **s)
{
	struct nf_ctx *ctx;
	struct nf_site *site;
	char inv[PATH_MAX + 32], *conf = NULL, *hosts = NULL;

	(void)s;
	load(&ctx, &site, "tests/fixtures/site-good.yaml");
	snprintf(inv, sizeof(inv), "%s/examples/racks.yaml", srcdir());
	assert_int_equal(nf_cluster_render(ctx, inv, site, &conf, &hosts),
			 NF_E_INVALID);
	assert_non_null(strstr(nf_errmsg(ctx), "cp-01"));
	assert_non_null(strstr(nf_errmsg(ctx), "ctl-01"));
	assert_null(conf);
	nf_site_free(site);
	nf_ctx_free(ctx);
}

/* Whatever passed the checks upstream, the renderer itself refuses a
 * value that would end a slurm.conf line early and start another */
static void test_slurm_conf_refuses_newline(void **s)
{
	static const char *const bad[][2] = {
		{ "ctl-01\nSlurmUser=root", "10.0.0.10" },
		{ "ctl-01", "10.0.0.10)\nPrologSlurmctld=/tmp/x" },
		{ "ctl-01\x1b[2J", "10.0.0.10" },
	};
	struct nf_ctx *ctx;

	(void)s;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		struct nf_buf b = { 0 };
		json_t *cl = json_pack("{s:[], s:[{s:s, s:s}], s:[]}", "roles",
				       "controllers", "name", bad[i][0], "ip",
				       bad[i][1], "hosts");

		assert_non_null(cl);
		assert_int_equal(nf_cluster_slurm_conf(ctx, cl, &b), NF_E_INVALID);
		assert_null(b.s ? strstr(b.s, "SlurmctldHost") : NULL);
		assert_non_null(strstr(nf_errmsg(ctx), "cannot go into slurm.conf"));
		assert_null(strchr(nf_errmsg(ctx), '\n'));
		assert_null(strchr(nf_errmsg(ctx), '\x1b'));
		nf_buf_free(&b);
		json_decref(cl);
	}
	nf_ctx_free(ctx);
}

/* With the site's shared StateSaveLocation, the controller image mounts
 * it where slurm.conf's StateSaveLocation is, before slurmctld */
static void test_state_save_mount(void **s)
{
	struct nf_ctx *ctx;
	struct nf_site *site;
	char *unit, *dropin;

	(void)s;
	load(&ctx, &site, "tests/fixtures/site-state-save.yaml");
	unit = apply_role(ctx, site, "controller", NULL,
			  "/etc/systemd/system/var-lib-slurm-slurmctld.mount");
	assert_non_null(strstr(unit, "\nBefore=slurmctld.service\n[Mount]\n"
			       "What=10.0.0.1:/export/slurmctld\n"
			       "Where=/var/lib/slurm/slurmctld\nType=nfs\n"));
	dropin = apply_role(ctx, site, "controller", NULL,
			    "/etc/systemd/system/slurmctld.service.d/50-nodeforge-state.conf");
	assert_non_null(strstr(dropin, "RequiresMountsFor=/var/lib/slurm/slurmctld\n"));
	/* the mounted export's root becomes SlurmUser's before slurmctld */
	assert_non_null(strstr(dropin, "\n[Service]\nExecStartPre=-+/usr/bin/"
			       "systemd-tmpfiles --create /etc/tmpfiles.d/nodeforge-slurm.conf\n"));
	free(unit);
	free(dropin);
	nf_site_free(site);
	nf_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compress),
		cmocka_unit_test(test_cluster_load),
		cmocka_unit_test(test_same_conf_every_role),
		cmocka_unit_test(test_site_disagrees),
		cmocka_unit_test(test_slurm_conf_refuses_newline),
		cmocka_unit_test(test_state_save_mount),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
