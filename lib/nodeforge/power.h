/* SPDX-License-Identifier: MIT */
/* libnodeforge's public API: power and boot device through the nodes'
 * BMCs (lib/power.c).  Included by nodeforge.h. */
#ifndef NF_PUBLIC_POWER_H
#define NF_PUBLIC_POWER_H

enum nf_power_action {
	NF_POWER_ON,
	NF_POWER_OFF,
	NF_POWER_CYCLE,
	NF_POWER_RESET,
	NF_POWER_STATUS,
	NF_BOOTDEV_PXE,
	NF_BOOTDEV_DISK,
};

/* "on", "off", "cycle", "reset", "status", "pxe", "disk" */
const char *nf_power_action_name(enum nf_power_action a);

struct nf_power_opts {
	enum nf_power_action action;
	int once;            /* bootdev: the next boot only */
	unsigned fanout;     /* BMCs asked at once; 0: NF_POWER_FANOUT */
	long timeout_ms;     /* per node; 0: the site's bmc.timeout, else 20 s */
	long wait_ms;        /* on, off, cycle, reset: then poll the power
			      * state until it is the action's (off for off,
			      * else on) or this long passed; 0: done when
			      * the BMC took the action */
};

#define NF_POWER_WAIT_MS 60000L
#define NF_POWER_WAIT_MAX_S 3600

#define NF_POWER_FANOUT 32
#define NF_POWER_FANOUT_MAX 1024

/* What one node's BMC did */
struct nf_power_result {
	const char *name;     /* borrowed from the inventory */
	const char *protocol; /* "ipmi", "redfish" */
	char bmc[64];         /* ADDRESS:PORT, "" when the node has none */
	int ok;
	char state[32];       /* status, and an action waited for: "on",
			       * "off" (the last one seen when the wait
			       * failed); bootdev: "pxe once" */
	char error[512];      /* why it failed, "" when ok */
};

/* Do ACTION on the BMCs of the N nodes NAMES of the inventory, at most
 * o->fanout at once, with the credentials of the site's secrets.bmc file.
 * A node that fails (no BMC, no answer, refused) has its reason in its
 * result and the others still run; the return is an error only when
 * nothing could start (a name not in the inventory, no credentials).
 * *out holds N results in the order of NAMES */
int nf_power_run(struct nf_ctx *ctx, const struct nf_site *site,
		 const struct nf_inventory *inv, char *const *names, size_t n,
		 const struct nf_power_opts *o, struct nf_power_result **out);

#endif
