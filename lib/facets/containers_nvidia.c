/* SPDX-License-Identifier: MIT */
/*
 * containers.nvidia: GPU containers on a GPU node.  enroot's NVIDIA hook
 * runs nvidia-container-cli for every container that asks for GPUs
 * (NVIDIA_VISIBLE_DEVICES, set by every NGC image), and the CLI mounts
 * the driver's libraries, libcuda.so.1 among them, into the container.
 * Without them each such `srun --container-image` stops with "Command
 * not found: nvidia-container-cli".  Read, not run, so it holds for an
 * image root (ci) as for a node; the GPU is not needed.  Also the reading
 * of an ELF program's loader, which the check of enroot's helpers shares.
 */
#include "containers_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NV_HOOK "/etc/enroot/hooks.d/98-nvidia.sh"

static const char *const bin_dirs[] = { "/usr/bin", "/usr/local/bin" };
static const char *const lib_dirs[] = {
	"/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu",
	"/usr/lib/aarch64-linux-gnu", "/lib/aarch64-linux-gnu",
	"/usr/lib64", "/usr/lib", "/usr/local/lib",
};

int nf_containers_elf_runs(struct nf_vcheck *c, const char *path, char *why,
			   size_t whysz)
{
	char *buf = NULL, interp[256];
	size_t len = 0;
	struct stat st;
	int r;

	r = nf_v_read(c, NF_VROOT, path, 64u << 20, &buf, &len);
	if (!r)
		r = nf_elf_interp(buf, len, interp, sizeof(interp));
	free(buf);
	if (r == 1 && nf_v_stat(c, NF_VROOT, interp, &st)) {
		snprintf(why, whysz, "%s needs %s, which the image lacks", path, interp);
		return 1;
	}
	if (r == 1 || r == 0) {  /* 0: static */
		snprintf(why, whysz, "%s", r ? interp : "");
		return 0;
	}
	/* NF_E_LIMIT: over 64 MiB */
	snprintf(why, whysz, "%s: %s", path,
		 r == -ENOEXEC ? "not an ELF executable"
		 : r == -EINVAL ? "a malformed ELF file"
		 : r == -ENOENT ? "missing"
		 : r > 0 ? nf_strerror(r) : strerror(-r));
	return 1;
}

/* The directory of lib_dirs that holds `name` (the link the loader
 * resolves, followed inside the root), or NULL */
static const char *lib_dir(struct nf_vcheck *c, const char *name)
{
	char path[160];
	struct stat st;

	for (size_t i = 0; i < NF_ARRAY_SIZE(lib_dirs); i++) {
		snprintf(path, sizeof(path), "%s/%s", lib_dirs[i], name);
		if (!nf_v_stat(c, NF_VROOT, path, &st) && S_ISREG(st.st_mode))
			return lib_dirs[i];
	}
	return NULL;
}

/* What of the hook, the CLI and its libraries the image lacks, into bad */
static void nvidia_missing(struct nf_vcheck *c, struct nf_buf *bad,
			   const char **cli_dir)
{
	static const char *const libs[] = {
		"libnvidia-container.so.1", "libcuda.so.1",
	};
	char path[160], why[400];
	struct stat st;

	if (nf_v_stat(c, NF_VROOT, NV_HOOK, &st))
		nf_buf_printf(bad, "; no %s (enroot's hook)", NV_HOOK);
	else if (!S_ISREG(st.st_mode) || !(st.st_mode & 0111))
		nf_buf_printf(bad, "; %s is not executable", NV_HOOK);
	*cli_dir = NULL;
	for (size_t i = 0; i < NF_ARRAY_SIZE(bin_dirs) && !*cli_dir; i++) {
		snprintf(path, sizeof(path), "%s/nvidia-container-cli", bin_dirs[i]);
		if (!nf_v_stat(c, NF_VROOT, path, &st))
			*cli_dir = bin_dirs[i];
	}
	if (!*cli_dir)
		nf_buf_printf(bad, "; no nvidia-container-cli in /usr/bin or "
			      "/usr/local/bin");
	else if (nf_containers_elf_runs(c, path, why, sizeof(why)))
		nf_buf_printf(bad, "; %s", why);
	for (size_t i = 0; i < NF_ARRAY_SIZE(libs); i++)
		if (!lib_dir(c, libs[i]))
			nf_buf_printf(bad, "; no %s", libs[i]);
}

int nf_containers_check_nvidia(struct nf_vcheck *c, const json_t *sec)
{
	struct nf_buf bad = { 0 };
	const char *cli_dir = NULL;
	int v;

	if (!json_object_get(nf_v_profile(c), "gpu"))
		return nf_v_skip(c, "the profile has no GPUs");
	if (!json_object_get(sec, "enroot"))
		return nf_v_skip(c, "the profile has no enroot");
	nf_v_expect(c, "%s, nvidia-container-cli with libnvidia-container.so.1, "
		    "and libcuda.so.1", NV_HOOK);
	nvidia_missing(c, &bad, &cli_dir);
	if (bad.err) {
		nf_buf_free(&bad);
		nf_v_seen(c, "out of memory");
		return NF_V_FAIL;
	}
	if (!bad.len) {
		nf_v_seen(c, "the hook, %s/nvidia-container-cli, "
			  "libnvidia-container.so.1 in %s, libcuda.so.1 in %s",
			  cli_dir, lib_dir(c, "libnvidia-container.so.1"),
			  lib_dir(c, "libcuda.so.1"));
		v = NF_V_PASS;
	} else {
		nf_v_seen(c, "%s", bad.s + 2);
		nf_v_remedy(c, "nodeforge build %s   # profiles/nvidia-container.yaml: "
			    "libnvidia-container compiled in the image, Debian's "
			    "libcuda1 at the driver's version", nf_v_role(c));
		v = NF_V_FAIL;
	}
	nf_buf_free(&bad);
	return v;
}
