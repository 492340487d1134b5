/* SPDX-License-Identifier: MIT */
/*
 * The verifier's reads of the running system: cgroup2, the kernel clock
 * (adjtimex) and NVML (loaded at run time); each answered from the run's
 * fixture when it has one.
 */
#include "verify_int.h"
#include "internal/gres.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <unistd.h>

/* ----------------------------------------------------------------- ops */

#include <sys/statfs.h>
#include <sys/timex.h>
#include <dlfcn.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

int nf_v_cgroup2(struct nf_vcheck *c, const char *path)
{
	char buf[4096];
	struct statfs sf;

	if (c->run->fixture || *c->run->sysroot) {
		/* a recorded tree is no cgroup2 mount: the kernel's marker
		 * file stands for it */
		char p[4096];
		struct stat st;

		snprintf(p, sizeof(p), "%s/cgroup.controllers", path);
		return nf_v_stat(c, NF_VSYS, p, &st) == 0;
	}
	if (statfs(nf_v_path(c, NF_VSYS, path, buf, sizeof(buf)), &sf) < 0)
		return -errno;
	return sf.f_type == CGROUP2_SUPER_MAGIC;
}

int nf_v_adjtimex(struct nf_vcheck *c, struct nf_timex *t)
{
	const json_t *fx = c->run->fixture, *a;
	struct timex tx = { 0 };
	int st;

	if (fx) {
		if (!(a = json_object_get(fx, "adjtimex")))
			return NF_E_NOHW;
		t->synced = json_is_true(json_object_get(a, "synced"));
		t->offset_ms = json_number_value(json_object_get(a, "offset_ms"));
		t->maxerror_ms = json_number_value(json_object_get(a, "maxerror_ms"));
		return 0;
	}
	st = adjtimex(&tx);
	if (st < 0)
		return -errno;
	t->synced = st != TIME_ERROR && !(tx.status & STA_UNSYNC);
	t->offset_ms = (tx.status & STA_NANO) ? tx.offset / 1e6 : tx.offset / 1e3;
	t->maxerror_ms = tx.maxerror / 1e3;
	return 0;
}

/* NVML, loaded at run time: no build dependency on the driver */
typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;
struct nf_nvml_fabric {
	unsigned char cluster_uuid[16];
	nvmlReturn_t status;
	unsigned int clique_id;
	unsigned char state;
};

/* nvmlPciInfo_t */
struct nf_nvml_pci {
	char bus_id_legacy[16];
	unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
};

#define NF_NVML_MAX_LINKS 18    /* NVML_NVLINK_MAX_LINKS */

/* The PCI bus id of every active NVLink's far end, one entry per link:
 * a peer GPU's, or an NVSwitch's (tells gres.conf's Links=) */
static json_t *nvml_nvlinks(nvmlDevice_t d,
			    nvmlReturn_t (*state)(nvmlDevice_t, unsigned, int *),
			    nvmlReturn_t (*remote)(nvmlDevice_t, unsigned,
						   struct nf_nvml_pci *))
{
	json_t *v = json_array();

	for (unsigned l = 0; v && l < NF_NVML_MAX_LINKS; l++) {
		struct nf_nvml_pci pci = { 0 };
		char id[NF_PCI_ADDR_LEN];
		int active = 0;

		if (state(d, l, &active) != 0 || !active ||
		    remote(d, l, &pci) != 0)
			continue;
		pci.bus_id[sizeof(pci.bus_id) - 1] = '\0';
		if (nf_pci_addr_norm(pci.bus_id, id) == 0)
			json_array_append_new(v, json_string(id));
	}
	return v;
}

static int nvml_real(json_t **snap)
{
	nvmlReturn_t (*init)(void), (*shutdown)(void);
	nvmlReturn_t (*drv)(char *, unsigned);
	nvmlReturn_t (*count)(unsigned *);
	nvmlReturn_t (*handle)(unsigned, nvmlDevice_t *);
	nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned);
	nvmlReturn_t (*ecc)(nvmlDevice_t, int *, int *);
	nvmlReturn_t (*remap)(nvmlDevice_t, unsigned *, unsigned *, unsigned *, unsigned *);
	nvmlReturn_t (*persist)(nvmlDevice_t, int *);
	nvmlReturn_t (*fabric)(nvmlDevice_t, struct nf_nvml_fabric *);
	nvmlReturn_t (*pciinfo)(nvmlDevice_t, struct nf_nvml_pci *);
	nvmlReturn_t (*lstate)(nvmlDevice_t, unsigned, int *);
	nvmlReturn_t (*lremote)(nvmlDevice_t, unsigned, struct nf_nvml_pci *);
	const char *(*errstr)(nvmlReturn_t);
	void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	char ver[96] = "";
	unsigned n = 0;
	nvmlReturn_t rc;
	json_t *gpus;

	if (!h) {
		/* glibc keeps this thread's record of the failure until
		 * dlerror() is asked twice (or the thread exits): a probe's
		 * detached thread may still be exiting when the run ends, and
		 * LeakSanitizer then reports the record as leaked */
		(void)dlerror();
		(void)dlerror();
		*snap = json_pack("{s:s, s:s}", "error", "libnvidia-ml.so.1 is "
				  "not installed", "missing", "software");
		return NF_E_NOHW;
	}
	*(void **)&errstr = dlsym(h, "nvmlErrorString");
	*(void **)&init = dlsym(h, "nvmlInit_v2");
	*(void **)&shutdown = dlsym(h, "nvmlShutdown");
	*(void **)&drv = dlsym(h, "nvmlSystemGetDriverVersion");
	*(void **)&count = dlsym(h, "nvmlDeviceGetCount_v2");
	*(void **)&handle = dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
	*(void **)&name = dlsym(h, "nvmlDeviceGetName");
	*(void **)&ecc = dlsym(h, "nvmlDeviceGetEccMode");
	*(void **)&remap = dlsym(h, "nvmlDeviceGetRemappedRows");
	*(void **)&persist = dlsym(h, "nvmlDeviceGetPersistenceMode");
	*(void **)&fabric = dlsym(h, "nvmlDeviceGetGpuFabricInfo");
	*(void **)&pciinfo = dlsym(h, "nvmlDeviceGetPciInfo_v3");
	*(void **)&lstate = dlsym(h, "nvmlDeviceGetNvLinkState");
	*(void **)&lremote = dlsym(h, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
	if (!init || !shutdown || !drv || !count || !handle || !name) {
		dlclose(h);
		*snap = json_pack("{s:s, s:s}", "error", "libnvidia-ml.so.1 lacks "
				  "the NVML v2 calls", "missing", "software");
		return NF_E_NOHW;
	}
	/* the library is there; the kernel module is not loaded (no GPU,
	 * or a module built for another kernel: the kernel log says) */
	if ((rc = init()) != 0) {
		const char *why = errstr ? errstr(rc) : NULL;

		*snap = json_pack("{s:s, s:s}", "error", why ? why : "nvmlInit failed",
				  "missing", "driver");
		dlclose(h);
		return NF_E_NOHW;
	}
	drv(ver, sizeof(ver));
	count(&n);
	gpus = json_array();
	for (unsigned i = 0; i < n && i < 64; i++) {
		nvmlDevice_t d;
		char nm[96] = "";
		json_t *g = json_object();
		int cur = 0, pend = 0, pm = 0;
		unsigned corr = 0, unc = 0, ispend = 0, fail = 0;
		struct nf_nvml_fabric fi = { 0 };

		json_array_append_new(gpus, g);
		if (handle(i, &d) != 0)
			continue;
		if (name(d, nm, sizeof(nm)) == 0)
			json_object_set_new(g, "name", json_string(nm));
		if (ecc && ecc(d, &cur, &pend) == 0) {
			json_object_set_new(g, "ecc_current", json_boolean(cur));
			json_object_set_new(g, "ecc_pending", json_boolean(pend));
		}
		if (remap && remap(d, &corr, &unc, &ispend, &fail) == 0) {
			json_object_set_new(g, "remap_pending", json_boolean(ispend));
			json_object_set_new(g, "remap_failure", json_boolean(fail));
		}
		if (persist && persist(d, &pm) == 0)
			json_object_set_new(g, "persistence", json_boolean(pm));
		if (fabric && fabric(d, &fi) == 0) {
			static const char *const st[] = { "not_supported", "not_started",
							  "in_progress", "completed" };

			json_object_set_new(g, "fabric_state",
					    json_string(fi.state < 4 ? st[fi.state] : "unknown"));
			json_object_set_new(g, "fabric_status", json_integer(fi.status));
		}
		if (pciinfo) {
			struct nf_nvml_pci pci = { 0 };
			char id[NF_PCI_ADDR_LEN];

			if (pciinfo(d, &pci) == 0) {
				pci.bus_id[sizeof(pci.bus_id) - 1] = '\0';
				if (nf_pci_addr_norm(pci.bus_id, id) == 0)
					json_object_set_new(g, "pci_bus_id",
							    json_string(id));
			}
		}
		if (lstate && lremote)
			json_object_set_new(g, "nvlink_remote",
					    nvml_nvlinks(d, lstate, lremote));
	}
	shutdown();
	dlclose(h);
	*snap = json_pack("{s:s, s:o}", "driver_version", ver, "gpus", gpus);
	return *snap ? 0 : -ENOMEM;
}

int nf_nvml_snapshot(const json_t *fixture, json_t **snap)
{
	const json_t *a;

	if (!fixture)
		return nvml_real(snap);
	a = json_object_get(fixture, "nvml");
	if (!a || json_is_null(a))
		return NF_E_NOHW;
	/* {"error": ..., "missing": "software" | "driver"}: what NVML said */
	if (json_object_get(a, "error")) {
		*snap = json_deep_copy(a);
		return NF_E_NOHW;
	}
	*snap = json_deep_copy(a);
	return *snap ? 0 : -ENOMEM;
}

int nf_v_nvml(struct nf_vcheck *c, json_t **snap)
{
	const json_t *fx = c->run->fixture;

	if (fx && json_is_true(json_object_get(json_object_get(fx, "nvml"),
					       "hang"))) {
		/* a driver call that never returns: only the deadline ends it */
		for (;;)
			pause();
	}
	return nf_nvml_snapshot(fx, snap);
}
