/* SPDX-License-Identifier: MIT */
/*
 * The slurm facet's GRES checks: gres.conf declares the profile's GPUs,
 * those GPUs are on the PCI bus, and each line's Cores= are the GPUs'
 * NUMA-local CPUs (a node whose gres.conf disagrees with its hardware
 * fails).  The GPU lines are rendered at first boot by nodeforge gres
 * render (lib/gres.c).
 */
#include "internal.h"
#include "slurm_int.h"
#include "internal/gres.h"

#include <stdlib.h>

static const json_t *gpu_gres(const json_t *sec)
{
	size_t i;
	json_t *g;

	json_array_foreach(json_object_get(sec, "gres"), i, g)
		if (!strcmp(json_string_value(json_object_get(g, "name")) ?: "", "gpu"))
			return g;
	return NULL;
}

/* One gres.conf line for GPUs: its devices' minor numbers and Cores= */
struct gres_line {
	char type[64];
	char cores[256];
	int minors[64];
	size_t n;
};

/* Parse gres.conf's Name=gpu lines; returns the count of lines, -1 when
 * the file is absent, -2 when Slurm detects GPUs itself (AutoDetect) */
static int gres_lines(struct nf_vcheck *c, struct gres_line *v, size_t max)
{
	char *buf = NULL, *save = NULL, *l;
	int n = 0, autodetect = 0;

	if (nf_v_read(c, NF_VROOT, "/etc/slurm/gres.conf", 256 * 1024, &buf, NULL))
		return -1;
	for (l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *name = nf_v_conf_get(l, "Name", "="), *tok, *s2 = NULL;
		struct gres_line g = { 0 };

		if (strcasestr(l, "AutoDetect=nvml"))
			autodetect = 1;
		if (!name || strncmp(name, "gpu", 3) || (name[3] && !strchr(" \t", name[3])) ||
		    (size_t)n >= max) {
			free(name);
			continue;
		}
		free(name);
		for (tok = strtok_r(l, " \t", &s2); tok; tok = strtok_r(NULL, " \t", &s2)) {
			if (!strncasecmp(tok, "Type=", 5))
				snprintf(g.type, sizeof(g.type), "%s", tok + 5);
			else if (!strncasecmp(tok, "Cores=", 6))
				snprintf(g.cores, sizeof(g.cores), "%s", tok + 6);
			else if (!strncasecmp(tok, "File=", 5)) {
				char **devs;
				size_t nd;

				if (nf_hostlist_expand(tok + 5, &devs, &nd, 64))
					continue;
				for (size_t i = 0; i < nd && g.n < 64; i++) {
					const char *d = devs[i] + strlen(devs[i]);

					while (d > devs[i] && d[-1] >= '0' && d[-1] <= '9')
						d--;
					g.minors[g.n++] = atoi(d);
				}
				nf_strv_free(devs, nd);
			}
		}
		v[n++] = g;
	}
	free(buf);
	return n ? n : autodetect ? -2 : 0;
}

int nf_slurm_check_gres(struct nf_vcheck *c, const json_t *sec)
{
	const json_t *g = gpu_gres(sec);
	const char *type = json_string_value(json_object_get(g, "type"));
	json_int_t want = json_integer_value(json_object_get(g, "count"));
	struct gres_line v[16];
	struct stat st;
	size_t total = 0;
	int n;

	if (!g)
		return nf_v_skip(c, "the profile declares no GPU GRES");
	nf_v_expect(c, "gres.conf declares %lld GPUs of type %s", (long long)want,
		    type ? type : "any");
	n = gres_lines(c, v, NF_ARRAY_SIZE(v));
	if (n == -2) {
		nf_v_seen(c, "AutoDetect=nvml");
		return NF_V_PASS;
	}
	/* GPU lines with Cores=/Links= "auto" are the node's own topology:
	 * an image holds them in gres.auto.json until the node's first boot */
	if (n == 0 && nf_v_static(c) &&
	    nf_v_stat(c, NF_VROOT, "/etc/nodeforge/gres.auto.json", &st) == 0)
		return nf_v_skip(c, "GPU lines are rendered from the node's topology "
				 "at first boot (gres.auto.json)");
	if (n < 0) {
		nf_v_seen(c, "no /etc/slurm/gres.conf");
		nf_v_remedy(c, "on the build host: nodeforge build %s, then boot this node "
			    "from the new image", nf_v_role(c));
		return NF_V_FAIL;
	}
	for (int i = 0; i < n; i++) {
		if (type && *v[i].type && strcmp(v[i].type, type)) {
			nf_v_seen(c, "Type=%s", v[i].type);
			nf_v_remedy(c, "fix Type= in /etc/slurm/gres.conf and scontrol reconfigure");
			return NF_V_FAIL;
		}
		total += v[i].n;
	}
	nf_v_seen(c, "%zu GPUs in %d lines", total, n);
	if ((json_int_t)total == want)
		return NF_V_PASS;
	nf_v_remedy(c, "fix File= in /etc/slurm/gres.conf and scontrol reconfigure");
	return NF_V_FAIL;
}

/* NVIDIA GPUs in PCI bus order (the order of /dev/nvidiaN), as PCI
 * addresses; returns the count */
static int pci_gpus(struct nf_vcheck *c, char addr[][32], int max)
{
	char **names, path[256], *buf;
	int n = nf_v_list(c, NF_VSYS, "/sys/bus/pci/devices", &names, 4096), k = 0;

	for (int i = 0; i < n; i++) {
		int gpu;

		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%.40s/vendor", names[i]);
		if (nf_v_read(c, NF_VSYS, path, 64, &buf, NULL))
			continue;
		gpu = !strncmp(buf, "0x10de", 6);
		free(buf);
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%.40s/class", names[i]);
		if (!gpu || nf_v_read(c, NF_VSYS, path, 64, &buf, NULL))
			continue;
		gpu = !strncmp(buf, "0x0302", 6) || !strncmp(buf, "0x0300", 6);
		free(buf);
		if (gpu && k < max)
			snprintf(addr[k++], 32, "%.31s", names[i]);
	}
	if (n > 0)
		nf_strv_free(names, (size_t)n);
	return k;
}

int nf_slurm_check_hardware(struct nf_vcheck *c, const json_t *sec)
{
	const json_t *g = gpu_gres(sec);
	json_int_t want = json_integer_value(json_object_get(g, "count"));
	char addr[64][32];
	int n;

	if (!g)
		return nf_v_skip(c, "the profile declares no GPU GRES");
	n = pci_gpus(c, addr, 64);
	nf_v_expect(c, "%lld NVIDIA GPUs on the PCI bus", (long long)want);
	nf_v_seen(c, "%d", n);
	if (n == want)
		return NF_V_PASS;
	nf_v_remedy(c, "lspci -d 10de: ; a missing GPU needs a reseat or an RMA: drain the node");
	return NF_V_FAIL;
}

#define MAXCPU 8192

/* With the driver loaded, /dev/nvidiaN is the GPU whose
 * /proc/driver/nvidia/gpus/BUS/information says "Device Minor: N": put
 * each GPU's address at its minor (the PCI order stays where the driver
 * says nothing) */
static void driver_minors(struct nf_vcheck *c, char addr[][32], int *ng, int max)
{
	char **names, path[320], *buf, bus[NF_PCI_ADDR_LEN];
	char by_minor[64][32] = { { 0 } };
	int n = nf_v_list(c, NF_VSYS, "/proc/driver/nvidia/gpus", &names, 64);
	int top = -1, minor, ok = n > 0;

	for (int i = 0; ok && i < n; i++) {
		snprintf(path, sizeof(path), "/proc/driver/nvidia/gpus/%.40s/information",
			 names[i]);
		if (nf_v_read(c, NF_VSYS, path, 16 * 1024, &buf, NULL))
			ok = 0;
		else {
			ok = nf_gres_parse_information(buf, &minor, bus) == 0 &&
			     minor < max && minor < 64 && !*by_minor[minor];
			free(buf);
		}
		if (ok) {
			snprintf(by_minor[minor], 32, "%s", bus);
			top = minor > top ? minor : top;
		}
	}
	if (n > 0)
		nf_strv_free(names, (size_t)n);
	if (!ok)
		return;
	for (int m = 0; m <= top; m++)
		memcpy(addr[m], by_minor[m], 32);
	*ng = top + 1;
}

int nf_slurm_check_cores(struct nf_vcheck *c, const json_t *sec)
{
	const json_t *node = json_object_get(sec, "node");
	json_int_t ncores = json_integer_value(json_object_get(node, "sockets")) *
			    json_integer_value(json_object_get(node, "cores_per_socket"));
	struct gres_line v[16];
	char addr[64][32];
	int n = gres_lines(c, v, NF_ARRAY_SIZE(v)), ng = pci_gpus(c, addr, 64);
	int checked = 0;

	driver_minors(c, addr, &ng, 64);

	if (n == -2)
		return nf_v_skip(c, "gres.conf uses AutoDetect=nvml");
	if (ncores <= 0 || ncores > MAXCPU)
		return nf_v_skip(c, "the profile has no node shape");
	nf_v_expect(c, "each gres.conf Cores= equals its GPUs' NUMA-local cores");
	for (int i = 0; i < n; i++) {
		uint8_t want[MAXCPU / 8] = { 0 }, have[MAXCPU / 8] = { 0 };
		char *ws, *hs;
		int same;

		if (!*v[i].cores)
			continue;
		for (size_t j = 0; j < v[i].n; j++) {
			char path[256], *buf;
			int m = v[i].minors[j], bad;

			if (m < 0 || m >= ng || !*addr[m]) {
				nf_v_seen(c, "/dev/nvidia%d has no GPU on the PCI bus", m);
				return NF_V_FAIL;
			}
			snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/local_cpulist", addr[m]);
			if (nf_v_read(c, NF_VSYS, path, 64 * 1024, &buf, NULL))
				return nf_v_skip(c, "no local_cpulist for %s", addr[m]);
			bad = nf_cpulist_fold_cores(buf, (unsigned)ncores, want, MAXCPU);
			free(buf);
			if (bad) {
				nf_v_seen(c, "bad local_cpulist for %s", addr[m]);
				return NF_V_FAIL;
			}
		}
		if (nf_cpulist_parse(v[i].cores, have, MAXCPU, NULL)) {
			nf_v_seen(c, "bad Cores=%s", v[i].cores);
			return NF_V_FAIL;
		}
		same = !memcmp(want, have, sizeof(want));
		checked++;
		if (same)
			continue;
		ws = nf_cpulist_format(want, MAXCPU);
		hs = nf_cpulist_format(have, MAXCPU);
		nf_v_seen(c, "GPU /dev/nvidia%d (%s): Cores=%s but its NUMA-local cores are %s",
			  v[i].minors[0], addr[v[i].minors[0]], hs ? hs : "?", ws ? ws : "?");
		nf_v_remedy(c, "set Cores=%s on that line of /etc/slurm/gres.conf and "
			    "scontrol reconfigure", ws ? ws : "?");
		free(ws);
		free(hs);
		return NF_V_FAIL;
	}
	if (!checked)
		return nf_v_skip(c, "gres.conf sets no Cores=");
	nf_v_seen(c, "%d lines match the topology", checked);
	return NF_V_PASS;
}
