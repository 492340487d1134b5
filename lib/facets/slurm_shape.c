/* SPDX-License-Identifier: MIT */
/*
 * The node's NodeName= line against the node: slurmctld refuses a node
 * that registers fewer CPUs or less memory than its line declares (the
 * node becomes INVAL: "Low CPUs", "Low socket*core*thread count", "Low
 * RealMemory"), so a line written for other hardware keeps a healthy
 * node out of every job.
 */
#include "slurm_int.h"
#include "internal/gres.h"

#include <stdlib.h>

struct shape {
	long long sockets, cores, threads, cpus, mem_mb;
};

/* One number of the node's line; Slurm's default (1) when absent */
static long long node_num(const char *conf, const char *host, const char *key,
			  int *declared)
{
	char v[64];

	if (!nf_cluster_conf_node_value(conf, host, key, v, sizeof(v)))
		return 1;
	*declared = 1;
	return strtoll(v, NULL, 10);
}

/* What the line declares; 0 when it declares no CPU or memory at all */
static int declared_shape(const char *conf, const char *host, struct shape *s)
{
	int any = 0;

	s->sockets = node_num(conf, host, "Sockets", &any);
	s->cores = node_num(conf, host, "CoresPerSocket", &any);
	s->threads = node_num(conf, host, "ThreadsPerCore", &any);
	s->mem_mb = node_num(conf, host, "RealMemory", &any);
	s->cpus = s->sockets * s->cores * s->threads;
	/* CPUs= alone, or more than the topology gives */
	{
		int cpus_set = 0;
		long long cpus = node_num(conf, host, "CPUs", &cpus_set);

		if (cpus_set && cpus > s->cpus)
			s->cpus = cpus;
		any |= cpus_set;
	}
	return any;
}

/* The node's online CPUs and its memory, as slurmd counts them: the
 * kernel's online list, MemTotal in MiB.  0 or the check's verdict */
static int node_shape(struct nf_vcheck *c, struct shape *s)
{
	uint8_t bits[NF_GRES_MAX_CPUS / 8] = { 0 };
	unsigned long long mem_kb = 0;
	char *online = NULL;
	unsigned maxcpu = 0;

	if (nf_v_read(c, NF_VSYS, "/sys/devices/system/cpu/online", 64 * 1024, &online, NULL) ||
	    !(mem_kb = nf_v_mem_total_kb(c))) {
		free(online);
		nf_v_seen(c, "cannot read /sys/devices/system/cpu/online or "
			  "MemTotal in /proc/meminfo");
		return NF_V_FAIL;
	}
	online[strcspn(online, "\n")] = '\0';
	s->cpus = 0;
	if (!nf_cpulist_parse(online, bits, NF_GRES_MAX_CPUS, &maxcpu))
		for (size_t i = 0; i < sizeof(bits); i++)
			s->cpus += __builtin_popcount(bits[i]);
	s->mem_mb = (long long)(mem_kb / 1024);
	free(online);
	return 0;
}

int nf_slurm_check_shape(struct nf_vcheck *c, const json_t *sec)
{
	struct shape want, have;
	char *conf = NULL, *host;
	int r, low_cpus, low_mem;

	(void)sec;
	if (!nf_profile_runs(nf_v_profile(c), "slurmd"))
		return nf_v_skip(c, "this role runs no slurmd");
	if (!(host = nf_v_node(c)))
		return nf_v_skip(c, "this node has no name to find its NodeName= line by");
	if (nf_v_read(c, NF_VROOT, NF_CLUSTER_CONF, 16 << 20, &conf, NULL) ||
	    !declared_shape(conf, host, &want)) {
		free(host);
		free(conf);
		return nf_v_skip(c, "cluster.conf declares no CPUs or memory for this node");
	}
	free(conf);
	nf_v_expect(c, "at least the %lld CPUs (Sockets=%lld x CoresPerSocket=%lld x "
		    "ThreadsPerCore=%lld) and RealMemory=%lld MiB that %s's NodeName= "
		    "line declares", want.cpus, want.sockets, want.cores, want.threads,
		    want.mem_mb, host);
	free(host);
	if ((r = node_shape(c, &have)))
		return r;
	low_cpus = have.cpus < want.cpus;
	low_mem = have.mem_mb < want.mem_mb;
	nf_v_seen(c, "%lld CPUs online, %lld MiB of memory%s%s%s%s", have.cpus, have.mem_mb,
		  low_cpus || low_mem ? ": slurmctld marks the node INVAL (" : "",
		  low_cpus ? "Low CPUs" : "", low_cpus && low_mem ? ", " : "",
		  low_mem ? "Low RealMemory)" : low_cpus ? ")" : "");
	if (!low_cpus && !low_mem)
		return NF_V_PASS;
	nf_v_remedy(c, "slurmd -C   # prints this node's shape: give the inventory or "
		    "the profile's slurm.node these values, nodeforge pxe, then "
		    "systemctl restart nodeforge-cluster");
	return NF_V_FAIL;
}
