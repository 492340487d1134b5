/* SPDX-License-Identifier: MIT */
/*
 * The apply driver: every facet's apply in the table's order, then what
 * the facets ask of the node as a whole: the first-boot verifier's gate,
 * ordered with the units the facets name, and the warning when state that
 * must outlive a reboot is in RAM.  Last, the resolved profile the
 * verifier reads.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

/* A network-booted node's root is RAM (tmpfs, ramfs or the kernel's
 * rootfs): a controller there loses its accounting database and
 * slurmctld's state at every reboot.  That is allowed (a lab, a cluster in
 * a box) but must be said where an operator looks: the journal at warning
 * priority and the login banner.  The facets name the directories
 * (durable_dirs). */
static const char volatile_script[] =
	"#!/bin/sh\n"
	"# Written by nodeforge build: warn when a directory whose contents\n"
	"# must outlive a reboot lives in RAM (a network-booted root).\n"
	"# usage: volatile-state MOTD_FILE DIR...\n"
	"set -u\n"
	"motd=$1\n"
	"shift\n"
	"lost=\n"
	"for d in \"$@\"; do\n"
	"\tp=$d\n"
	"\twhile [ ! -e \"$p\" ] && [ \"$p\" != / ]; do p=$(dirname \"$p\"); done\n"
	"\tfs=$(findmnt -n -o FSTYPE --target \"$p\" 2>/dev/null) || fs=\n"
	"\t[ -n \"$fs\" ] || fs=$(stat -f -c %T \"$p\" 2>/dev/null) || fs=\n"
	"\tcase $fs in\n"
	"\ttmpfs|ramfs|rootfs)\n"
	"\t\techo \"<4>nodeforge: $d is on $fs (RAM): its contents are lost\"\\\n"
	"\t\t\"at every reboot\" >&2\n"
	"\t\tlost=\"$lost $d\" ;;\n"
	"\tesac\n"
	"done\n"
	"if [ -z \"$lost\" ]; then\n"
	"\trm -f \"$motd\"\n"
	"\texit 0\n"
	"fi\n"
	"mkdir -p \"$(dirname \"$motd\")\"\n"
	"printf 'nodeforge: WARNING: lost at every reboot (in RAM):%s\\n' \"$lost\" \\\n"
	"\t> \"$motd\"\n";


/* The units every facet orders the gate with, in the facets' order */
static size_t gate_units(const struct nf_apply *a, struct nf_gate_unit *u,
			 size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < nf_nfacets; i++) {
		const struct nf_facet *f = nf_facets[i];

		if (f->gate_units)
			n += f->gate_units(a, json_object_get(a->prof, f->name),
					   u + n, max - n);
	}
	return n;
}

static int apply_volatile_warning(struct nf_apply *a)
{
	const char *dirs[NF_GATE_MAX];
	struct nf_buf b = { 0 };
	size_t n = 0;
	int r;

	for (size_t i = 0; i < nf_nfacets; i++) {
		const struct nf_facet *f = nf_facets[i];

		if (f->durable_dirs)
			n += f->durable_dirs(a, json_object_get(a->prof, f->name),
					     dirs + n, NF_ARRAY_SIZE(dirs) - n);
	}
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!nf_apply_path_ok(dirs[i]))
			return nf_fail(a->ctx, NF_E_INVALID, "durable directory "
				       "'%s' is not an absolute path a unit file "
				       "can hold", dirs[i]);
	nf_buf_printf(&b, "%s", volatile_script);
	if ((r = nf_apply_write_buf(a, "/usr/lib/nodeforge/volatile-state", &b,
				    0755, 0, 0)))
		return r;
	nf_apply_header(&b, "#", "verify");
	nf_buf_printf(&b,
		"[Unit]\n"
		"Description=nodeforge: warn when this node's durable state is in RAM\n"
		"After=local-fs.target systemd-tmpfiles-setup.service\n"
		"Before=mariadb.service slurmdbd.service slurmctld.service "
		"nodeforge-verify.service\n"
		"\n"
		"[Service]\n"
		"Type=oneshot\n"
		"RemainAfterExit=yes\n"
		"ExecStart=/usr/lib/nodeforge/volatile-state "
		"/run/motd.d/nodeforge-volatile");
	for (size_t i = 0; i < n; i++)
		nf_buf_printf(&b, " %s", dirs[i]);
	nf_buf_printf(&b,
		"\n"
		"\n"
		"[Install]\n"
		"WantedBy=multi-user.target\n");
	if ((r = nf_apply_write_buf(a, "/etc/systemd/system/"
				    "nodeforge-volatile-state.service", &b,
				    0644, 0, 0)))
		return r;
	return nf_apply_symlink(a, "/etc/systemd/system/multi-user.target.wants/"
				"nodeforge-volatile-state.service",
				"/etc/systemd/system/nodeforge-volatile-state.service");
}

/* The verifier gates the daemons the facets name (NF_GATE_GUARDS): a
 * oneshot unit each of them requires.  It has no Condition*: a skipped
 * unit satisfies Requires=, so a node without its profile.json would
 * start its daemons unverified; the verifier fails on a missing profile
 * instead. */
static int apply_verifier(struct nf_apply *a)
{
	struct nf_gate_unit u[NF_GATE_MAX];
	size_t n = gate_units(a, u, NF_ARRAY_SIZE(u));
	struct nf_buf b = { 0 };
	char path[160];
	int r;

	nf_apply_header(&b, "#", "verify");
	nf_buf_printf(&b,
		"[Unit]\n"
		"Description=nodeforge first-boot verification of this node\n"
		"Documentation=man:nodeforge-verify(1)\n"
		"Wants=network-online.target time-sync.target\n"
		"After=network-online.target time-sync.target remote-fs.target "
		"munge.service\n");
	for (size_t i = 0; i < n; i++) {
		const char *sfx = strchr(u[i].unit, '.') ? "" : ".service";

		if (u[i].how == NF_GATE_WANTS)
			nf_buf_printf(&b, "Wants=%s%s\n", u[i].unit, sfx);
		if (u[i].how != NF_GATE_GUARDS)
			nf_buf_printf(&b, "After=%s%s\n", u[i].unit, sfx);
	}
	for (size_t i = 0; i < n; i++)
		if (u[i].how == NF_GATE_GUARDS)
			nf_buf_printf(&b, "Before=%s%s\n", u[i].unit,
				      strchr(u[i].unit, '.') ? "" : ".service");
	nf_buf_printf(&b,
		"\n"
		"[Service]\n"
		"Type=oneshot\n"
		"RemainAfterExit=yes\n"
		"# a missing profile.json fails here, and the daemons stay down\n"
		"ExecStart=/usr/bin/nodeforge verify --gate "
		"--profile /etc/nodeforge/profile.json\n"
		"# the report on the serial console too (a BMC's serial-over-LAN)\n"
		"StandardOutput=journal+console\n"
		"StandardError=journal+console\n"
		"TimeoutStartSec=300\n"
		"\n"
		"[Install]\n"
		"WantedBy=multi-user.target\n");
	if ((r = nf_apply_write_buf(a, "/etc/systemd/system/nodeforge-verify.service",
				    &b, 0644, 0, 0)))
		return r;
	if ((r = nf_apply_symlink(a, "/etc/systemd/system/multi-user.target.wants/"
				  "nodeforge-verify.service",
				  "/etc/systemd/system/nodeforge-verify.service")))
		return r;
	for (size_t i = 0; i < n; i++) {
		const char *d = u[i].unit;

		if (u[i].how != NF_GATE_GUARDS)
			continue;
		if (strchr(d, '/') || strlen(d) > 100)
			return nf_fail(a->ctx, NF_E_INVALID, "unit name '%s' is "
				       "not valid", d);
		nf_apply_header(&b, "#", "verify");
		nf_buf_printf(&b,
			"# %s starts only after the verifier passed on this boot\n"
			"[Unit]\n"
			"Requires=nodeforge-verify.service\n"
			"After=nodeforge-verify.service\n", d);
		snprintf(path, sizeof(path), "/etc/systemd/system/%s%s.d/"
			 "nodeforge-verify.conf", d, strchr(d, '.') ? "" : ".service");
		if ((r = nf_apply_write_buf(a, path, &b, 0644, 0, 0)))
			return r;
	}
	return apply_volatile_warning(a);
}

int nf_apply_all(struct nf_ctx *ctx, int rootfd, const struct nf_profile *p)
{
	return nf_apply_all_cluster(ctx, rootfd, p, NULL);
}

int nf_apply_all_cluster(struct nf_ctx *ctx, int rootfd,
			 const struct nf_profile *p, const json_t *cluster)
{
	const json_t *prof = nf_profile_json(p);
	const json_t *site = json_object_get(prof, "site");
	const char *distro = json_string_value(json_object_get(site, "distro"));
	struct nf_apply a = {
		.ctx = ctx,
		.rootfd = rootfd,
		.profile = p,
		.prof = prof,
		.site = site,
		.role = json_string_value(json_object_get(prof, "role")),
		.distro = distro ? distro : "debian13",
		.cluster = cluster,
		.cluster_slurm_conf = nf_cluster_slurm_conf,
	};
	unsigned m;
	char *doc;
	int r;

	if (!a.role)
		a.role = nf_profile_name(p);
	a.el = nf_distro_is_el(a.distro);
	for (size_t i = 0; i < nf_nfacets; i++) {
		const struct nf_facet *f = nf_facets[i];
		const json_t *sec = json_object_get(prof, f->name);

		if (!f->apply || !sec)
			continue;
		nf_log(ctx, NF_LOG_DEBUG, "apply: facet '%s'", f->name);
		m = nf_err_mark(ctx);
		if ((r = f->apply(&a, sec)) < 0) {
			/* a failure without a message of its own is named by
			 * its facet, not by an earlier handled one */
			if (!nf_err_since(ctx, m))
				nf_fail(ctx, r, "facet '%s': %s", f->name,
					nf_strerror(r));
			return r;
		}
	}
	if ((r = apply_verifier(&a)))
		return r;
	doc = json_dumps(prof, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (!doc)
		return -ENOMEM;
	size_t n = strlen(doc);

	doc[n] = '\0';
	struct nf_buf b = { .s = doc, .len = n, .cap = n + 1 };

	nf_buf_printf(&b, "\n");
	return nf_apply_write_buf(&a, "/etc/nodeforge/profile.json", &b, 0644,
				  0, 0);
}
