/* SPDX-License-Identifier: MIT */
/* nodeforge install: a signed image onto a local disk, bootable by UEFI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static int cmd_install(struct nf_global *g, int argc, char **argv);

#define NF_INSTALL_DEFAULT_RULE "removable=0,transport!=usb,empty,smallest"

const struct nf_cmd nf_cmd_install = {
	.name = "install",
	.summary = "install a signed image onto a local disk (UEFI)",
	.help = "usage: nodeforge install --image FILE --pubkey PUB --disk DEV|auto [options]\n"
		"\n"
		"Verify FILE.manifest.json's signature with PUB, partition DEV as GPT\n"
		"(ESP + root), make the filesystems, unpack FILE safely, write fstab\n"
		"by UUID, install GRUB for UEFI, record the installed manifest and\n"
		"make the disk the first EFI boot entry.  A disk that holds a\n"
		"filesystem or partition table is refused unless --wipe is given.\n"
		"\n"
		"Options:\n"
		"      --image FILE       image archive (FILE.manifest.json and .sig beside it)\n"
		"      --pubkey PUB       Ed25519 public key the manifest is signed with\n"
		"      --disk DEV|auto    target disk; auto: chosen by --disk-rule\n"
		"      --disk-rule RULE   rule for auto (default: " NF_INSTALL_DEFAULT_RULE ")\n"
		"      --wipe             erase a disk that holds data\n"
		"      --esp-size N       ESP size (default 512M; K/M/G = KiB/MiB/GiB)\n"
		"      --kernel-args ARGS appended to the kernel command line\n"
		"      --label TEXT       EFI boot entry description (default nodeforge)\n"
		"      --efivars DIR      EFI variables directory (efivarfs layout)\n"
		"      --no-efi           do not touch the EFI boot variables\n"
		"\n"
		"Exit status: 0 installed, 1 refused or failed (bad signature, disk holds data,\n"
		"disk in use, a tool failed), 2 usage error.\n",
	.run = cmd_install,
};

enum { O_IMAGE = 1000, O_PUBKEY, O_DISK, O_RULE, O_WIPE, O_ESP, O_KARGS,
       O_LABEL, O_EFIVARS, O_NOEFI };

static void progress(void *data, const char *what)
{
	struct nf_global *g = data;

	if (!g->quiet && !g->json)
		fprintf(stderr, "nodeforge install: %s\n", what);
}

static int parse_mib(const char *s, unsigned long long *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s)
		return -1;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	else if (*end == 'G' || *end == 'g')
		v <<= 30, end++;
	if (*end || v > (1ULL << 40))
		return -1;
	*out = v;
	return 0;
}

static int pick_auto(struct nf_global *g, const char *rule_text, char **out)
{
	struct nf_diskrule *rule;
	struct nf_disks d;
	size_t idx;
	int r;

	if ((r = nf_diskrule_parse(g->ctx, rule_text, &rule)) < 0)
		return r;
	if ((r = nf_disk_scan(g->ctx, &d)) < 0) {
		nf_diskrule_free(rule);
		return r;
	}
	r = nf_disk_pick(g->ctx, rule, &d, &idx);
	nf_diskrule_free(rule);
	if (r == 0 && !(*out = strdup(d.v[idx].path)))
		r = -12;
	nf_disks_free(&d);
	return r;
}

static int cmd_install(struct nf_global *g, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "image", required_argument, NULL, O_IMAGE },
		{ "pubkey", required_argument, NULL, O_PUBKEY },
		{ "disk", required_argument, NULL, O_DISK },
		{ "disk-rule", required_argument, NULL, O_RULE },
		{ "wipe", no_argument, NULL, O_WIPE },
		{ "esp-size", required_argument, NULL, O_ESP },
		{ "kernel-args", required_argument, NULL, O_KARGS },
		{ "label", required_argument, NULL, O_LABEL },
		{ "efivars", required_argument, NULL, O_EFIVARS },
		{ "no-efi", no_argument, NULL, O_NOEFI },
		{ 0 }
	};
	struct nf_install_opts o = { .progress = progress, .progress_data = g };
	struct nf_install_result res;
	const char *disk = NULL, *rule = NF_INSTALL_DEFAULT_RULE;
	char *picked = NULL;
	struct nf_emit *e;
	int c, r;

	while ((c = nf_getopt_args(&nf_cmd_install, argc, argv, "", longopts,
				   NULL)) != -1) {
		switch (c) {
		case -2: return 0;
		case -3: return NF_EXIT_USAGE;
		case O_IMAGE: o.image = optarg; break;
		case O_PUBKEY: o.pubkey = optarg; break;
		case O_DISK: disk = optarg; break;
		case O_RULE: rule = optarg; break;
		case O_WIPE: o.wipe = 1; break;
		case O_ESP:
			if (parse_mib(optarg, &o.esp_size) < 0)
				return nf_usage_error("install", "bad ESP size '%s'", optarg);
			break;
		case O_KARGS: o.kernel_args = optarg; break;
		case O_LABEL: o.label = optarg; break;
		case O_EFIVARS: o.efivars = optarg; break;
		case O_NOEFI: o.no_efi = 1; break;
		}
	}
	if (!o.image || !disk || !o.pubkey)
		return nf_usage_error("install", "--image, --pubkey and --disk are required");
	if (!strcmp(disk, "auto")) {
		if ((r = pick_auto(g, rule, &picked)) < 0)
			return nf_cmd_fail(g, "install", r);
		disk = picked;
	}
	o.disk = disk;
	r = nf_install(g->ctx, &o, NULL, &res);
	if (r < 0) {
		free(picked);
		return nf_cmd_fail(g, "install", r);
	}
	if (nf_emit_new(&e, stdout, g->json) == 0) {
		char entry[16];

		snprintf(entry, sizeof(entry), "Boot%04X", (unsigned)res.boot_entry);
		nf_emit_str(e, "disk", "installed onto %s", disk);
		nf_emit_str(e, "esp", " (ESP %s", res.esp_dev);
		nf_emit_str(e, "esp_uuid", " UUID=%s,", res.esp_uuid);
		nf_emit_str(e, "root", " root %s", res.root_dev);
		nf_emit_str(e, "root_uuid", " UUID=%s)\n", res.root_uuid);
		nf_emit_str(e, "boot_entry", "boot entry: %s\n",
			    res.boot_entry < 0 ? NULL : entry);
		nf_emit_end(e);
		nf_emit_free(e);
	}
	free(picked);
	return 0;
}
