/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <jansson.h>

#include "cmd.h"

static int cmd_pxe(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_pxe = {
	.name = "pxe",
	.summary = "render the network boot tree from the inventory",
	.help = "usage: nodeforge pxe --out DIR [--inventory FILE] [--server URL]\n"
		"                     [--images DIR] [--kickstart DIR] [--network CIDR]\n"
		"                     [--kernel-args ROLE+=ARGS]... [--api-upstream URL]\n"
		"                     [--ipxe-dir DIR] [--key FILE] [--strict]\n"
		"\n"
		"Render a static, content-addressed boot tree that any HTTP server can\n"
		"serve: iPXE and GRUB scripts per MAC, a kickstart per role,\n"
		"dnsmasq.conf and nginx.conf.  Unchanged files are not rewritten;\n"
		"changed ones are replaced atomically.\n"
		"\n"
		"  -i, --inventory FILE   inventory (default: racks.yaml)\n"
		"  -o, --out DIR          the boot tree to render (also --tree,\n"
		"                         --output)\n"
		"  -u, --server URL       where nodes reach the tree (default: the\n"
		"                         site's server.url; also --server-url)\n"
		"      --images DIR       build output with ROLE/ROLE.current\n"
		"                         (default: out)\n"
		"      --kickstart DIR    kickstart templates (default for an EL site:\n"
		"                         kickstart/ next to the profiles directory,\n"
		"                         if present); every role then needs a tarball\n"
		"                         Anaconda's liveimg accepts (EL builds\n"
		"                         publish ROLE-<id>.rootfs.tar.xz)\n"
		"      --network CIDR     provisioning network (default: the site's\n"
		"                         networks.provisioning.cidr)\n"
		"      --kernel-args ROLE+=ARGS\n"
		"                         add ARGS to the kernel arguments of ROLE\n"
		"                         (its resolved profile's)\n"
		"      --kernel-args ROLE=ARGS\n"
		"                         use ARGS instead of them (a warning names\n"
		"                         what that drops)\n"
		"      --api-upstream URL nginx forwards /api/ to this nodeforge serve\n"
		"      --ipxe-dir DIR     copy undionly.kpxe and ipxe.efi from DIR into\n"
		"                         tftp/ when present (default: /usr/lib/ipxe)\n"
		"      --key FILE         sign the cluster files (cluster/NAME.sig)\n"
		"                         with this Ed25519 key: the one the images\n"
		"                         were built with, whose public half each\n"
		"                         carries (default: the build's default,\n"
		"                         ~/.cache/nodeforge/keys/signing.key)\n"
		"      --strict           a boot file dnsmasq.conf names and the tree\n"
		"                         lacks (tftp/undionly.kpxe, tftp/ipxe.efi,\n"
		"                         grub/grubx64.efi), or cluster files without\n"
		"                         a key to sign them, is an error, not a\n"
		"                         warning\n"
		"\n"
		"Exit status: 0 ok, 1 failure, 2 usage, 3 invalid inventory.\n",
	.run = cmd_pxe,
};

/* The words of `from` that `to` lacks, space-separated, into buf */
static void dropped_words(const char *from, const char *to, char *buf,
			  size_t sz)
{
	const char *w = from;

	buf[0] = '\0';
	while (*w) {
		size_t wl = strcspn(w, " "), tl;
		const char *t = to;
		int kept = 0;

		for (; *t && !kept; t += tl + (t[tl] == ' ')) {
			tl = strcspn(t, " ");
			kept = tl == wl && !strncmp(t, w, wl);
		}
		if (wl && !kept && strlen(buf) + wl + 2 < sz)
			snprintf(buf + strlen(buf), sz - strlen(buf), "%s%.*s",
				 *buf ? " " : "", (int)wl, w);
		w += wl + (w[wl] == ' ');
	}
}

/* Each role named by --kernel-args is a role of the inventory: a
 * misspelled one would otherwise change nothing, silently */
static int check_arg_roles(const struct nf_inventory *inv, const json_t *opt)
{
	const char *role, *cand[256], *s;
	char known[2048] = "";
	size_t nc = 0;
	json_t *v;

	for (size_t i = 0; i < nf_inventory_count(inv); i++) {
		const char *r = nf_inventory_node(inv, i)->role;
		size_t k = 0;

		while (k < nc && strcmp(cand[k], r))
			k++;
		if (k == nc && nc < sizeof(cand) / sizeof(*cand)) {
			cand[nc++] = r;
			nf_cmd_known_add(known, sizeof(known), r);
		}
	}
	json_object_foreach((json_t *)opt, role, v) {
		size_t k = 0;

		while (k < nc && strcmp(cand[k], role))
			k++;
		if (k < nc)
			continue;
		s = nf_suggest(role, cand, nc);
		return nf_usage_error("pxe", "'--kernel-args %s': no node of the "
				      "inventory has role '%s'%s%s%s; roles: %s",
				      role, role, s ? " (did you mean '" : "",
				      s ? s : "", s ? "'?)" : "", known);
	}
	return 0;
}

/* Kernel arguments of every role of the inventory: the resolved profile's,
 * replaced by --kernel-args ROLE=ARGS (saying on stderr what that drops),
 * then --kernel-args ROLE+=ARGS appended.  *slurmd: some role runs it */
static int role_args(struct nf_global *g, const struct nf_inventory *inv,
		     const json_t *repl, const json_t *add, json_t *args,
		     int *slurmd)
{
	for (size_t i = 0; i < nf_inventory_count(inv); i++) {
		const struct nf_node *nd = nf_inventory_node(inv, i);
		const char *rep = json_string_value(json_object_get(repl, nd->role));
		const char *app = json_string_value(json_object_get(add, nd->role));
		struct nf_profile *p = NULL;
		struct nf_diags d;
		char *s = NULL, *all;
		int r;

		if (json_object_get(args, nd->role))
			continue;
		nf_diags_init(&d);
		r = nf_profile_resolve(g->ctx, nd->role, g->site, &p, &d);
		if (!r) {
			*slurmd |= nf_profile_runs(nf_profile_json(p), "slurmd");
			r = nf_profile_kernel_args(g->ctx, p, &s);
		}
		if (r && !rep) {
			if (d.n)
				nf_print_diags(g, &d);
			nf_diags_free(&d);
			nf_profile_free(p);
			return r;
		}
		nf_diags_free(&d);
		nf_profile_free(p);
		if (rep && s && !g->quiet) {
			char drop[1024];

			dropped_words(s, rep, drop, sizeof(drop));
			if (*drop)
				fprintf(stderr, "nodeforge pxe: warning: '--kernel-args "
					"%s=%s' replaces the kernel arguments of role "
					"'%s' and drops '%s'; '--kernel-args %s+=ARGS' "
					"adds to them instead\n", nd->role, rep,
					nd->role, drop, nd->role);
		}
		r = asprintf(&all, "%s%s%s", rep ? rep : s ? s : "",
			     app && (rep ? *rep : s && *s) ? " " : "",
			     app ? app : "");
		free(s);
		if (r < 0)
			return -ENOMEM;
		json_object_set_new(args, nd->role, json_string(all));
		free(all);
	}
	return 0;
}

static int site_is_el(struct nf_global *g)
{
	const char *d = g->site ? json_string_value(json_object_get(
					nf_site_json(g->site), "distro")) : NULL;

	return nf_distro_is_el(d);
}

/* The key that signs the cluster files: --key, else the build's default
 * key when it exists; without one the files go out unsigned and every
 * node refuses them (--strict: an error) */
static int pick_sign_key(struct nf_global *g, struct nf_pxe_opts *po,
			 char *defkey, size_t sz)
{
	const char *cache = nf_cmd_default_cache();
	struct stat sb;

	if (po->sign_key)
		return 0;
	if (cache) {
		snprintf(defkey, sz, "%s/keys/signing.key", cache);
		if (stat(defkey, &sb) == 0) {
			po->sign_key = defkey;
			return 0;
		}
	}
	if (po->strict) {
		fprintf(stderr, "nodeforge pxe: no key to sign the cluster files "
			"with ('--key FILE': the key the images were built "
			"with)\n");
		return NF_EXIT_FAILURE;
	}
	if (!g->quiet)
		fprintf(stderr, "nodeforge pxe: warning: the cluster files are "
			"not signed (no '--key FILE', and no '%s'): every node "
			"will refuse them; give the key the images were built "
			"with\n", cache ? defkey : "~/.cache/nodeforge/keys/signing.key");
	return 0;
}

static int cmd_pxe(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "inventory", required_argument, NULL, 'i' },
		{ "out", required_argument, NULL, 'o' },
		{ "output", required_argument, NULL, 'o' },
		{ "tree", required_argument, NULL, 'o' },
		{ "server-url", required_argument, NULL, 'u' },
		{ "server", required_argument, NULL, 'u' },
		{ "images", required_argument, NULL, 'I' },
		{ "kickstart", required_argument, NULL, 'K' },
		{ "network", required_argument, NULL, 'N' },
		{ "kernel-args", required_argument, NULL, 'A' },
		{ "api-upstream", required_argument, NULL, 'U' },
		{ "ipxe-dir", required_argument, NULL, 'X' },
		{ "strict", no_argument, NULL, 'S' },
		{ "key", required_argument, NULL, 'k' },
		{ 0 }
	};
	struct nf_pxe_opts po = { .images_dir = "out", .ipxe_dir = "/usr/lib/ipxe" };
	const char *images = NULL;  /* --images, when given */
	struct nf_pxe_stats st;
	const char *inv_path = "racks.yaml";
	const struct nf_inventory *inv = NULL;
	json_t *args = json_object(), *repl = json_object(), *add = json_object();
	char ksdef[PATH_MAX], defkey[PATH_MAX], *abs = NULL, *cconf = NULL;
	char *chosts = NULL;
	struct nf_emit *e;
	struct stat sb;
	double t0;
	int o, r, slurmd = 0;

	if (!args || !repl || !add) {
		r = NF_EXIT_FAILURE;
		goto done;
	}
	while ((o = nf_getopt_args(&nf_cmd_pxe, argc, argv, "i:o:u:", opts,
				   NULL)) != -1) {
		switch (o) {
		case -2:
			r = 0;
			goto done;
		case -3:
			r = NF_EXIT_USAGE;
			goto done;
		case 'i': inv_path = optarg; break;
		case 'o': po.out_dir = optarg; break;
		case 'u': po.server_url = optarg; break;
		case 'I': po.images_dir = images = optarg; break;
		case 'K': po.kickstart_dir = optarg; break;
		case 'N': po.network = optarg; break;
		case 'U': po.api_upstream = optarg; break;
		case 'X': po.ipxe_dir = optarg; break;
		case 'S': po.strict = 1; break;
		case 'k': po.sign_key = optarg; break;
		case 'A': {
			char *eq = strchr(optarg, '=');
			int plus = eq && eq > optarg && eq[-1] == '+';
			const char *had;

			if (!eq || eq - plus == optarg) {
				r = nf_usage_error("pxe", "'--kernel-args %s': "
						   "expected ROLE+=ARGS or ROLE=ARGS",
						   optarg);
				goto done;
			}
			eq[-plus] = '\0';
			/* ROLE+=ARGS given twice appends both */
			had = plus ? json_string_value(json_object_get(add, optarg))
				   : NULL;
			if (had) {
				char *both;

				if (asprintf(&both, "%s %s", had, eq + 1) < 0) {
					r = NF_EXIT_FAILURE;
					goto done;
				}
				json_object_set_new(add, optarg, json_string(both));
				free(both);
			} else {
				json_object_set_new(plus ? add : repl, optarg,
						    json_string(eq + 1));
			}
			break;
		}
		}
	}
	if (!po.out_dir) {
		r = nf_usage_error("pxe", "missing '--out DIR'");
		goto done;
	}
	/* the directories it reads, before anything is written */
	if ((images && (r = nf_cmd_path_arg("pxe", "--images", images, 0))) ||
	    (po.sign_key &&
	     (r = nf_cmd_path_arg("pxe", "--key", po.sign_key, NF_PATH_FILE))) ||
	    (po.kickstart_dir &&
	     (r = nf_cmd_path_arg("pxe", "--kickstart", po.kickstart_dir, 0))))
		goto done;
	if ((r = nf_cmd_setup(g, NULL)))
		goto done;
	if (!po.server_url && g->site) {
		const json_t *srv = json_object_get(nf_site_json(g->site), "server");
		char what[512];

		po.server_url = json_string_value(json_object_get(srv, "url"));
		snprintf(what, sizeof(what), "the boot server URL written into every "
			 "boot script (%s)", po.server_url ? po.server_url : "none");
		if (po.server_url)
			nf_cmd_site_note(g, "pxe", what);
	}
	if (!po.server_url) {
		r = nf_usage_error("pxe", "missing '--server URL' (no "
				   "server.url in the site)");
		goto done;
	}
	/* Anaconda installs EL only: no kickstarts by default elsewhere */
	if (!po.kickstart_dir && site_is_el(g)) {
		snprintf(ksdef, sizeof(ksdef), "%s/../kickstart",
			 nf_ctx_profiles_dir(g->ctx));
		if (stat(ksdef, &sb) == 0 && S_ISDIR(sb.st_mode))
			po.kickstart_dir = ksdef;
	}
	t0 = nf_now_s();
	if ((r = nf_cmd_setup(g, inv_path)))
		goto done;
	inv = g->inv;
	if ((r = check_arg_roles(inv, repl)) || (r = check_arg_roles(inv, add)))
		goto done;
	if ((r = role_args(g, inv, repl, add, args, &slurmd))) {
		r = nf_cmd_fail(g, "pxe", r);
		goto done;
	}
	if (mkdir(po.out_dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "nodeforge pxe: cannot create '%s': %s\n",
			po.out_dir, strerror(errno));
		r = NF_EXIT_FAILURE;
		goto done;
	}
	/* the cluster part of every node's slurm.conf, and its hosts */
	r = nf_cluster_render(g->ctx, inv_path, g->site, &cconf, &chosts);
	/* no node runs slurmctld: a tree without cluster files, which a
	 * node booted alone (the CI VM) can use; slurmd nodes fail
	 * slurm.cluster, so say it */
	if (r == -ENOENT) {
		if (slurmd && !g->quiet)
			fprintf(stderr, "nodeforge pxe: warning: %s; the tree has "
				"no cluster files (the nodes' slurm.conf and "
				"hosts), and every node that runs slurmd will "
				"fail slurm.cluster\n", nf_error_text(g->ctx, r));
		nf_clear_error(g->ctx);
		r = 0;
	} else if (r) {
		fprintf(stderr, "nodeforge pxe: %s\n", nf_error_text(g->ctx, r));
		r = r == NF_E_INVALID ? NF_EXIT_FINDINGS : NF_EXIT_FAILURE;
		goto done;
	}
	po.cluster_conf = cconf;
	po.cluster_hosts = chosts;
	if (cconf && (r = pick_sign_key(g, &po, defkey, sizeof(defkey))))
		goto done;
	abs = realpath(po.out_dir, NULL);
	po.out_abs = abs;
	po.inv = inv;
	po.site = g->site;
	po.role_args = args;
	r = nf_pxe_render(g->ctx, &po, &st);
	if (r) {
		r = nf_cmd_fail(g, "pxe", r);
		goto done;
	}
	/* a boot file the firmware will ask for and not find (with --json:
	 * the "missing" list) */
	for (size_t i = 0; !g->json && !g->quiet && i < st.nmissing; i++)
		fprintf(stderr, "nodeforge pxe: warning: dnsmasq.conf names %s for "
			"%s, but '%s' has none: %s\n", st.missing[i]->path,
			st.missing[i]->client, po.out_dir, st.missing[i]->remedy);
	if ((r = nf_emit_new(&e, stdout, g->json))) {
		r = NF_EXIT_FAILURE;
		goto done;
	}
	nf_emit_arr_open(e, "missing");
	for (size_t i = 0; i < st.nmissing; i++)
		nf_emit_str(e, NULL, NULL, st.missing[i]->path);
	nf_emit_arr_close(e);
	if (!g->quiet || g->json) {
		nf_emit_str(e, "tree", "%s: ", po.out_dir);
		nf_emit_int(e, "nodes", "%lld nodes, ",
			    (long long)nf_inventory_count(inv));
		nf_emit_int(e, "files", "%lld files (", (long long)st.files);
		nf_emit_int(e, "written", "%lld written, ", (long long)st.written);
		nf_emit_int(e, "unchanged", "%lld unchanged, ",
			    (long long)st.unchanged);
		nf_emit_int(e, "removed", "%lld removed), ", (long long)st.removed);
		nf_emit_int(e, "images", "%lld image files placed", (long long)st.images);
		nf_emit_real(e, "seconds", " in %.3f s\n", nf_now_s() - t0);
	}
	r = nf_emit_end(e) ? NF_EXIT_FAILURE : 0;
	nf_emit_free(e);
done:
	free(abs);
	free(cconf);
	free(chosts);
	json_decref(args);
	json_decref(repl);
	json_decref(add);
	return r;
}
