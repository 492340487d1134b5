/* SPDX-License-Identifier: MIT */
/* nodeforge efi: list boot entries, set BootNext / BootOrder, add an entry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static int cmd_efi(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_efi = {
	.name = "efi",
	.summary = "list EFI boot entries, set BootNext and BootOrder",
	.help = "usage: nodeforge efi list [--json] [--sysroot DIR | --efivars DIR]\n"
		"       nodeforge efi bootnext ENTRY\n"
		"       nodeforge efi bootorder ENTRY...\n"
		"       nodeforge efi add --disk DEV --part N --loader PATH --label TEXT [--first]\n"
		"\n"
		"ENTRY: Boot#### or its four hex digits, 'pxe' (the first active\n"
		"network entry in boot order), or an entry's exact description.\n"
		"\n"
		"bootnext: boot ENTRY once at the next reboot (re-provisioning: 'pxe').\n"
		"bootorder: replace the boot order with the given entries.\n"
		"add: create a Boot#### entry for LOADER (an ESP path such as\n"
		"'\\EFI\\BOOT\\BOOTX64.EFI') on GPT partition N of DEV (a disk or disk\n"
		"image); --first also puts it first in the boot order.\n"
		"\n"
		"Options:\n"
		"      --sysroot DIR  EFI variables under DIR/sys/firmware/efi/efivars\n"
		"      --efivars DIR  EFI variables in DIR (efivarfs layout)\n"
		"      --json         machine-readable output (list)\n"
		"      --disk DEV     add: the disk or disk image of the ESP\n"
		"      --part N       add: the ESP's GPT partition number\n"
		"      --loader PATH  add: the loader's path on the ESP\n"
		"      --label TEXT   add: the entry's description\n"
		"      --first        add: put the entry first in the boot order\n"
		"\n"
		"Without EFI (no /sys/firmware/efi) it says so and exits 1.\n"
		"\n"
		"Exit status: 0 ok, 1 failure (no EFI, unknown entry, unreadable or malformed\n"
		"variable), 2 usage error.\n",
	.run = cmd_efi,
};

#define NF_EFI_MAX_ARGS 4096

enum { O_SYSROOT = 1000, O_EFIVARS, O_DISK, O_PART, O_LOADER, O_LABEL,
       O_FIRST };

struct efi_opts {
	const char *efivars, *disk, *loader, *label, *part;
	int first;
};

static int efi_list(struct nf_global *g, struct nf_efi *efi)
{
	struct nf_efi_entry *v;
	struct nf_emit *e;
	unsigned *order;
	size_t n, no;
	int cur, next, r;
	char buf[16];

	if ((r = nf_efi_entries(efi, &v, &n)) < 0 ||
	    (r = nf_efi_boot_current(efi, &cur)) < 0 ||
	    (r = nf_efi_boot_next(efi, &next)) < 0)
		return nf_cmd_fail(g, "efi", r);
	if ((r = nf_efi_boot_order(efi, &order, &no)) < 0) {
		nf_efi_entries_free(v, n);
		return nf_cmd_fail(g, "efi", r);
	}
	if (nf_emit_new(&e, stdout, g->json)) {
		nf_efi_entries_free(v, n);
		free(order);
		return NF_EXIT_FAILURE;
	}
	snprintf(buf, sizeof(buf), "Boot%04X", (unsigned)cur);
	nf_emit_str(e, "boot_current", "BootCurrent: %s\n", cur < 0 ? NULL : buf);
	snprintf(buf, sizeof(buf), "Boot%04X", (unsigned)next);
	nf_emit_str(e, "boot_next", "BootNext: %s\n", next < 0 ? NULL : buf);
	nf_emit_text(e, "BootOrder:");
	nf_emit_arr_open(e, "boot_order");
	for (size_t i = 0; i < no; i++) {
		snprintf(buf, sizeof(buf), "Boot%04X", order[i]);
		nf_emit_str(e, NULL, i ? ",%s" : " %s", buf + 4);
	}
	nf_emit_arr_close(e);
	nf_emit_text(e, "\n");
	nf_emit_arr_open(e, "entries");
	for (size_t i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "Boot%04X", v[i].num);
		nf_emit_obj_open(e, NULL);
		nf_emit_text(e, "%s", v[i].active ? "*" : " ");
		nf_emit_str(e, "name", "%s ", buf);
		nf_emit_bool(e, "active", NULL, v[i].active);
		nf_emit_bool(e, "network", NULL, v[i].network);
		nf_emit_int(e, "attributes", NULL, v[i].attributes);
		nf_emit_str(e, "description", "%-32s ", v[i].description);
		nf_emit_str(e, "device_path", "%s", v[i].device_path);
		nf_emit_text(e, "%s\n", v[i].network ? "  [network]" : "");
		nf_emit_obj_close(e);
	}
	nf_emit_arr_close(e);
	r = nf_emit_end(e);
	nf_emit_free(e);
	nf_efi_entries_free(v, n);
	free(order);
	return r ? NF_EXIT_FAILURE : NF_EXIT_OK;
}

static int efi_bootnext(struct nf_global *g, struct nf_efi *efi, int argc,
			char **argv)
{
	unsigned num;
	int r;

	if (argc != 1)
		return nf_usage_error("efi", "'bootnext' needs exactly one ENTRY");
	if ((r = nf_efi_resolve(efi, argv[0], &num)) < 0 ||
	    (r = nf_efi_set_boot_next(efi, num)) < 0)
		return nf_cmd_fail(g, "efi", r);
	if (!g->quiet)
		printf("BootNext: Boot%04X\n", num);
	return 0;
}

static int efi_bootorder(struct nf_global *g, struct nf_efi *efi, int argc,
			 char **argv)
{
	unsigned *v;
	int r;

	if (argc < 1)
		return nf_usage_error("efi", "'bootorder' needs at least one ENTRY");
	v = calloc((size_t)argc, sizeof(*v));
	if (!v)
		return NF_EXIT_FAILURE;
	for (int i = 0; i < argc; i++)
		if ((r = nf_efi_resolve(efi, argv[i], &v[i])) < 0) {
			free(v);
			return nf_cmd_fail(g, "efi", r);
		}
	r = nf_efi_set_boot_order(efi, v, (size_t)argc);
	if (r == 0 && !g->quiet) {
		printf("BootOrder:");
		for (int i = 0; i < argc; i++)
			printf("%s%04X", i ? "," : " ", v[i]);
		printf("\n");
	}
	free(v);
	return r < 0 ? nf_cmd_fail(g, "efi", r) : 0;
}

static int efi_add(struct nf_global *g, struct nf_efi *efi,
		   const struct efi_opts *o)
{
	struct nf_disks d = { 0 };
	const struct nf_part *p = NULL;
	unsigned long part;
	unsigned num, *order = NULL, *nv;
	size_t no;
	char *end;
	int r;

	if (!o->disk || !o->part || !o->loader || !o->label)
		return nf_usage_error("efi", "'add' needs --disk, --part, --loader and --label");
	part = strtoul(o->part, &end, 10);
	if (*end || !part || part > 256)
		return nf_usage_error("efi", "bad partition number '%s'", o->part);
	if ((r = nf_disk_probe(g->ctx, o->disk, &d)) < 0)
		return nf_cmd_fail(g, "efi", r);
	for (size_t i = 0; i < d.v[0].nparts; i++)
		if (d.v[0].parts[i].number == part)
			p = &d.v[0].parts[i];
	if (!p || !d.v[0].pttype || strcmp(d.v[0].pttype, "gpt")) {
		fprintf(stderr, "nodeforge efi: '%s' has no GPT partition %lu\n",
			o->disk, part);
		nf_disks_free(&d);
		return NF_EXIT_FAILURE;
	}
	r = nf_efi_add(efi, o->label, (unsigned)part, p->start, p->size,
		       p->uuid, o->loader, &num);
	nf_disks_free(&d);
	if (r < 0)
		return nf_cmd_fail(g, "efi", r);
	if (o->first) {
		if ((r = nf_efi_boot_order(efi, &order, &no)) < 0)
			return nf_cmd_fail(g, "efi", r);
		nv = calloc(no + 1, sizeof(*nv));
		if (!nv) {
			free(order);
			return NF_EXIT_FAILURE;
		}
		nv[0] = num;
		for (size_t i = 0; i < no; i++)
			nv[i + 1] = order[i];
		free(order);
		r = nf_efi_set_boot_order(efi, nv, no + 1);
		free(nv);
		if (r < 0)
			return nf_cmd_fail(g, "efi", r);
	}
	if (!g->quiet)
		printf("Boot%04X\n", num);
	return 0;
}

static int cmd_efi(struct nf_global *g, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "sysroot", required_argument, NULL, O_SYSROOT },
		{ "efivars", required_argument, NULL, O_EFIVARS },
		{ "disk", required_argument, NULL, O_DISK },
		{ "part", required_argument, NULL, O_PART },
		{ "loader", required_argument, NULL, O_LOADER },
		{ "label", required_argument, NULL, O_LABEL },
		{ "first", no_argument, NULL, O_FIRST },
		{ 0 }
	};
	struct efi_opts o = { 0 };
	struct nf_efi *efi;
	char *pos[NF_EFI_MAX_ARGS];
	const char *sub;
	size_t npos = 0;
	int c, r;

	/* options may come before, between and after the arguments */
	for (;;) {
		c = nf_getopt(&nf_cmd_efi, argc, argv, "", longopts);
		if (c == -1) {
			if (optind >= argc)
				break;
			if (npos >= NF_EFI_MAX_ARGS)
				return nf_usage_error("efi", "too many arguments");
			pos[npos++] = argv[optind++];
			continue;
		}
		switch (c) {
		case -2: return 0;
		case -3: return NF_EXIT_USAGE;
		case O_SYSROOT:
			if (nf_ctx_set_sysroot(g->ctx, optarg) < 0)
				return NF_EXIT_FAILURE;
			break;
		case O_EFIVARS: o.efivars = optarg; break;
		case O_DISK: o.disk = optarg; break;
		case O_PART: o.part = optarg; break;
		case O_LOADER: o.loader = optarg; break;
		case O_LABEL: o.label = optarg; break;
		case O_FIRST: o.first = 1; break;
		}
	}
	if (npos == 0)
		return nf_usage_error("efi", "missing subcommand (list, bootnext, bootorder or add)");
	sub = pos[0];
	argc = (int)npos - 1;
	argv = pos + 1;
	if (strcmp(sub, "list") && strcmp(sub, "bootnext") &&
	    strcmp(sub, "bootorder") && strcmp(sub, "add"))
		return nf_usage_error("efi", "unknown subcommand '%s'", sub);
	if (!strcmp(sub, "list") || !strcmp(sub, "add")) {
		if (argc > 0)
			return nf_usage_error("efi", "unexpected argument '%s'",
					      argv[0]);
	}
	r = o.efivars ? nf_efi_open_dir(g->ctx, o.efivars, &efi)
		      : nf_efi_open(g->ctx, &efi);
	if (r < 0)
		return nf_cmd_fail(g, "efi", r);
	if (!strcmp(sub, "list"))
		r = efi_list(g, efi);
	else if (!strcmp(sub, "bootnext"))
		r = efi_bootnext(g, efi, argc, argv);
	else if (!strcmp(sub, "bootorder"))
		r = efi_bootorder(g, efi, argc, argv);
	else
		r = efi_add(g, efi, &o);
	nf_efi_free(efi);
	return r;
}
