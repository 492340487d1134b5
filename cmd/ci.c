/* SPDX-License-Identifier: MIT */
/* nodeforge ci ROLE: golden-image CI, from a role to a verdict. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd.h"

static int cmd_ci(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_ci = {
	.name = "ci",
	.summary = "build a role's image and prove it offline (CI verdict)",
	.help = "usage: nodeforge ci ROLE [--baseline MANIFEST] [--junit FILE] [--boot]\n"
		"                    [--boot-timeout SECS] [--accel tcg|kvm]\n"
		"                    [--vm-memory MB] [--out DIR] [--cache DIR] [--no-cache]\n"
		"                    [--mirror SRC] [--artifact-mirror SRC]\n"
		"                    [--offline] [--overlays DIR] [--key FILE]\n"
		"                    [--epoch N] [--inventory FILE] [--json]\n"
		"\n"
		"Take ROLE from source to a verdict a CI system understands:\n"
		"  1 build    nodeforge build ROLE (cache-aware; same options)\n"
		"  2 static   the published rootfs, unpacked, checked by the\n"
		"             verifier in static mode with the image's own\n"
		"             /etc/nodeforge/profile.json, plus: no munge key, no\n"
		"             StoragePass, no private keys, no ssh host keys, an\n"
		"             empty /etc/machine-id\n"
		"  3 boot     --boot: PXE-boot the image in QEMU exactly as a rack\n"
		"             node boots (nodeforge pxe + the embedded server,\n"
		"             iPXE, the whole image as initramfs); the VM enrolls\n"
		"             a throwaway munge key made for this run, and the\n"
		"             node's own verifier reports its verdict: one case\n"
		"             per check (boot.FACET). Checks that need what a VM\n"
		"             lacks (GPUs, NVSwitch, InfiniBand, local NVMe, the\n"
		"             memory of a hugepage pool, the site's time servers)\n"
		"             and failed there are skipped\n"
		"             by environment, not passed\n"
		"  4 diff     against --baseline (a released image's manifest,\n"
		"             its rootfs next to it): packages (dpkg status),\n"
		"             config files (/etc), kernel arguments (boot_args)\n"
		"  5 report   --junit FILE: one test case per check and per stage\n"
		"\n"
		"  -b, --baseline MANIFEST  the last released image's manifest\n"
		"  -j, --junit FILE         write the JUnit report (also when a\n"
		"                           stage fails)\n"
		"      --boot               boot the image in a VM (stage 3); needs\n"
		"                           qemu-system-x86 and ipxe-qemu\n"
		"      --boot-timeout SECS  wait this long for the node's verdict\n"
		"                           (default 900)\n"
		"      --accel tcg|kvm      QEMU accelerator (default tcg)\n"
		"      --vm-memory MB       the VM's memory (default 2048; it holds\n"
		"                           the whole image)\n"
		"  -o, --out DIR            build output (default: out; also --output)\n"
		"      --cache DIR          the build cache\n"
		"      --no-cache           bootstrap again and rebuild everything\n"
		"  -m, --mirror SRC         distro mirror, URL or local directory\n"
		"      --artifact-mirror SRC  pinned artifacts by file name from SRC\n"
		"      --offline            use cached results only, no network\n"
		"      --overlays DIR       overlay trees\n"
		"  -k, --key FILE           Ed25519 signing key\n"
		"      --epoch N            clamp mtimes to N\n"
		"      --inventory FILE     racks.yaml: slurm.conf's NodeName= lines\n"
		"      --self-package DIR|FILE  the nodeforge package the image gets\n"
		"\n"
		"Exit status: 0 every required check and stage passed, 1 runtime\n"
		"failure (a stage could not run, e.g. no verdict from the VM),\n"
		"2 usage error,\n"
		"3 findings.\n",
	.run = cmd_ci,
};

static void emit_diff(struct nf_emit *e, const json_t *d)
{
	const json_t *pk = json_object_get(d, "packages");
	const json_t *ka = json_object_get(d, "kernel_args");
	const json_t *cf = json_object_get(d, "config");
	const char *k;
	json_t *v;
	size_t i;

	if (nf_emit_is_json(e)) {
		nf_emit_json(e, "diff", (json_t *)d);
		return;
	}
	nf_emit_text(e, "diff against %s:\n",
		     json_string_value(json_object_get(d, "baseline")));
	if (json_is_object(pk)) {
		json_object_foreach(json_object_get(pk, "added"), k, v)
			nf_emit_text(e, "  package + %s %s\n", k, json_string_value(v));
		json_object_foreach(json_object_get(pk, "removed"), k, v)
			nf_emit_text(e, "  package - %s %s\n", k, json_string_value(v));
		json_object_foreach(json_object_get(pk, "changed"), k, v)
			nf_emit_text(e, "  package ~ %s %s -> %s\n", k,
				     json_string_value(json_array_get(v, 0)),
				     json_string_value(json_array_get(v, 1)));
	} else {
		nf_emit_text(e, "  packages: no dpkg status to compare\n");
	}
	json_array_foreach(cf, i, v)
		nf_emit_text(e, "  config  %s %s\n",
			     json_string_value(json_object_get(v, "change")),
			     json_string_value(json_object_get(v, "path")));
	if (json_is_object(ka)) {
		json_array_foreach(json_object_get(ka, "added"), i, v)
			nf_emit_text(e, "  kernel arg + %s\n", json_string_value(v));
		json_array_foreach(json_object_get(ka, "removed"), i, v)
			nf_emit_text(e, "  kernel arg - %s\n", json_string_value(v));
	}
	nf_emit_text(e, "  %lld files changed\n",
		     (long long)json_integer_value(json_object_get(d, "files_changed")));
}

static int cmd_ci(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "baseline", required_argument, NULL, 'b' },
		{ "junit", required_argument, NULL, 'j' },
		{ "boot", no_argument, NULL, 'B' },
		{ "boot-timeout", required_argument, NULL, 'T' },
		{ "accel", required_argument, NULL, 'X' },
		{ "vm-memory", required_argument, NULL, 'M' },
		NF_BUILD_LONGOPTS,
		{ 0 }
	};
	struct nf_ci_opts co = { .build = { .epoch = -1 } };
	const char *role = NULL, *junit = NULL;
	struct nf_args args = { &role, 1 };
	struct nf_ci *ci = NULL;
	struct nf_emit *e;
	char errbuf[1024];
	int o, r, status;

	while ((o = nf_getopt_args(&nf_cmd_ci, argc, argv,
				   "b:j:" NF_BUILD_SHORTOPTS, opts, &args)) != -1) {
		switch (o) {
		case -2: return 0;
		case -3: return NF_EXIT_USAGE;
		case 'b': co.baseline = optarg; break;
		case 'j': junit = optarg; break;
		case 'B': co.boot = 1; break;
		case 'X':
			if (strcmp(optarg, "tcg") && strcmp(optarg, "kvm"))
				return nf_usage_error("ci", "--accel '%s': tcg or kvm",
						      optarg);
			co.boot_accel = optarg;
			break;
		case 'T':
		case 'M': {
			char *end;
			unsigned long n = strtoul(optarg, &end, 10);

			if (*end || !*optarg || n < 1 || n > (o == 'T' ? 86400 : 1048576))
				return nf_usage_error("ci", "%s '%s' is not a number in range",
						      o == 'T' ? "--boot-timeout"
							       : "--vm-memory", optarg);
			if (o == 'T')
				co.boot_timeout = (unsigned)n;
			else
				co.boot_memory_mb = (unsigned)n;
			break;
		}
		default:
			if ((r = nf_cmd_build_opt("ci", o, optarg, &co.build)) == 1)
				return nf_usage_error("ci", "unknown option");
			if (r)
				return r;
		}
	}
	if ((r = nf_cmd_build_check("ci", role, &co.build)))
		return r;
	co.tmpdir = getenv("TMPDIR");
	co.qemu = getenv("NODEFORGE_QEMU");

	r = nf_ci_run(g->ctx, role, g->site, &co, &ci);
	if (!ci)
		return nf_cmd_fail(g, "ci", r);
	/* the run's own message, kept over a report failure's */
	snprintf(errbuf, sizeof(errbuf), "%s", nf_error_text(g->ctx, r));
	if (junit) {
		int w = nf_ci_write_junit(g->ctx, ci, role, junit);

		if (w) {
			fprintf(stderr, "nodeforge ci: cannot write '%s': %s\n",
				junit, nf_error_text(g->ctx, w));
			if (!r) {
				r = w;
				snprintf(errbuf, sizeof(errbuf), "cannot write '%s'",
					 junit);
			}
		}
	}
	if (nf_emit_new(&e, stdout, g->json)) {
		nf_ci_free(ci);
		return NF_EXIT_FAILURE;
	}
	status = r ? NF_EXIT_FAILURE
		   : nf_ci_passed(ci) ? NF_EXIT_OK : NF_EXIT_FINDINGS;
	nf_emit_str(e, "role", "%s: ", role);
	nf_emit_str(e, "verdict", "%s",
		    status == NF_EXIT_OK ? "pass"
		    : status == NF_EXIT_FINDINGS ? "fail" : "error");
	nf_emit_int(e, "passed", ", %lld passed", (long long)nf_ci_tally(ci, NF_V_PASS));
	nf_emit_int(e, "failed", ", %lld failed", (long long)nf_ci_tally(ci, NF_V_FAIL));
	nf_emit_int(e, "errors", ", %lld errors", (long long)nf_ci_tally(ci, NF_V_HUNG));
	nf_emit_int(e, "skipped", ", %lld skipped\n",
		    (long long)nf_ci_tally(ci, NF_V_SKIP));
	nf_emit_arr_open(e, "cases");
	for (size_t i = 0; i < nf_ci_count(ci); i++) {
		const struct nf_ci_case *c = nf_ci_case(ci, i);
		int show = c->verdict == NF_V_FAIL || c->verdict == NF_V_HUNG ||
			   !strcmp(c->classname, "ci.stage") ||
			   !strcmp(c->classname, "ci.diff");
		int quiet = g->quiet || (!show && !g->verbose);

		nf_emit_obj_open(e, NULL);
		nf_emit_str(e, "verdict", quiet ? NULL : "%-5s ",
			    c->verdict == NF_V_HUNG ? "error"
						    : nf_verdict_name(c->verdict));
		nf_emit_str(e, "class", NULL, c->classname);
		nf_emit_str(e, "id", quiet ? NULL : "%-34s", c->name);
		if (c->message)
			nf_emit_str(e, "message", quiet ? NULL : " %s", c->message);
		if (c->detail)
			nf_emit_str(e, "detail", NULL, c->detail);
		nf_emit_text(e, quiet ? "" : "\n");
		nf_emit_obj_close(e);
	}
	nf_emit_arr_close(e);
	if (nf_ci_diff(ci) && !g->quiet)
		emit_diff(e, nf_ci_diff(ci));
	if (r && !g->json)
		fprintf(stderr, "nodeforge ci: %s\n", errbuf);
	if (r && g->json)
		nf_emit_str(e, "error", NULL, errbuf);
	if (nf_emit_end(e))
		status = NF_EXIT_FAILURE;
	nf_emit_free(e);
	nf_ci_free(ci);
	return status;
}
