/* SPDX-License-Identifier: MIT */
/*
 * kernel: the kernel command line.  `args` are literal; `isolate_cpus`
 * expands to isolcpus/nohz_full/rcu_nocbs so the three never disagree.
 */
#include "internal.h"
#include "internal/gres.h"

#include <stdlib.h>

static const struct nf_field fields[] = {
	{ "args", NF_T_STRLIST },
	{ "isolate_cpus", NF_T_STR },
	/* the image's kernel package (Debian: linux-image-amd64, the
	 * release's current kernel): a profile whose modules are built for
	 * one kernel pins it here, with its headers */
	{ "package", NF_T_STR },
	/* directories under /lib/modules/KVER/ whose modules the image
	 * builds (an artifact): signed with the site's key, or left unsigned,
	 * as the site file's module_signing says (lib/build_sign.c) */
	{ "built_modules", NF_T_STRLIST },
	{ 0 }
};

static int boot_args(const json_t *sec, json_t *args)
{
	const char *mask = json_string_value(json_object_get(sec, "isolate_cpus"));
	size_t i;
	json_t *a;

	json_array_foreach(json_object_get(sec, "args"), i, a)
		json_array_append(args, a);
	if (mask && *mask) {
		/* isolcpus takes flags, then the list, comma-separated */
		json_array_append_new(args, json_sprintf("isolcpus=nohz,domain,%s", mask));
		json_array_append_new(args, json_sprintf("nohz_full=%s", mask));
		json_array_append_new(args, json_sprintf("rcu_nocbs=%s", mask));
	}
	return 0;
}

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const json_t *node = json_object_get(
		json_object_get(nf_profile_json(l->profile), "slurm"), "node");
	const char *mask = json_string_value(json_object_get(sec, "isolate_cpus"));
	size_t i;
	json_t *a;

	json_array_foreach(json_object_get(sec, "args"), i, a) {
		const char *s = json_string_value(a);
		char path[64];

		snprintf(path, sizeof(path), "kernel.args[%zu]", i);
		if (s && (!*s || strpbrk(s, " \t\n\"'")))
			nf_lint_at(l, path, NF_SEV_ERROR,
				   "kernel argument '%s' must be one word", s);
		else if (s && !strcmp(s, "--"))
			nf_lint_at(l, path, NF_SEV_ERROR,
				   "kernel argument '--' ends the kernel's arguments: "
				   "the ones after it would go to init");
		if (s && (!strncmp(s, "isolcpus=", 9) ||
			  !strncmp(s, "nohz_full=", 10) ||
			  !strncmp(s, "rcu_nocbs=", 10)))
			nf_lint_at(l, path, NF_SEV_WARNING,
				   "'%s': set kernel.isolate_cpus instead, so "
				   "isolcpus, nohz_full and rcu_nocbs agree", s);
	}
	if (mask && *mask) {
		uint8_t bits[8192 / 8];
		unsigned max = 0;

		if (nf_cpulist_parse(mask, bits, sizeof(bits) * 8, &max)) {
			nf_lint_at(l, "kernel.isolate_cpus", NF_SEV_ERROR,
				   "'%s' is not a CPU list such as 1-31,33-63",
				   mask);
		} else if (node) {
			json_int_t cpus =
				json_integer_value(json_object_get(node, "sockets")) *
				json_integer_value(json_object_get(node, "cores_per_socket")) *
				json_integer_value(json_object_get(node, "threads_per_core"));

			if (cpus > 0 && max >= cpus)
				nf_lint_at(l, "kernel.isolate_cpus", NF_SEV_ERROR,
					   "isolate_cpus '%s' names CPU %u but the node has "
					   "%lld CPUs (0-%lld)", mask, max,
					   (long long)cpus, (long long)cpus - 1);
			if (cpus > 0 && (bits[0] & 1))
				nf_lint_at(l, "kernel.isolate_cpus", NF_SEV_WARNING,
					   "isolate_cpus '%s' isolates CPU 0: leave "
					   "housekeeping CPUs for the OS and slurmd", mask);
		}
	}
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* GRUB (stateful installs) and /etc/kernel/cmdline (kernel-install, UKI)
 * both carry every facet's kernel arguments, in the profile's order */
static int apply(struct nf_apply *a, const json_t *sec)
{
	const json_t *args = json_object_get(a->prof, "boot_args");
	struct nf_buf b = { 0 }, line = { 0 };
	size_t i;
	json_t *v;
	int r;

	(void)sec;
	json_array_foreach(args, i, v) {
		const char *s = json_string_value(v);

		if (!s || strpbrk(s, "\"'\\$` \t\n"))
			return nf_fail(a->ctx, NF_E_INVALID,
				       "kernel argument '%s' cannot be quoted "
				       "safely for GRUB", s ? s : "(not a string)");
		nf_buf_printf(&line, "%s%s", i ? " " : "", s);
	}
	nf_apply_header(&b, "#", "kernel");
	nf_buf_printf(&b, "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX %s\"\n",
		      line.s ? line.s : "");
	if ((r = nf_apply_write_buf(a, "/etc/default/grub.d/nodeforge.cfg", &b,
				    0644, 0, 0))) {
		nf_buf_free(&line);
		return r;
	}
	nf_buf_printf(&line, "\n");
	return nf_apply_write_buf(a, "/etc/kernel/cmdline", &line, 0644, 0, 0);
}

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* GRUB's value as the shell reads it: one level of double or single quotes
 * around it removed */
static char *shell_value(char *v)
{
	size_t n = v ? strlen(v) : 0;

	if (n >= 2 && (*v == '"' || *v == '\'') && v[n - 1] == *v) {
		memmove(v, v + 1, n - 2);
		v[n - 2] = '\0';
	}
	return v;
}

/* The command line the boot loader will use next, split: /etc/kernel/cmdline
 * (kernel-install, UKI), else GRUB_CMDLINE_LINUX(_DEFAULT); NULL if none */
static struct nf_cmdline *next_cmdline(struct nf_vcheck *c, const char **from)
{
	struct nf_cmdline *cl = NULL;
	char *buf = NULL, *a, *b;
	size_t len = 0;

	if (!nf_v_read(c, NF_VROOT, "/etc/kernel/cmdline", 64 * 1024, &buf, &len)) {
		*from = "/etc/kernel/cmdline";
	} else {
		if (nf_v_read(c, NF_VROOT, "/etc/default/grub", 256 * 1024, &buf, NULL))
			return NULL;
		*from = "/etc/default/grub";
		a = shell_value(nf_v_conf_get(buf, "GRUB_CMDLINE_LINUX", "="));
		b = shell_value(nf_v_conf_get(buf, "GRUB_CMDLINE_LINUX_DEFAULT", "="));
		free(buf);
		buf = nf_asprintf("%s %s", a ? a : "", b ? b : "");
		free(a);
		free(b);
		len = buf ? strlen(buf) : 0;
	}
	if (buf && nf_cmdline_new(buf, len, &cl))
		cl = NULL;
	free(buf);
	return cl;
}

/* The remedy for kernel arguments missing from where this node boots:
 * a network-booted node takes them from the boot tree ('nodeforge pxe'),
 * one that boots from disk from /etc/default/grub (a sed line that adds
 * exactly the missing ones) or /etc/kernel/cmdline */
static void remedy_args(struct nf_vcheck *c, const char *from, const char *all)
{
	if (nf_v_netboot(c)) {
		nf_v_remedy(c, "this node boots from the network: on the boot server, "
			    "render the tree again (nodeforge pxe; the arguments are "
			    "the profile's, nodeforge profile show %s --args), then "
			    "power-cycle this node", nf_v_role(c));
		return;
	}
	if (from && !strcmp(from, "/etc/default/grub") && *all && !strpbrk(all, "/&\\'\"|")) {
		nf_v_remedy(c, "sed -i 's/^GRUB_CMDLINE_LINUX=\"/&%s /' /etc/default/grub "
			    "&& update-grub && systemctl reboot", all);
		return;
	}
	/* the arguments to add are many: named by the command that prints
	 * them rather than quoted into a line that cannot wrap */
	(void)all;
	nf_v_remedy(c, "add the arguments of the profile (nodeforge profile show %s "
		    "--args) to the kernel command line in %s, then rebuild the boot "
		    "entries and systemctl reboot", nf_v_role(c),
		    from ? from : "this node's boot loader configuration");
}

/* Append the arguments of args missing from line to all (space-separated) */
static void missing_all(const json_t *args, const struct nf_cmdline *line,
			char *all, size_t sz)
{
	size_t i;
	json_t *a;

	*all = '\0';
	json_array_foreach(args, i, a) {
		const char *s = json_string_value(a);

		if (s && !nf_cmdline_has(line, s))
			snprintf(all + strlen(all), sz - strlen(all), "%s%s", *all ? " " : "", s);
	}
}

static int check_next(struct nf_vcheck *c, const json_t *sec)
{
	const json_t *args = json_object_get(nf_v_profile(c), "boot_args");
	const char *from = NULL;
	struct nf_cmdline *line = next_cmdline(c, &from);
	char missing[2048] = "";
	size_t i, n = 0;
	json_t *a;

	(void)sec;
	nf_v_expect(c, "every profile kernel argument in the boot loader config");
	if (!line) {
		/* a network-booted node has no boot loader of its own */
		if (!nf_v_static(c) && nf_v_netboot(c))
			return nf_v_skip(c, "this node boots from the network: its "
					 "arguments come from the boot tree");
		nf_v_seen(c, "neither /etc/kernel/cmdline nor /etc/default/grub");
		nf_v_remedy(c, "put the arguments (nodeforge profile show %s --args) on "
			    "the kernel command line of this node's boot loader",
			    nf_v_role(c));
		return NF_V_FAIL;
	}
	json_array_foreach(args, i, a) {
		const char *s = json_string_value(a);

		if (!s || nf_cmdline_has(line, s))
			continue;
		n++;
		snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
			 "%s%s", *missing ? " " : "", s);
	}
	if (!n) {
		nf_cmdline_free(line);
		nf_v_seen(c, "all %zu in %s", json_array_size(args), from);
		return NF_V_PASS;
	}
	{
		char all[2048];

		missing_all(args, line, all, sizeof(all));
		nf_cmdline_free(line);
		nf_v_seen(c, "%s lacks %s", from, missing);
		remedy_args(c, from, all);
	}
	return NF_V_FAIL;
}

static int check_running(struct nf_vcheck *c, const json_t *sec)
{
	const json_t *args = json_object_get(nf_v_profile(c), "boot_args");
	struct nf_cmdline *run = NULL, *next;
	char missing[2048] = "";
	const char *from = NULL;
	size_t i, n = 0, pending = 0;
	json_t *a;
	int r;

	(void)sec;
	nf_v_expect(c, "every profile kernel argument in /proc/cmdline");
	if ((r = nf_v_cmdline(c, &run))) {
		nf_v_seen(c, "cannot read /proc/cmdline: %s", nf_strerror(r));
		return NF_V_FAIL;
	}
	next = next_cmdline(c, &from);
	json_array_foreach(args, i, a) {
		const char *s = json_string_value(a);

		if (!s || nf_cmdline_has(run, s))
			continue;
		pending += nf_cmdline_has(next, s);
		n++;
		snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
			 "%s%s", *missing ? " " : "", s);
	}
	if (!n) {
		nf_cmdline_free(run);
		nf_cmdline_free(next);
		nf_v_seen(c, "all %zu present", json_array_size(args));
		return NF_V_PASS;
	}
	if (pending == n) {
		nf_v_seen(c, "reboot needed: %s configured but not running: %s",
			  from, missing);
		nf_v_remedy(c, "systemctl reboot");
	} else {
		char all[2048];

		/* what the boot configuration still lacks */
		missing_all(args, next ? next : run, all, sizeof(all));
		nf_v_seen(c, "missing %s", missing);
		remedy_args(c, from, all);
	}
	nf_cmdline_free(run);
	nf_cmdline_free(next);
	return NF_V_FAIL;
}

/* A configured argument the running kernel did not boot with */
static int check_pending(struct nf_vcheck *c, const json_t *sec)
{
	const char *from = NULL;
	struct nf_cmdline *run = NULL, *next = next_cmdline(c, &from);
	char diff[512] = "", w[256];
	int n = 0;

	(void)sec;
	if (!next)
		return nf_v_skip(c, "no boot loader configuration");
	if (nf_v_cmdline(c, &run)) {
		nf_cmdline_free(next);
		return nf_v_skip(c, "no /proc/cmdline");
	}
	nf_v_expect(c, "the running command line has every argument of %s", from);
	for (size_t i = 0; i < next->n; i++) {
		nf_karg_format(&next->v[i], w, sizeof(w));
		/* GRUB's own variables ($GRUB_CMDLINE_LINUX) are not arguments */
		if (!strchr(w, '$') && !nf_cmdline_has_karg(run, &next->v[i]) && n++ < 6)
			snprintf(diff + strlen(diff), sizeof(diff) - strlen(diff), "%s%s",
				 *diff ? " " : "", w);
	}
	nf_cmdline_free(run);
	nf_cmdline_free(next);
	if (!n) {
		nf_v_seen(c, "no pending change");
		return NF_V_PASS;
	}
	nf_v_seen(c, "reboot needed: %s adds %s", from, diff);
	nf_v_remedy(c, "systemctl reboot");
	return NF_V_FAIL;
}

/* A CPU list of /sys/devices/system/cpu (isolated, possible, ...) as a
 * set; empty is the empty set, as isolated reads when nothing is */
static int sys_cpus(struct nf_vcheck *c, const char *name, uint8_t *set)
{
	char path[64], *buf = NULL, *s;
	int r;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/%s", name);
	if ((r = nf_v_read(c, NF_VSYS, path, 64 * 1024, &buf, NULL)))
		return r;
	s = buf + strspn(buf, " \t\n");
	if (*s)
		r = nf_cpulist_parse(s, set, NF_GRES_MAX_CPUS, NULL);
	else
		memset(set, 0, NF_GRES_MAX_CPUS / 8);
	free(buf);
	return r;
}

static int cpus_unread(struct nf_vcheck *c, const char *what, int r)
{
	if (r == NF_E_PARSE || r == NF_E_LIMIT)
		nf_v_seen(c, "%s is not a list of CPU ids below %d", what, NF_GRES_MAX_CPUS);
	else
		nf_v_seen(c, "cannot read %s: %s", what, nf_strerror(r));
	return NF_V_FAIL;
}

/* out = a without b; whether any CPU is left */
static bool cpus_andnot(uint8_t *out, const uint8_t *a, const uint8_t *b)
{
	bool any = false;

	for (size_t i = 0; i < NF_GRES_MAX_CPUS / 8; i++)
		any |= (out[i] = a[i] & (uint8_t)~b[i]) != 0;
	return any;
}

static bool cpus_any(const uint8_t *set)
{
	for (size_t i = 0; i < NF_GRES_MAX_CPUS / 8; i++)
		if (set[i])
			return true;
	return false;
}

/* The canonical list of a set, "none" for the empty one; caller frees */
static char *cpus_str(const uint8_t *set)
{
	char *s = nf_cpulist_format(set, NF_GRES_MAX_CPUS);

	if (s && !*s) {
		free(s);
		s = nf_strdup("none");
	}
	return s;
}

/* The kernel drops from isolcpus= the CPUs a node does not have, and keeps
 * its boot CPU when the list would take every one, both without failing
 * the boot: what it isolated is in /sys/devices/system/cpu/isolated */
static int check_isolcpus(struct nf_vcheck *c, const json_t *sec)
{
	static const char *const have_from[] = { "possible", "present", "online" };
	const char *mask = json_string_value(json_object_get(sec, "isolate_cpus"));
	uint8_t want[NF_GRES_MAX_CPUS / 8], have[NF_GRES_MAX_CPUS / 8],
		online[NF_GRES_MAX_CPUS / 8], iso[NF_GRES_MAX_CPUS / 8],
		diff[NF_GRES_MAX_CPUS / 8];
	char *iso_s = NULL, *have_s = NULL, *diff_s = NULL;
	const char *from = NULL;
	int r = -ENOENT, v = NF_V_FAIL;

	if (!mask || !*mask)
		return nf_v_skip(c, "the profile sets no kernel.isolate_cpus");
	nf_v_expect(c, "isolated CPUs equal to kernel.isolate_cpus %s, with an "
		    "online CPU left for the OS", mask);
	if (nf_cpulist_parse(mask, want, NF_GRES_MAX_CPUS, NULL)) {
		nf_v_seen(c, "kernel.isolate_cpus '%s' is not a CPU list", mask);
		nf_v_remedy(c, "nodeforge lint %s   # on the build host: fix "
			    "kernel.isolate_cpus, nodeforge build %s, then boot this "
			    "node from the new image", nf_v_role(c), nf_v_role(c));
		return NF_V_FAIL;
	}
	for (size_t i = 0; i < NF_ARRAY_SIZE(have_from) && r; i++)
		if (!(r = sys_cpus(c, have_from[i], have)))
			from = have_from[i];
	if (r)
		return cpus_unread(c, "/sys/devices/system/cpu/possible, present or "
				   "online", r);
	if (sys_cpus(c, "online", online) || !cpus_any(online))
		memcpy(online, have, sizeof(online));
	if ((r = sys_cpus(c, "isolated", iso)))
		return cpus_unread(c, "/sys/devices/system/cpu/isolated", r);
	iso_s = cpus_str(iso);
	have_s = cpus_str(have);
	if (!iso_s || !have_s) {
		nf_v_seen(c, "%s", nf_strerror(-ENOMEM));
		goto out;
	}
	if (cpus_andnot(diff, want, have)) {
		if (!(diff_s = cpus_str(diff))) {
			nf_v_seen(c, "%s", nf_strerror(-ENOMEM));
			goto out;
		}
		nf_v_seen(c, "isolated %s but kernel.isolate_cpus is %s: this node has "
			  "no CPU %s (%s %s)", iso_s, mask, diff_s, from, have_s);
		nf_v_remedy(c, "on the build host: give kernel.isolate_cpus of role %s "
			    "only CPUs of %s (this node's %s CPUs), nodeforge build %s, "
			    "then boot this node from the new image", nf_v_role(c),
			    have_s, from, nf_v_role(c));
	} else if (!cpus_andnot(diff, online, want)) {
		if (!(diff_s = cpus_str(online))) {
			nf_v_seen(c, "%s", nf_strerror(-ENOMEM));
			goto out;
		}
		nf_v_seen(c, "kernel.isolate_cpus %s isolates every online CPU (%s): none "
			  "is left for the OS and slurmd (isolated %s)", mask, diff_s, iso_s);
		nf_v_remedy(c, "on the build host: take at least one CPU of %s (this "
			    "node's online CPUs) out of kernel.isolate_cpus of role %s, "
			    "nodeforge build %s, then boot this node from the new image",
			    diff_s, nf_v_role(c), nf_v_role(c));
	} else if (memcmp(iso, want, sizeof(iso))) {
		struct nf_cmdline *run = NULL;
		char *arg = nf_asprintf("isolcpus=nohz,domain,%s", mask);
		int booted = arg && !nf_v_cmdline(c, &run) && nf_cmdline_has(run, arg);

		nf_cmdline_free(run);
		free(arg);
		nf_v_seen(c, "isolated %s but kernel.isolate_cpus is %s, %s", iso_s, mask,
			  booted ? "which /proc/cmdline's isolcpus= names"
				 : "and /proc/cmdline lacks its isolcpus=");
		if (booted)
			nf_v_remedy(c, "journalctl -k -g 'isolcpus|housekeeping'   # the "
				    "kernel's reason for isolating other CPUs than its "
				    "isolcpus= names");
		else
			nf_v_remedy(c, "systemctl reboot   # once the boot loader has the "
				    "profile's isolcpus= (kernel.cmdline.config)");
	} else {
		nf_v_seen(c, "isolated %s of %s %s", iso_s, from, have_s);
		v = NF_V_PASS;
	}
out:
	free(iso_s);
	free(have_s);
	free(diff_s);
	return v;
}

static const struct nf_check_def defs[] = {
	{ "kernel.cmdline.config", "the boot loader carries the profile's kernel arguments",
	  NULL, NF_CHECK_STATIC, 0, check_next },
	{ "kernel.cmdline.running", "the running kernel has the profile's arguments",
	  NULL, 0, 0, check_running },
	{ "kernel.cmdline.pending", "no boot loader change waits for a reboot",
	  NULL, 0, 0, check_pending },
	/* booted without the arguments, a node isolates nothing */
	{ "kernel.isolcpus", "the kernel isolated exactly the profile's CPUs, and "
	  "left the OS some", NULL, 0, 0, check_isolcpus, "kernel.cmdline.running",
	  .needs = "cpus" },
};

static const struct nf_checkset checks = NF_CHECKSET(defs);

/* ---- end of check ---- */

const struct nf_facet nf_facet_kernel = {
	.name = "kernel",
	.summary = "kernel command line (GRUB, /etc/kernel/cmdline, boot artifacts)",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.boot_args = boot_args,
	.checks = &checks,
};
