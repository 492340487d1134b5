/* SPDX-License-Identifier: MIT */
#include "cmd.h"

static int cmd_bootdev(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_bootdev = {
	.name = "bootdev",
	.summary = "set the device nodes boot from (network or disk) through their BMCs",
	.help = "usage: nodeforge bootdev pxe|disk HOSTLIST [--once] [--inventory FILE]\n"
		"                         [--fanout N] [--timeout SECONDS] [--json]\n"
		"\n"
		"Ask the BMC of every node of HOSTLIST (gpu-[01-04],cpu-01) to boot the\n"
		"node from the network (pxe) or its disk (disk): over IPMI 2.0\n"
		"(lanplus, by ipmitool: chassis bootdev) or Redfish (the\n"
		"ComputerSystem's Boot.BootSourceOverrideTarget Pxe or Hdd), as the\n"
		"inventory's bmc: or the site's bmc.protocol says.  Credentials as\n"
		"for 'nodeforge power'.  The setting takes effect at the next boot:\n"
		"follow it with 'nodeforge power cycle'.\n"
		"\n"
		"      --once            the next boot only (Redfish\n"
		"                        BootSourceOverrideEnabled Once); without it\n"
		"                        every boot (Continuous; IPMI persistent)\n"
		NF_BMC_HELP_OPTS
		"Exit status: 0 every node took it, 1 a node failed (named with its\n"
		"reason) or the BMC credentials cannot be read, 2 usage error, 3 the\n"
		"inventory has errors.\n",
	.run = cmd_bootdev,
};

static int cmd_bootdev(struct nf_global *g, int argc, char **argv)
{
	static const char *const verbs[] = { "pxe", "disk" };
	static const enum nf_power_action actions[] = { NF_BOOTDEV_PXE,
							NF_BOOTDEV_DISK };

	return nf_cmd_bmc_run(g, &nf_cmd_bootdev, argc, argv, verbs, 2, actions,
			      NF_BMC_ONCE);
}
