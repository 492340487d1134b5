/* SPDX-License-Identifier: MIT */
/*
 * nodeforge ci, stage 3: boot the image in a VM (lib/ci.c runs the stages).
 *
 * The image boots exactly as a rack node does: 'nodeforge pxe' renders a
 * boot tree for one node whose MAC is the VM's, the embedded server serves
 * it (and enrolls the node with a throwaway munge key made for this run,
 * so no cluster secret is involved), QEMU's iPXE boots the kernel and the
 * initramfs, and the node's own verifier POSTs its verdict.  Every check of
 * that verdict becomes a test case "boot.FACET"; a check that needs what a
 * VM does not have (GPUs, NVSwitches, InfiniBand, local NVMe, the site's
 * time servers) and failed there is reported as skipped by environment.
 */

#include "ci_int.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CI_VM_MAC "52:54:00:6e:66:01"
#define CI_VM_ROM "/usr/lib/ipxe/qemu/pxe-virtio.rom"

/* What the CI VM lacks, by what a check needs (its definition's needs) */
static const struct {
	const char *need;
	const char *why;
} vm_lacks[] = {
	{ "gpu", "no NVIDIA GPU in the CI VM" },
	{ "nvswitch", "no NVSwitch in the CI VM" },
	{ "ib", "no InfiniBand adapter in the CI VM" },
	{ "hugepage-memory", "the CI VM's memory cannot hold the profile's "
			     "hugepage pool" },
	{ "cpus", "the CI VM has one CPU, not the node's CPUs that "
		  "kernel.isolate_cpus names" },
	{ "nvme", "no local NVMe in the CI VM" },
	{ "disk", "the CI VM boots diskless" },
	{ "ntp", "the site's time servers are not reachable from the CI VM "
		 "(user-mode network)" },
	{ "cluster-key", "the CI VM is enrolled with a throwaway key, not the "
			 "cluster's" },
	{ "controller", "the CI VM boots alone: its boot tree has no controller, "
			"so no cluster.conf names it" },
};

static const char *vm_env_why(const char *id)
{
	const struct nf_check_def *d = nf_check_find(id);

	for (size_t i = 0; d && d->needs && i < NF_ARRAY_SIZE(vm_lacks); i++)
		if (!strcmp(d->needs, vm_lacks[i].need))
			return vm_lacks[i].why;
	return NULL;
}

/* The node's verdict as boot cases; *fails counts the failed ones */
static int boot_cases(struct nf_ci *ci, const json_t *doc, size_t *fails)
{
	const json_t *checks = json_object_get(doc, "checks");
	size_t i;
	json_t *c;
	int r = 0;

	*fails = 0;
	json_array_foreach(checks, i, c) {
		const char *id = json_string_value(json_object_get(c, "id"));
		const char *facet = json_string_value(json_object_get(c, "facet"));
		const char *v = json_string_value(json_object_get(c, "verdict"));
		const char *seen = json_string_value(json_object_get(c, "seen"));
		const char *reason = json_string_value(json_object_get(c, "reason"));
		const char *why;
		char *cls, *msg = NULL, *detail = NULL;
		int verdict;

		if (!id || !v)
			continue;
		if (!strcmp(v, "pass") || !strcmp(v, "warn"))
			verdict = NF_V_PASS;
		else if (!strcmp(v, "skip"))
			verdict = NF_V_SKIP;
		else
			verdict = !strcmp(v, "hung") ? NF_V_HUNG : NF_V_FAIL;
		if (verdict == NF_V_FAIL || verdict == NF_V_HUNG) {
			if ((why = vm_env_why(id))) {
				verdict = NF_V_SKIP;
				msg = nf_asprintf("skipped by environment: %s (the node "
						  "saw: %s)", why, seen ? seen : v);
			} else {
				msg = nf_strdup(seen ? seen : v);
				detail = nf_asprintf(
					"expected: %s\nseen: %s\nremedy: %s",
					json_string_value(json_object_get(c, "expected")) ?: "",
					seen ?: "",
					json_string_value(json_object_get(c, "remedy")) ?: "");
				++*fails;
			}
		} else if (verdict == NF_V_SKIP) {
			msg = nf_strdup(reason ? reason : "skipped");
		} else if (!strcmp(v, "warn") && seen) {
			msg = nf_strdup(seen);
		}
		cls = nf_asprintf("boot.%s", facet ? facet : "node");
		if (!cls)
			r = -ENOMEM;
		else
			r = nf_ci_add_case(ci, cls, id, verdict, msg, detail,
				     json_integer_value(json_object_get(c, "elapsed_us")) / 1e6);
		free(cls);
		free(msg);
		free(detail);
		if (r)
			return r;
	}
	return 0;
}

/* The last lines of the VM's console, for a stage that failed */
static char *console_tail(const char *path, size_t max)
{
	char *buf = NULL, *s;
	size_t len = 0;
	struct nf_ctx *tmp;

	if (nf_ctx_new(&tmp))
		return NULL;
	if (nf_read_file(tmp, path, 64u << 20, &buf, &len)) {
		nf_ctx_free(tmp);
		return NULL;
	}
	nf_ctx_free(tmp);
	s = buf + (len > max ? len - max : 0);
	for (char *p = s; *p; p++)
		if (*p == '\r' || (*p < 32 && *p != '\n' && *p != '\t'))
			*p = ' ';
	s = nf_strdup(s);
	free(buf);
	return s;
}

/* QEMU in the background, its output in qemu.log; it stays in
 * nodeforge's process group, so an interrupt stops it too */
static int vm_start(struct nf_ctx *ctx, const struct nf_ci_opts *o,
		    const char *dir, unsigned port, struct nf_spawn *vm)
{
	const char *qemu = o->qemu;
	char netdev[160], device[200], serial[PATH_MAX + 16], mem[16], console[PATH_MAX];
	const char *accel = o->boot_accel && *o->boot_accel ? o->boot_accel : "tcg";
	char machine[64];
	int r;

	if (!qemu || !*qemu)
		qemu = "qemu-system-x86_64";
	snprintf(machine, sizeof(machine), "q35,accel=%s", accel);
	snprintf(netdev, sizeof(netdev),
		 "user,id=n0,bootfile=http://10.0.2.2:%u/ipxe/boot.ipxe", port);
	snprintf(device, sizeof(device),
		 "virtio-net-pci,netdev=n0,mac=%s,disable-legacy=on,romfile=%s",
		 CI_VM_MAC, CI_VM_ROM);
	snprintf(serial, sizeof(serial), "file:%s/console.log", dir);
	snprintf(mem, sizeof(mem), "%u", o->boot_memory_mb ? o->boot_memory_mb : 2048);
	snprintf(console, sizeof(console), "%s/qemu.log", dir);
	char *const argv[] = { (char *)qemu, "-machine", machine, "-m", mem,
			       "-display", "none", "-no-reboot", "-netdev", netdev,
			       "-device", device, "-boot", "n", "-serial", serial,
			       NULL };

	*vm = (struct nf_spawn){
		.argv = (const char *const *)argv,
		.out = NF_SPAWN_FD,
		.err = NF_SPAWN_FD,
	};
	vm->fd = open(console, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (vm->fd < 0)
		return nf_fail(ctx, -errno, "cannot start '%s': cannot open "
			       "'%s': %s", qemu, console, strerror(errno));
	r = nf_spawn_start(vm);
	close(vm->fd);
	if (r)
		return nf_fail(ctx, r, "cannot start '%s': %s", qemu,
			       strerror(-r));
	return 0;
}

static int write_file_str(struct nf_ctx *ctx, const char *path, const char *s,
			  mode_t mode)
{
	return nf_write_atomic(ctx, path, s, strlen(s), mode);
}

/* Everything of stage 3 but its stage case; *verdict_out: the node's
 * verdict document (or NULL when none came) */
static int boot_run(struct nf_ctx *ctx, struct nf_ci *ci, const char *role,
		    const struct nf_site *site, const struct nf_ci_opts *o,
		    const char *dir, size_t *fails, char **why)
{
	char tree[PATH_MAX], state[PATH_MAX], enr[PATH_MAX], key[PATH_MAX],
	     inv_path[PATH_MAX], node[96], url[128], server[64];
	const char *images = o->build.out && *o->build.out ? o->build.out : "out";
	struct nf_inventory *inv = NULL;
	struct nf_enroll *en = NULL;
	struct nf_server *srv = NULL;
	struct nf_diags d;
	unsigned char kb[1024];
	char *doc = NULL, *body = NULL;
	json_t *j = NULL;
	unsigned port;
	struct nf_spawn vm = { 0 };
	double deadline;
	int r;

	nf_diags_init(&d);
	snprintf(node, sizeof(node), "ci-%s", role);
	snprintf(tree, sizeof(tree), "%s/tree", dir);
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(enr, sizeof(enr), "%s/enroll", dir);
	snprintf(key, sizeof(key), "%s/enroll/munge.key", dir);
	snprintf(inv_path, sizeof(inv_path), "%s/racks.yaml", dir);
	if (mkdir(tree, 0755) || mkdir(state, 0700) || mkdir(enr, 0700)) {
		r = nf_fail(ctx, -errno, "cannot create the VM's boot tree in '%s': %s",
			    dir, strerror(errno));
		goto out;
	}
	if (access(CI_VM_ROM, R_OK)) {
		r = nf_fail(ctx, NF_E_NOTFOUND, "no iPXE ROM '%s' for the VM: "
			    "apt-get install ipxe-qemu qemu-system-x86", CI_VM_ROM);
		goto out;
	}

	/* a throwaway munge key for this run: the VM enrolls it at boot */
	if ((r = nf_random_bytes(ctx, kb, sizeof(kb))) ||
	    (r = nf_write_atomic(ctx, key, kb, sizeof(kb), 0600)))
		goto out;
	explicit_bzero(kb, sizeof(kb));
	{
		struct nf_enroll_opts eo = { .state_dir = enr, .served_tree = tree,
					     .munge_key = key };
		/* QEMU's user-mode network: the VM's requests come from the
		 * host's loopback */
		struct nf_enroll_node en_node = { .name = node, .role = role,
						  .mac = CI_VM_MAC,
						  .ip = 0x7f000001 };
		char *names[] = { node };

		if ((r = nf_enroll_new(ctx, &eo, &en)) ||
		    (r = nf_enroll_add_node(en, &en_node)) ||
		    (r = nf_enroll_open(en, names, 1, 3600, 0)))
			goto out;
	}
	{
		struct nf_serve_opts so = { .tree = tree, .state_dir = state,
					    .listen = "127.0.0.1:0", .threads = 2,
					    .enroll = en };

		if ((r = nf_server_start(ctx, &so, &srv)))
			goto out;
	}
	snprintf(server, sizeof(server), "%s", nf_server_url(srv));
	port = (unsigned)strtoul(strrchr(server, ':') + 1, NULL, 10);

	/* the boot tree, for this one node */
	doc = nf_asprintf("# nodeforge ci: the VM that boots role '%s'\n"
			  "nodes:\n  - name: %s\n    mac: \"%s\"\n"
			  "    ip: 10.0.2.15\n    role: %s\n    rack: ci\n",
			  role, node, CI_VM_MAC, role);
	if (!doc) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = write_file_str(ctx, inv_path, doc, 0644)) ||
	    (r = nf_inventory_load(ctx, inv_path, NULL, &inv, &d)))
		goto out;
	snprintf(url, sizeof(url), "http://10.0.2.2:%u", port);
	{
		/* the kernel arguments of the image's own resolved profile */
		char *pj = nf_asprintf("%s/../root/etc/nodeforge/profile.json", dir);
		struct nf_profile *p = NULL;
		char *kargs = NULL;
		json_t *ra = json_object();
		struct nf_pxe_opts po = { .inv = inv, .site = site, .out_dir = tree,
					  .out_abs = tree, .server_url = url,
					  .images_dir = images,
					  .network = "10.0.2.0/24", .role_args = ra };
		struct nf_pxe_stats st;

		r = !pj || !ra ? -ENOMEM : nf_profile_load_json(ctx, pj, &p);
		if (!r)
			r = nf_profile_kernel_args(ctx, p, &kargs);
		/* the VM reaches no time server (time.* is skipped by
		 * environment): its boot does not wait for a first sync that
		 * cannot come (chrony-wait, up to time.sync_wait_s) */
		if (!r) {
			char *k2 = nf_asprintf("%s systemd.mask=chrony-wait.service",
					       kargs);

			r = !k2 || json_object_set_new(ra, role, json_string(k2))
			    ? -ENOMEM : 0;
			free(k2);
		}
		if (!r)
			r = nf_pxe_render(ctx, &po, &st);
		free(pj);
		free(kargs);
		nf_profile_free(p);
		json_decref(ra);
		if (r)
			goto out;
	}

	/* boot, and wait for the node's verdict */
	if (vm_start(ctx, o, dir, port, &vm)) {
		r = NF_E_EXTERNAL;
		goto out;
	}
	nf_log(ctx, NF_LOG_INFO, "ci: booting '%s' in QEMU (%s), up to %u s",
	       node, o->boot_accel && *o->boot_accel ? o->boot_accel : "tcg",
	       o->boot_timeout ? o->boot_timeout : 900);
	free(doc);
	doc = nf_asprintf("%s/api/v1/nodes/%s", server, node);
	if (!doc) {
		r = -ENOMEM;
		goto out;
	}
	deadline = nf_now_s() + (o->boot_timeout ? o->boot_timeout : 900);
	for (;;) {
		const char *s;

		if (nf_spawn_poll(&vm) == 1) {
			*why = nf_asprintf("QEMU exited (status %d) before the node "
					   "reported a verdict",
					   WIFEXITED(vm.status) ? WEXITSTATUS(vm.status) : -1);
			r = NF_E_EXTERNAL;
			goto out;
		}
		free(body);
		body = NULL;
		json_decref(j);
		j = NULL;
		if (!nf_http_get(ctx, doc, 4u << 20, 2000, &body, NULL) &&
		    (j = json_loads(body, 0, NULL)) &&
		    (s = json_string_value(json_object_get(j, "state"))) &&
		    (!strcmp(s, "verified") || !strcmp(s, "failed")))
			break;
		if (nf_now_s() > deadline) {
			*why = nf_asprintf("no verdict from the node within %u s",
					   o->boot_timeout ? o->boot_timeout : 900);
			r = NF_E_TIMEOUT;
			goto out;
		}
		usleep(500 * 1000);
	}
	r = boot_cases(ci, json_object_get(j, "verdict"), fails);
out:
	if (r && !*why)
		*why = nf_strdup(nf_error_text(ctx, r));
	nf_spawn_kill(&vm, 5000);
	nf_server_stop(srv);
	nf_enroll_free(en);
	nf_inventory_free(inv);
	nf_diags_free(&d);
	json_decref(j);
	free(body);
	free(doc);
	unlink(key);
	return r;
}

int nf_ci_boot_stage(struct nf_ctx *ctx, struct nf_ci *ci, const char *role,
		     const struct nf_site *site, const struct nf_ci_opts *o,
		     const char *tmpdir)
{
	char dir[PATH_MAX], console[PATH_MAX + 16];
	double ts = nf_now_s();
	size_t fails = 0;
	char *why = NULL, *tail, *detail;
	int r;

	snprintf(dir, sizeof(dir), "%s/boot", tmpdir);
	if (mkdir(dir, 0700))
		return nf_ci_stage_error(ctx, ci, "stage.boot",
				   nf_fail(ctx, -errno, "cannot create '%s': %s",
					   dir, strerror(errno)), ts);
	r = boot_run(ctx, ci, role, site, o, dir, &fails, &why);
	snprintf(console, sizeof(console), "%s/console.log", dir);
	if (r) {
		tail = console_tail(console, 3000);
		detail = nf_asprintf("%s\n--- the VM's console (last lines) ---\n%s",
				     why ? why : nf_strerror(r), tail ? tail : "(none)");
		r = nf_ci_add_case(ci, "ci.stage", "stage.boot", NF_V_HUNG,
			     why ? why : nf_strerror(r), detail, nf_now_s() - ts);
		free(tail);
		free(detail);
		if (!r)
			r = nf_fail(ctx, NF_E_EXTERNAL, "--boot: %s", why ? why : "failed");
		free(why);
		return r;
	}
	free(why);
	if (fails) {
		char msg[96];

		snprintf(msg, sizeof(msg), "%zu checks failed on the booted node", fails);
		return nf_ci_stage_case(ci, "stage.boot", NF_V_FAIL, msg, ts);
	}
	return nf_ci_stage_case(ci, "stage.boot", NF_V_PASS, NULL, ts);
}
