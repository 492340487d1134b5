/* SPDX-License-Identifier: MIT */
/* gpu: what the node's GPUs must be (count, type, ECC, persistence). */
#include "internal.h"

#include <ctype.h>
#include <stdlib.h>

static const struct nf_field fields[] = {
	{ "count", NF_T_INT, .required = true },
	{ "type", NF_T_STR, .required = true },
	{ "ecc", NF_T_BOOL },
	{ "persistence", NF_T_BOOL },
	{ "nvswitch", NF_T_BOOL },
	{ "nvlink", NF_T_BOOL },
	{ "driver", NF_T_STR },
	/* GPUDirect RDMA: nvidia-peermem loaded at boot */
	{ "peermem", NF_T_BOOL },
	{ 0 }
};

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const json_t *slurm = json_object_get(nf_profile_json(l->profile), "slurm");
	json_int_t count = json_integer_value(json_object_get(sec, "count"));
	const char *type = json_string_value(json_object_get(sec, "type"));
	json_int_t declared = 0;
	size_t i;
	json_t *g;

	if (count < 1 || count > 64)
		nf_lint_at(l, "gpu.count", NF_SEV_ERROR,
			   "gpu count %lld is outside 1-64", (long long)count);
	json_array_foreach(json_object_get(slurm, "gres"), i, g) {
		const char *name = json_string_value(json_object_get(g, "name"));
		const char *gt = json_string_value(json_object_get(g, "type"));

		if (!name || strcmp(name, "gpu"))
			continue;
		declared += json_object_get(g, "count")
				    ? json_integer_value(json_object_get(g, "count")) : 1;
		if (gt && type && strcmp(gt, type))
			nf_lint_at(l, "gpu.type", NF_SEV_ERROR,
				   "gpu type '%s' differs from GRES type '%s'",
				   type, gt);
	}
	if (declared && declared != count)
		nf_lint_at(l, "gpu.count", NF_SEV_ERROR,
			   "gpu count %lld differs from the %lld GPUs declared as GRES",
			   (long long)count, (long long)declared);
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* Persistence mode through the daemon NVIDIA ships for it */
/* Debian's driver packages keep their modprobe rules ('nvidia' is the
 * open module nvidia-current-open, the PCI aliases that make udev load
 * it) in /etc/nvidia/nvidia-modprobe.conf, and link them into
 * /etc/modprobe.d/ only through the glx alternative, which a headless
 * node without X or CUDA libraries does not get: without the link,
 * neither udev nor 'modprobe nvidia' finds the driver.  The link Debian
 * would make, where the image has those rules. */
#define NF_NVIDIA_MODPROBE "/etc/nvidia/nvidia-modprobe.conf"

const char *nf_gpu_persistence_unit(const json_t *prof)
{
	return json_is_true(nf_profile_get(prof, "gpu.persistence"))
	       ? "nvidia-persistenced" : NULL;
}

static int apply(struct nf_apply *a, const json_t *sec)
{
	int r;

	if (nf_apply_exists(a, NF_NVIDIA_MODPROBE) &&
	    !nf_apply_exists(a, "/etc/modprobe.d/nvidia.conf") &&
	    (r = nf_apply_symlink(a, "/etc/modprobe.d/nvidia.conf", NF_NVIDIA_MODPROBE)))
		return r;
	/* the driver builds nvidia-peermem, but nothing loads it: without
	 * it NCCL's GPUDirect RDMA falls back to staging through host memory */
	if (json_is_true(json_object_get(sec, "peermem"))) {
		struct nf_buf b = { 0 };

		nf_apply_header(&b, "#", "gpu");
		nf_buf_printf(&b, "nvidia-peermem\n");
		if ((r = nf_apply_write_buf(a, "/etc/modules-load.d/nodeforge-gpu.conf",
					    &b, 0644, 0, 0)))
			return r;
	}
	if (nf_gpu_persistence_unit(a->prof))
		return nf_apply_enable(a, nf_gpu_persistence_unit(a->prof));
	return 0;
}

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* The NVML snapshot fetched by gpu.driver */
static const json_t *gpus(struct nf_vcheck *c)
{
	return json_object_get(nf_v_cache_get(c, "gpu.nvml"), "gpus");
}

static int check_driver(struct nf_vcheck *c, const json_t *sec)
{
	json_t *snap = NULL;
	int r = nf_v_nvml(c, &snap);

	(void)sec;
	nf_v_expect(c, "the NVIDIA driver answers through NVML (libnvidia-ml.so.1)");
	if (r == NF_E_NOHW) {
		const char *why = json_string_value(json_object_get(snap, "error"));
		const char *what = json_string_value(json_object_get(snap, "missing"));

		if (what && !strcmp(what, "driver")) {
			/* the software is in the image: the module did not load */
			nf_v_seen(c, "NVML is installed; the driver is not loaded "
				  "(NVML: %s)", why ? why : "?");
			nf_v_remedy(c, "dmesg | grep NVRM   # 'No NVIDIA GPU found': "
				    "no GPU is visible to this node (BIOS, PCIe, "
				    "passthrough); 'version magic' or 'Unknown "
				    "symbol': the module was built for another "
				    "kernel, rebuild the image (nodeforge build %s)",
				    nf_v_role(c));
		} else {
			nf_v_seen(c, "no NVIDIA driver software: %s",
				  why ? why : "libnvidia-ml.so.1 missing or nvmlInit failed");
			nf_v_remedy(c, "the image lacks the driver: add it to the "
				    "profile (profiles/nvidia.yaml) and rebuild "
				    "(nodeforge build %s)", nf_v_role(c));
		}
		json_decref(snap);
		return NF_V_FAIL;
	}
	if (r) {
		nf_v_seen(c, "NVML: %s", r < 0 ? strerror(-r) : nf_strerror(r));
		return NF_V_FAIL;
	}
	nf_v_seen(c, "driver %s",
		  json_string_value(json_object_get(snap, "driver_version")) ?: "?");
	nf_v_cache_put(c, "gpu.nvml", snap);
	return NF_V_PASS;
}

/* The GRES type of an NVML name: its model word, lowercase, without the
 * vendor and the form factor ("NVIDIA H100 80GB HBM3" -> "h100",
 * "NVIDIA H200" -> "h200", "NVIDIA A100-SXM4-80GB" -> "a100") */
static void gpu_type_of(const char *name, char *out, size_t outsz)
{
	const char *p = name ? name : "";
	size_t n = 0;

	for (;;) {
		p += strspn(p, " ");
		if (!strncasecmp(p, "NVIDIA ", 7))
			p += 7;
		else if (!strncasecmp(p, "Tesla ", 6))
			p += 6;
		else
			break;
	}
	for (; *p && *p != ' ' && *p != '-' && n + 1 < outsz; p++)
		out[n++] = (char)tolower((unsigned char)*p);
	if (outsz)
		out[n] = '\0';
}

/* The GPU type the cluster declares for this node: Gres=gpu:TYPE of the
 * NodeName= line of cluster.conf naming it (the inventory's gpu_type, else
 * its role's), else the profile's gpu.type */
static void declared_type(struct nf_vcheck *c, const json_t *sec, char *out,
			  size_t outsz, const char **from)
{
	char *buf = NULL, *host = nf_v_node(c);

	snprintf(out, outsz, "%s", json_string_value(json_object_get(sec, "type")) ?: "");
	*from = "the profile's gpu.type";
	if (!host || nf_v_read(c, NF_VROOT, NF_CLUSTER_CONF, 16 << 20, &buf, NULL)) {
		free(host);
		return;
	}
	if (nf_cluster_conf_gpu_type(buf, host, out, outsz))
		*from = "cluster.conf (the inventory)";
	free(buf);
	free(host);
}

static int check_count(struct nf_vcheck *c, const json_t *sec)
{
	json_int_t want = json_integer_value(json_object_get(sec, "count"));
	size_t n = json_array_size(gpus(c)), i, of_type = 0;
	char type[64], names[512] = "";
	const char *from;
	json_t *g;

	declared_type(c, sec, type, sizeof(type), &from);
	nf_v_expect(c, "%lld GPUs of type %s (%s)", (long long)want,
		    *type ? type : "any", from);
	json_array_foreach(gpus(c), i, g) {
		const char *name = json_string_value(json_object_get(g, "name"));
		char t[64];

		gpu_type_of(name, t, sizeof(t));
		if (!*type || !strcasecmp(t, type))
			of_type++;
		else if (!strstr(names, name ? name : "?"))
			snprintf(names + strlen(names), sizeof(names) - strlen(names),
				 "%s'%s' (%s)", *names ? ", " : "", name ? name : "?", t);
	}
	if ((json_int_t)of_type == want && of_type == n) {
		nf_v_seen(c, "%zu GPUs of type %s", n, *type ? type : "any");
		return NF_V_PASS;
	}
	if (of_type == n) {
		nf_v_seen(c, "%zu GPUs", n);
		nf_v_remedy(c, "nvidia-smi -L; dmesg | grep -i -e NVRM -e Xid   # a lost GPU "
			    "needs a reset or an RMA");
		return NF_V_FAIL;
	}
	nf_v_seen(c, "%zu of %zu GPUs are %s; the others are %s", of_type, n,
		  type, names);
	nf_v_remedy(c, "this node has other GPUs than the cluster declares for it: "
		    "set its gpu_type in the inventory (nodeforge pxe, then "
		    "systemctl restart nodeforge-cluster) or move the node");
	return NF_V_FAIL;
}

/* Every GPU whose `field` differs from `want`: "0,3" */
static int gpus_not(struct nf_vcheck *c, const char *field, int want, char *out, size_t sz)
{
	size_t i;
	json_t *g;
	int n = 0;

	*out = '\0';
	json_array_foreach(gpus(c), i, g) {
		const json_t *v = json_object_get(g, field);

		if (v && json_is_true(v) != want) {
			snprintf(out + strlen(out), sz - strlen(out), "%s%zu", n ? "," : "", i);
			n++;
		}
	}
	return n;
}

static int check_ecc(struct nf_vcheck *c, const json_t *sec)
{
	char cur[256], pend[256];
	int a, b;

	if (!json_is_true(json_object_get(sec, "ecc")))
		return nf_v_skip(c, "the profile does not require ECC");
	a = gpus_not(c, "ecc_current", 1, cur, sizeof(cur));
	b = gpus_not(c, "ecc_pending", 1, pend, sizeof(pend));
	nf_v_expect(c, "ECC on, current = pending, on every GPU");
	if (!a && !b) {
		nf_v_seen(c, "on");
		return NF_V_PASS;
	}
	if (a && !b) {
		nf_v_seen(c, "ECC off now but on after a reset: GPUs %s", cur);
		nf_v_remedy(c, "nvidia-smi -r   # or reboot: the pending ECC mode applies at reset");
	} else {
		nf_v_seen(c, "ECC off%s on GPUs %s", a ? "" : " after the next reset", a ? cur : pend);
		nf_v_remedy(c, "nvidia-smi -e 1 && nvidia-smi -r");
	}
	return NF_V_FAIL;
}

static int check_remap(struct nf_vcheck *c, const json_t *sec)
{
	char pend[256], fail[256];
	int a, b;

	(void)sec;
	a = gpus_not(c, "remap_pending", 0, pend, sizeof(pend));
	b = gpus_not(c, "remap_failure", 0, fail, sizeof(fail));
	nf_v_expect(c, "no pending row remap, no remap failure");
	if (!a && !b) {
		nf_v_seen(c, "none");
		return NF_V_PASS;
	}
	if (b) {
		nf_v_seen(c, "row remap failure on GPUs %s", fail);
		nf_v_remedy(c, "drain the node and RMA the GPU (nvidia-smi -q -d ROW_REMAPPER)");
	} else {
		nf_v_seen(c, "row remap pending on GPUs %s", pend);
		nf_v_remedy(c, "nvidia-smi -r -i GPU   # a GPU reset applies the pending remap");
	}
	return NF_V_FAIL;
}

static int check_persistence(struct nf_vcheck *c, const json_t *sec)
{
	char off[256];

	if (!json_is_true(json_object_get(sec, "persistence")))
		return nf_v_skip(c, "the profile does not require persistence mode");
	nf_v_expect(c, "persistence mode on every GPU");
	if (!gpus_not(c, "persistence", 1, off, sizeof(off))) {
		nf_v_seen(c, "on");
		return NF_V_PASS;
	}
	nf_v_seen(c, "off on GPUs %s", off);
	nf_v_remedy(c, "systemctl enable --now nvidia-persistenced");
	return NF_V_FAIL;
}

static int check_fabric(struct nf_vcheck *c, const json_t *sec)
{
	char bad[256] = "";
	size_t i;
	json_t *g;
	int n = 0;

	if (!json_is_true(json_object_get(sec, "nvswitch")))
		return nf_v_skip(c, "no NVSwitch in this role");
	nf_v_expect(c, "fabric state completed on every GPU");
	json_array_foreach(gpus(c), i, g) {
		const char *st = json_string_value(json_object_get(g, "fabric_state"));

		if (!st || strcmp(st, "completed"))
			if (n++ < 8)
				snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad), "%s%zu:%s",
					 *bad ? " " : "", i, st ? st : "unknown");
	}
	if (!n) {
		nf_v_seen(c, "completed");
		return NF_V_PASS;
	}
	nf_v_seen(c, "%s", bad);
	nf_v_remedy(c, "systemctl restart nvidia-fabricmanager; journalctl -u nvidia-fabricmanager");
	return NF_V_FAIL;
}

static int check_peermem(struct nf_vcheck *c, const json_t *sec)
{
	struct stat st;

	if (!json_is_true(json_object_get(sec, "peermem")))
		return nf_v_skip(c, "the profile does not ask for GPUDirect RDMA");
	nf_v_expect(c, "nvidia-peermem loaded (/sys/module/nvidia_peermem)");
	if (!nf_v_stat(c, NF_VSYS, "/sys/module/nvidia_peermem", &st)) {
		nf_v_seen(c, "loaded");
		return NF_V_PASS;
	}
	nf_v_seen(c, "not loaded");
	nf_v_remedy(c, "modprobe nvidia-peermem; cat /etc/modules-load.d/nodeforge-gpu.conf   "
		    "# dmesg says why it did not load at boot");
	return NF_V_FAIL;
}

static const struct nf_check_def defs[] = {
	{ "gpu.driver", "the NVIDIA driver is loaded (NVML)", NULL, NF_CHECK_PROBE, 5000,
	  check_driver,
	  .needs = "gpu" },
	{ "gpu.count", "GPU count and type", "gpu.driver", 0, 0, check_count,
	  .needs = "gpu" },
	{ "gpu.ecc", "ECC on, current equal to pending", "gpu.driver", 0, 0, check_ecc,
	  .needs = "gpu" },
	{ "gpu.remap", "no pending row remap or remap failure", "gpu.driver", 0, 0, check_remap,
	  .needs = "gpu" },
	{ "gpu.persistence", "persistence mode", "gpu.driver", 0, 0, check_persistence,
	  .needs = "gpu" },
	{ "gpu.fabric", "NVSwitch fabric state", "gpu.driver", 0, 0, check_fabric,
	  .needs = "gpu" },
	{ "gpu.peermem", "nvidia-peermem is loaded (GPUDirect RDMA)", "gpu.driver", 0, 0,
	  check_peermem,
	  .needs = "gpu" },
};

static const struct nf_checkset checks = NF_CHECKSET(defs);

/* ---- end of check ---- */

/* The GPU checks read the driver state the persistence daemon keeps */
static size_t gate_units(const struct nf_apply *a, const json_t *sec,
			 struct nf_gate_unit *out, size_t max)
{
	(void)sec;
	if (!max || !nf_gpu_persistence_unit(a->prof))
		return 0;
	out[0] = (struct nf_gate_unit){ nf_gpu_persistence_unit(a->prof),
					NF_GATE_AFTER };
	return 1;
}

const struct nf_facet nf_facet_gpu = {
	.name = "gpu",
	.summary = "GPU count, type, ECC, row remapping, persistence",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = &checks,
	.gate_units = gate_units,
};
