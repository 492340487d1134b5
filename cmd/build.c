/* SPDX-License-Identifier: MIT */
/* nodeforge build ROLE: the golden image of a role. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>
#include <sys/stat.h>

#include "cmd.h"

static int cmd_build(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_build = {
	.name = "build",
	.summary = "build the golden image of a role",
	.help = "usage: nodeforge build ROLE [--out DIR] [--cache DIR] [--no-cache]\n"
		"                       [--mirror SRC] [--artifact-mirror SRC]\n"
		"                       [--offline] [--overlays DIR]\n"
		"                       [--key FILE] [--epoch N] [--inventory FILE]\n"
		"                       [--self-package DIR|FILE]\n"
		"       nodeforge build ROLE --prepare [--cache DIR] [--mirror SRC]\n"
		"                       [--artifact-mirror SRC]\n"
		"\n"
		"Build ROLE's golden image from its resolved profile: bootstrap\n"
		"with the distro's own tool (mmdebstrap), overlays, every facet's\n"
		"files, host identity removed, then a rootfs tar.zst, an initramfs\n"
		"cpio.zst (the whole image, systemd as init) and the kernel, with a\n"
		"signed manifest, published under OUT/ROLE/ as ROLE-<sha12>.* and\n"
		"pointed to by OUT/ROLE/ROLE.current (replaced by rename).\n"
		"\n"
		"  -o, --out DIR       output directory (default: out; also\n"
		"                      --output)\n"
		"      --cache DIR     cache (default: ~/.cache/nodeforge)\n"
		"      --no-cache      bootstrap again and rebuild everything\n"
		"  -m, --mirror SRC    distro mirror, URL or local directory\n"
		"                      (default: the site's mirrors.debian)\n"
		"      --artifact-mirror SRC  pinned artifacts (system.artifacts)\n"
		"                      by file name from SRC, a URL prefix or a\n"
		"                      directory, instead of their origin\n"
		"                      (default: $NODEFORGE_ARTIFACT_MIRROR)\n"
		"      --offline       use cached results only, no network\n"
		"      --prepare       fill the cache and stop: the bootstrap,\n"
		"                      then the root after the pinned artifacts\n"
		"                      are compiled; nothing is published and no\n"
		"                      nodeforge package is needed.  The next\n"
		"                      build (or --offline build) of the role\n"
		"                      starts from there\n"
		"      --overlays DIR  overlay trees (default: next to profiles/)\n"
		"  -k, --key FILE      Ed25519 signing key (default: one generated\n"
		"                      under the cache; its .pub is copied to\n"
		"                      OUT/signing.pub)\n"
		"      --epoch N       clamp mtimes to N (default:\n"
		"                      $SOURCE_DATE_EPOCH, else 2024-01-01)\n"
		"      --self-package DIR|FILE  the nodeforge package the image\n"
		"                      gets, built for its distribution: a\n"
		"                      .deb/.rpm, or DIR/<suite>/ (DIR/el9/)\n"
		"                      holding nodeforge_VERSION_amd64.deb\n"
		"                      (default: $NODEFORGE_SELF_PACKAGE, else\n"
		"                      pkg/ beside the binary, where make\n"
		"                      image-pkgs puts them); 'host' copies\n"
		"                      this binary (stand-in roots only)\n"
		"      --inventory FILE  racks.yaml: a role that runs slurmctld\n"
		"                      gets slurm.conf NodeName= lines for the\n"
		"                      inventory's slurmd roles (grouped by role,\n"
		"                      with each role's hardware) and one\n"
		"                      partition per such role\n"
		"\n"
		"Unchanged inputs are a cache hit: nothing is rebuilt.  A second\n"
		"build of the same role while one runs is refused.\n"
		"\n"
		"Exit status: 0 built (or current), 1 failure (nothing published),\n"
		"2 usage error.\n",
	.run = cmd_build,
};

struct progress {
	int tty;
	int quiet;
};

static void progress(void *data, int ev, const char *stage, double secs,
		     unsigned long long bytes)
{
	struct progress *p = data;

	if (p->quiet)
		return;
	switch (ev) {
	case NF_BUILD_START:
		if (p->tty)
			fprintf(stderr, "\r\033[K%-16s ...", stage);
		break;
	case NF_BUILD_BYTES:
		if (p->tty)
			fprintf(stderr, "\r\033[K%-16s %6.1fs %8.1f MiB", stage,
				secs, (double)bytes / 1048576.0);
		break;
	case NF_BUILD_DONE:
		if (p->tty)
			fprintf(stderr, "\r\033[K");
		if (bytes)
			fprintf(stderr, "%-16s %6.1fs %8.1f MiB\n", stage, secs,
				(double)bytes / 1048576.0);
		else
			fprintf(stderr, "%-16s %6.1fs\n", stage, secs);
		break;
	case NF_BUILD_NOTE:
		if (p->tty)
			fprintf(stderr, "\r\033[K");
		fprintf(stderr, "  %s\n", stage);
		break;
	}
	fflush(stderr);
}

int nf_cmd_build_opt(const char *cmd, int o, const char *arg,
		     struct nf_build_opts *bo)
{
	char *end;

	switch (o) {
	case 'o': bo->out = arg; return 0;
	case 'c': bo->cache = arg; return 0;
	case 'N': bo->no_cache = 1; return 0;
	case 'm': bo->mirror = arg; return 0;
	case 'O': bo->offline = 1; return 0;
	case 'A': bo->artifact_mirror = arg; return 0;
	case 'V': bo->overlays = arg; return 0;
	case 'k': bo->key = arg; return 0;
	case 'I': bo->inventory = arg; return 0;
	case 'P': bo->self_package = arg; return 0;
	case 'E':
		errno = 0;
		bo->epoch = strtoll(arg, &end, 10);
		if (errno || *end || bo->epoch < 0 || !*arg)
			return nf_usage_error(cmd, "--epoch '%s' is not a number "
					      "of seconds", arg);
		return 0;
	default:
		return 1;
	}
}

/* The packages an image's nodeforge comes from, when --self-package
 * names none: $NODEFORGE_SELF_PACKAGE, else the ones beside the binary
 * (a checkout's build/pkg, where make image-pkgs puts them), else the
 * installed data directory's */
static const char *default_self_package(void)
{
	static char dir[PATH_MAX];
	const char *e = getenv("NODEFORGE_SELF_PACKAGE");
	char exe[PATH_MAX];
	ssize_t n;
	struct stat st;

	if (e && *e)
		return e;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		char *slash;

		exe[n] = '\0';
		if ((slash = strrchr(exe, '/'))) {
			*slash = '\0';
			snprintf(dir, sizeof(dir), "%s/pkg", exe);
			if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
				return dir;
		}
	}
	snprintf(dir, sizeof(dir), "%s/packages", NF_DATADIR);
	return dir;
}

const char *nf_cmd_default_cache(void)
{
	static char dir[PATH_MAX];
	const char *x = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");

	if (x && *x == '/')
		snprintf(dir, sizeof(dir), "%s/nodeforge", x);
	else if (home && *home)
		snprintf(dir, sizeof(dir), "%s/.cache/nodeforge", home);
	else
		return NULL;
	return dir;
}

int nf_cmd_build_check(const char *cmd, const char *role,
		       struct nf_build_opts *bo)
{
	const char *e, *am_opt = "--artifact-mirror";
	const char *sp_opt = "--self-package";
	char *end;
	int r;

	if (!bo->self_package) {
		sp_opt = getenv("NODEFORGE_SELF_PACKAGE") &&
			 *getenv("NODEFORGE_SELF_PACKAGE")
			 ? "NODEFORGE_SELF_PACKAGE" : NULL;
		bo->self_package = default_self_package();
	}
	if (!bo->artifact_mirror && getenv("NODEFORGE_ARTIFACT_MIRROR") &&
	    *getenv("NODEFORGE_ARTIFACT_MIRROR")) {
		bo->artifact_mirror = getenv("NODEFORGE_ARTIFACT_MIRROR");
		am_opt = "NODEFORGE_ARTIFACT_MIRROR";
	}
	if (!role)
		return nf_usage_error(cmd, "which role? (nodeforge profile "
				      "list shows them)");
	if (bo->offline && bo->no_cache)
		return nf_usage_error(cmd, "--offline needs the cache: it "
				      "cannot be combined with --no-cache");
	if (bo->prepare && bo->no_cache)
		return nf_usage_error(cmd, "--prepare fills the cache: it "
				      "cannot be combined with --no-cache");
	/* every source named, before anything is fetched or bootstrapped */
	if ((bo->artifact_mirror &&
	     (r = nf_cmd_path_arg(cmd, am_opt, bo->artifact_mirror,
				  NF_PATH_URL))) ||
	    (bo->mirror && *bo->mirror &&
	     (r = nf_cmd_path_arg(cmd, "--mirror", bo->mirror, NF_PATH_URL))) ||
	    (bo->overlays && *bo->overlays &&
	     (r = nf_cmd_path_arg(cmd, "--overlays", bo->overlays, 0))) ||
	    (sp_opt && !bo->prepare && strcmp(bo->self_package, "host") &&
	     (r = nf_cmd_path_arg(cmd, sp_opt, bo->self_package,
				  NF_PATH_FILE))))
		return r;
	if (!bo->cache || !*bo->cache)
		bo->cache = nf_cmd_default_cache();
	if (bo->epoch < 0 && (e = getenv("SOURCE_DATE_EPOCH")) && *e) {
		long long v = strtoll(e, &end, 10);

		if (*end || v < 0) {
			fprintf(stderr, "nodeforge %s: SOURCE_DATE_EPOCH '%s' "
				"is not a number of seconds\n", cmd, e);
			return NF_EXIT_FAILURE;
		}
		bo->epoch = v;
	}
	/* stand-ins for the bootstrap tools (tests) */
	bo->mmdebstrap = getenv("NODEFORGE_MMDEBSTRAP");
	bo->dnf = getenv("NODEFORGE_DNF");
	return 0;
}

static int cmd_build(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "prepare", no_argument, NULL, 'p' },
		NF_BUILD_LONGOPTS,
		{ 0 }
	};
	struct nf_build_opts bo = { .epoch = -1 };
	struct nf_build_result res;
	struct progress pr = { .tty = isatty(STDERR_FILENO),
			       .quiet = g->quiet || g->json };
	struct nf_emit *e;
	int o, r;

	const char *role = NULL;
	struct nf_args args = { &role, 1 };

	/* options may come before or after ROLE */
	while ((o = nf_getopt_args(&nf_cmd_build, argc, argv,
				   NF_BUILD_SHORTOPTS, opts, &args)) != -1) {
		if (o == -2)
			return 0;
		if (o == -3)
			return NF_EXIT_USAGE;
		if (o == 'p') {
			bo.prepare = 1;
			continue;
		}
		if ((r = nf_cmd_build_opt("build", o, optarg, &bo)) == 1)
			return nf_usage_error("build", "unknown option");
		if (r)
			return r;
	}
	if ((r = nf_cmd_build_check("build", role, &bo)))
		return r;
	bo.progress = progress;
	bo.progress_data = &pr;
	r = nf_build(g->ctx, role, g->site, &bo, &res);
	if (r) {
		nf_build_result_free(&res);
		return nf_cmd_fail(g, "build", r);
	}
	if (nf_emit_new(&e, stdout, g->json)) {
		nf_build_result_free(&res);
		return NF_EXIT_FAILURE;
	}
	if (res.prepared && (!g->quiet || g->json)) {
		nf_emit_str(e, "role", "%s: ", role);
		nf_emit_bool(e, "prepared", "prepared in the cache; nothing "
			     "published\n", 1);
		nf_emit_bool(e, "bootstrap_cached", NULL, res.bootstrap_cached);
	} else if (!g->quiet || g->json) {
		nf_emit_str(e, "role", "%s: ", role);
		nf_emit_str(e, "dir", "%s/", res.dir);
		nf_emit_str(e, "rootfs", "%s", res.rootfs);
		nf_emit_bool(e, "unchanged", res.unchanged ? " (unchanged)" : "",
			     res.unchanged);
		nf_emit_text(e, "\n");
		nf_emit_str(e, "initramfs", NULL, res.initramfs);
		nf_emit_str(e, "kernel", NULL, res.kernel);
		nf_emit_str(e, "manifest", NULL, res.manifest);
		nf_emit_str(e, "rootfs_sha256", "rootfs sha256 %s\n",
			    res.rootfs_sha256);
		nf_emit_bool(e, "bootstrap_cached", NULL, res.bootstrap_cached);
	}
	r = nf_emit_end(e);
	nf_emit_free(e);
	nf_build_result_free(&res);
	return r ? NF_EXIT_FAILURE : 0;
}
