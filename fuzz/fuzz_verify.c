/* SPDX-License-Identifier: MIT */
/*
 * The verifier's parsers of node files: the first byte picks the file the
 * rest of the input becomes (gres.conf, slurm.conf, /proc/PID/limits,
 * /proc/mounts, /proc/cmdline, pam.d/sshd, sshd_config, chrony.conf,
 * a GPU's local_cpulist, a slurmd drop-in, an IB port state, meminfo,
 * enroot.conf, plugstack.conf, the kernel's isolated and possible CPUs,
 * a sysctl's /proc/sys file),
 * then the whole check set runs against a small sysroot.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64];
static struct nf_ctx *ctx;
static struct nf_profile *prof;

static const char *const files[] = {
	"/etc/slurm/gres.conf", "/etc/slurm/slurm.conf", "/proc/4242/limits",
	"/proc/mounts", "/proc/cmdline", "/etc/pam.d/sshd", "/etc/ssh/sshd_config",
	"/etc/chrony/chrony.conf", "/sys/bus/pci/devices/0000:18:00.0/local_cpulist",
	"/etc/systemd/system/slurmd.service.d/50-x.conf",
	"/sys/class/infiniband/mlx5_0/ports/1/state", "/proc/meminfo",
	"/etc/enroot/enroot.conf", "/etc/slurm/plugstack.conf",
	"/sys/devices/system/cpu/isolated", "/sys/devices/system/cpu/possible",
	"/proc/sys/net/ipv4/tcp_rmem",
};

static void put(const char *path, const void *buf, size_t len)
{
	char p[512], *s;
	int fd;

	snprintf(p, sizeof(p), "%s%s", root, path);
	for (s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(p, 0755);
		*s = '/';
	}
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		abort();
	if (len && write(fd, buf, len) != (ssize_t)len)
		abort();
	close(fd);
}

static const char profile[] =
	"{\"role\":\"compute\",\"boot_args\":[\"hugepages=4\",\"iommu=pt\"],"
	"\"kernel\":{\"isolate_cpus\":\"1-3,5\"},\"memory\":{\"hugepages\":{\"size\":\"1G\",\"count\":4},\"thp\":\"never\"},"
	"\"cgroup\":{\"controllers\":[\"cpu\",\"memory\"],\"conf\":{\"ConstrainCores\":true}},"
	"\"sysctl\":{\"net.ipv4.tcp_rmem\":\"4096 87380 6291456\",\"kernel.numa_balancing\":0},"
	"\"limits\":{\"nofile\":1048576,\"memlock\":\"unlimited\"},"
	"\"time\":{\"servers\":[\"10.0.0.1\"],\"max_offset_ms\":100},"
	"\"munge\":{\"key_path\":\"/etc/munge/munge.key\",\"key_size\":32,\"mode\":\"0400\"},"
	"\"slurm\":{\"conf\":{\"SelectType\":\"select/cons_tres\"},"
	"\"node\":{\"sockets\":2,\"cores_per_socket\":4,\"threads_per_core\":2,\"real_memory_mb\":1},"
	"\"gres\":[{\"name\":\"gpu\",\"type\":\"h100\",\"count\":2}]},"
	"\"containers\":{\"enroot\":{\"cache_path\":\"/mnt/nvme/c\",\"mount_home\":false},"
	"\"pyxis\":{\"path\":\"/usr/lib/spank_pyxis.so\",\"args\":{\"container_scope\":\"job\","
	"\"sbatch_support\":1}}},"
	"\"pam\":{\"slurm_adopt\":true,\"use_pam\":true},"
	"\"mariadb\":{\"buffer_pool_pct\":75,\"lock_wait_timeout\":900},"
	"\"gpu\":{\"count\":2,\"type\":\"h100\",\"ecc\":true,\"persistence\":true,\"nvswitch\":true},"
	"\"fabric_manager\":{\"match_driver\":true},"
	"\"ib\":{\"hcas\":[\"mlx5_0\"],\"rate_gbps\":400,\"link_layer\":\"InfiniBand\"},"
	"\"storage\":{\"enroot_cache\":{\"mount\":\"/mnt/nvme\",\"fs\":\"xfs\"}},"
	"\"system\":{\"services\":{\"enable\":[\"munge\"]}},"
	"\"site\":{\"cluster\":\"c\",\"fingerprints\":{}}}";

static const char fixture[] =
	"{\"nvml\":{\"driver_version\":\"1.2\",\"gpus\":[{\"name\":\"h100\"}]},"
	"\"adjtimex\":{\"synced\":true},\"commands\":{\"systemctl\":{\"out\":\"active\\n\"},"
	"\"mariadb\":{\"out\":\"innodb_buffer_pool_size\\t1\\n\"}}}";

static void init(void)
{
	char p[128];

	snprintf(root, sizeof(root), "/tmp/nf-fuzz-verify-%d", (int)getpid());
	mkdir(root, 0755);
	put("/profile.json", profile, strlen(profile));
	put("/fixture.json", fixture, strlen(fixture));
	put("/sys/bus/pci/devices/0000:18:00.0/vendor", "0x10de\n", 7);
	put("/sys/bus/pci/devices/0000:18:00.0/class", "0x030200\n", 9);
	put("/proc/4242/comm", "slurmd\n", 7);
	put("/sys/class/infiniband/mlx5_0/ports/1/rate", "400 Gb/sec\n", 11);
	put("/sys/devices/system/cpu/possible", "0-7\n", 4);
	if (nf_ctx_new(&ctx))
		abort();
	snprintf(p, sizeof(p), "%s/profile.json", root);
	if (nf_profile_load_json(ctx, p, &prof))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nf_verify_opts o = { 0 };
	struct nf_verify *v = NULL;
	char fx[128];
	size_t which;

	if (!ctx)
		init();
	if (size < 1 || size > 16384)
		return 0;
	which = data[0] % NF_ARRAY_SIZE(files);
	put(files[which], data + 1, size - 1);
	snprintf(fx, sizeof(fx), "%s/fixture.json", root);
	o.sysroot = root;
	o.fixture = fx;
	o.budget_ms = 2000;
	if (nf_verify_run(ctx, prof, &o, &v) == 0) {
		json_t *j = nf_verify_json(v);

		json_decref(j);
		nf_verify_free(v);
	}
	/* the next input starts from an empty file again (the ops fixture is
	 * never fuzzed: its exec_log and passthrough would touch the host) */
	put(files[which], "", 0);
	return 0;
}
