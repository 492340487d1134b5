/* SPDX-License-Identifier: MIT */
/* nodeforge disk: list block devices and image files, pick a disk by rule. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static int cmd_disk(struct nf_global *g, int argc, char **argv);

#define NF_DISK_MAX_ARGS 1024

const struct nf_cmd nf_cmd_disk = {
	.name = "disk",
	.summary = "list disks, pick the install or cache disk by rule",
	.help = "usage: nodeforge disk list [--json] [--sysroot DIR] [DEVICE|IMAGE...]\n"
		"       nodeforge disk pick [--json] [--sysroot DIR] RULE [DEVICE|IMAGE...]\n"
		"       nodeforge disk where [--json] [--sysroot DIR] PATH\n"
		"\n"
		"list: block devices (from /sys/block) or the given devices and disk\n"
		"image files, with size, model, transport, rotational, removable,\n"
		"partition table, partitions, filesystems, labels and UUIDs.\n"
		"\n"
		"pick: the one disk that RULE selects, e.g.\n"
		"  transport=nvme,removable=0,empty,smallest\n"
		"  model~*PM9A3*,size>=3.84T,largest\n"
		"Keys: transport model name path size removable rotational pttype\n"
		"fstype label; operators = != ~ !~ (glob) >= <= > < (size); flags\n"
		"empty, !empty; tie-breakers smallest, largest, first.  Fails when no\n"
		"disk or more than one disk matches.\n"
		"\n"
		"where: the mount, filesystem, block device and whole disk holding\n"
		"PATH (from /proc/self/mountinfo), e.g. the enroot cache.\n"
		"\n"
		"Options:\n"
		"      --sysroot DIR  read /sys and /dev under DIR\n"
		"      --json         machine-readable output\n"
		"\n"
		"Exit status: 0 ok, 1 failure (no disk or several disks match, unreadable input),\n"
		"2 usage error (bad rule, unknown subcommand).\n",
	.run = cmd_disk,
};

static void human_size(unsigned long long b, char *out, size_t outsz)
{
	static const char units[] = "BKMGTPE";
	double v = (double)b;
	int u = 0;

	while (v >= 1024 && u < 6) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(out, outsz, "%lluB", b);
	else
		snprintf(out, outsz, "%.1f%c", v, units[u]);
}

static const char *flag_text(int v)
{
	return v < 0 ? "-" : v ? "1" : "0";
}

static void emit_flag(struct nf_emit *e, const char *key, int v)
{
	if (v < 0)
		nf_emit_str(e, key, NULL, NULL);
	else
		nf_emit_bool(e, key, NULL, v);
	nf_emit_text(e, "%-3s ", flag_text(v));
}

static void emit_disk(struct nf_emit *e, const struct nf_disk *d)
{
	char hs[32];

	human_size(d->size, hs, sizeof(hs));
	nf_emit_obj_open(e, NULL);
	nf_emit_str(e, "name", NULL, d->name);
	nf_emit_str(e, "path", "%-16s ", d->path);
	nf_emit_int(e, "size", NULL, (long long)d->size);
	nf_emit_text(e, "%8s ", hs);
	nf_emit_str(e, "transport", "%-8s ", d->transport);
	emit_flag(e, "rotational", d->rotational);
	emit_flag(e, "removable", d->removable);
	nf_emit_str(e, "pttype", "%-5s ", d->pttype);
	nf_emit_str(e, "ptuuid", NULL, d->ptuuid);
	nf_emit_str(e, "fstype", "%-6s ", d->fstype);
	nf_emit_str(e, "label", "%-12s ", d->label);
	nf_emit_str(e, "uuid", "%-36s ", d->fsuuid);
	nf_emit_str(e, "model", "%s\n", d->model);
	if (d->probe_error)
		nf_emit_str(e, "error", "  ! %s\n", d->probe_error);
	nf_emit_arr_open(e, "partitions");
	for (size_t i = 0; i < d->nparts; i++) {
		const struct nf_part *p = &d->parts[i];
		char num[32];

		human_size(p->size, hs, sizeof(hs));
		snprintf(num, sizeof(num), "  part %u", p->number);
		nf_emit_obj_open(e, NULL);
		nf_emit_int(e, "number", NULL, p->number);
		nf_emit_text(e, "%-16s %8s ", num, hs);
		nf_emit_int(e, "start", NULL, (long long)p->start);
		nf_emit_int(e, "size", NULL, (long long)p->size);
		nf_emit_str(e, "type", NULL, p->type);
		nf_emit_str(e, "partuuid", NULL, p->uuid);
		nf_emit_str(e, "partlabel", "%-8s ", p->name);
		nf_emit_text(e, "%-3s %-3s %-5s ", "", "", "");
		nf_emit_str(e, "fstype", "%-6s ", p->fstype);
		nf_emit_str(e, "label", "%-12s ", p->label);
		nf_emit_str(e, "uuid", "%s\n", p->fsuuid);
		nf_emit_obj_close(e);
	}
	nf_emit_arr_close(e);
	nf_emit_obj_close(e);
}

static int gather(struct nf_global *g, int argc, char **argv,
		  struct nf_disks *d)
{
	int r;

	d->v = NULL;
	d->n = 0;
	if (argc == 0)
		return nf_disk_scan(g->ctx, d);
	for (int i = 0; i < argc; i++)
		if ((r = nf_disk_probe(g->ctx, argv[i], d)) < 0) {
			nf_disks_free(d);
			return r;
		}
	return 0;
}

static int disk_list(struct nf_global *g, int argc, char **argv)
{
	struct nf_disks d;
	struct nf_emit *e;
	int r;

	if ((r = gather(g, argc, argv, &d)) < 0)
		return nf_cmd_fail(g, "disk", r);
	if (nf_emit_new(&e, stdout, g->json)) {
		nf_disks_free(&d);
		return NF_EXIT_FAILURE;
	}
	nf_emit_text(e, "%-16s %8s %-8s %-3s %-3s %-5s %-6s %-12s %-36s %s\n",
		     "NAME", "SIZE", "TRAN", "ROT", "RM", "TABLE", "FSTYPE",
		     "LABEL", "UUID", "MODEL");
	nf_emit_arr_open(e, "disks");
	for (size_t i = 0; i < d.n; i++)
		emit_disk(e, &d.v[i]);
	nf_emit_arr_close(e);
	r = nf_emit_end(e);
	nf_emit_free(e);
	nf_disks_free(&d);
	return r ? NF_EXIT_FAILURE : NF_EXIT_OK;
}

static int disk_pick(struct nf_global *g, int argc, char **argv)
{
	struct nf_diskrule *rule;
	struct nf_disks d;
	struct nf_emit *e;
	size_t idx;
	int r;

	if (argc < 1)
		return nf_usage_error("disk", "'pick' needs a RULE");
	if ((r = nf_diskrule_parse(g->ctx, argv[0], &rule)) < 0)
		return nf_usage_error("disk", "%s", nf_error_text(g->ctx, r));
	if ((r = gather(g, argc - 1, argv + 1, &d)) < 0) {
		nf_diskrule_free(rule);
		return nf_cmd_fail(g, "disk", r);
	}
	r = nf_disk_pick(g->ctx, rule, &d, &idx);
	nf_diskrule_free(rule);
	if (r < 0) {
		nf_disks_free(&d);
		return nf_cmd_fail(g, "disk", r);
	}
	if (nf_emit_new(&e, stdout, g->json)) {
		nf_disks_free(&d);
		return NF_EXIT_FAILURE;
	}
	if (g->json) {
		nf_emit_arr_open(e, "disks");
		emit_disk(e, &d.v[idx]);
		nf_emit_arr_close(e);
	} else {
		nf_emit_text(e, "%s\n", d.v[idx].path);
	}
	r = nf_emit_end(e);
	nf_emit_free(e);
	nf_disks_free(&d);
	return r ? NF_EXIT_FAILURE : NF_EXIT_OK;
}

static int disk_where(struct nf_global *g, int argc, char **argv)
{
	struct nf_mount_info m;
	struct nf_emit *e;
	char devno[32];
	int r;

	if (argc != 1)
		return nf_usage_error("disk", "'where' needs exactly one PATH");
	if ((r = nf_mount_find(g->ctx, argv[0], &m)) < 0)
		return nf_cmd_fail(g, "disk", r);
	if (nf_emit_new(&e, stdout, g->json)) {
		nf_mount_info_clear(&m);
		return NF_EXIT_FAILURE;
	}
	snprintf(devno, sizeof(devno), "%u:%u", m.major, m.minor);
	nf_emit_str(e, "path", "%s: ", argv[0]);
	nf_emit_str(e, "mountpoint", "mounted on %s", m.mountpoint);
	nf_emit_str(e, "root", NULL, m.root);
	nf_emit_str(e, "fstype", " (%s", m.fstype);
	nf_emit_str(e, "source", " from %s", m.source);
	nf_emit_str(e, "devno", " %s)", devno);
	nf_emit_str(e, "disk", ", disk %s\n", m.disk);
	r = nf_emit_end(e);
	nf_emit_free(e);
	nf_mount_info_clear(&m);
	return r ? NF_EXIT_FAILURE : NF_EXIT_OK;
}

static int cmd_disk(struct nf_global *g, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "sysroot", required_argument, NULL, 'S' },
		{ 0 }
	};
	char *pos[NF_DISK_MAX_ARGS];
	const char *sub;
	size_t npos = 0;
	int o;

	/* options may come before, between and after the arguments */
	for (;;) {
		o = nf_getopt(&nf_cmd_disk, argc, argv, "", longopts);
		if (o == -1) {
			if (optind >= argc)
				break;
			if (npos >= NF_DISK_MAX_ARGS)
				return nf_usage_error("disk", "too many arguments");
			pos[npos++] = argv[optind++];
			continue;
		}
		if (o == -2)
			return 0;
		if (o == -3)
			return NF_EXIT_USAGE;
		if (o == 'S' &&
		    (nf_cmd_path_arg("disk", "--sysroot", optarg, 0) ||
		     nf_ctx_set_sysroot(g->ctx, optarg) < 0))
			return NF_EXIT_FAILURE;
	}
	if (npos == 0)
		return nf_usage_error("disk", "missing subcommand (list, pick or where)");
	sub = pos[0];
	argc = (int)npos - 1;
	argv = pos + 1;
	if (!strcmp(sub, "list"))
		return disk_list(g, argc, argv);
	if (!strcmp(sub, "pick"))
		return disk_pick(g, argc, argv);
	if (!strcmp(sub, "where"))
		return disk_where(g, argc, argv);
	return nf_usage_error("disk", "unknown subcommand '%s'", sub);
}
