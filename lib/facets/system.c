/* SPDX-License-Identifier: MIT */
/* system: what the image is made of: packages, repos, pinned artifacts,
 * services and overlays. */
#include "internal.h"

static const struct nf_field packages[] = {
	{ "install", NF_T_STRLIST },
	/* there while the artifacts build (compilers, headers), then purged */
	{ "build", NF_T_STRLIST },
	/* purged after the artifacts stage (what the bootstrap brings and the
	 * image does not need) */
	{ "remove", NF_T_STRLIST },
	{ 0 }
};

static const struct nf_field repo_fields[] = {
	{ "name", NF_T_STR, .required = true },
	{ "url", NF_T_STR, .required = true },
	{ "suite", NF_T_STR },
	{ "components", NF_T_STRLIST },
	{ "key", NF_T_STR },
	{ "distro", NF_T_STR },
	{ 0 }
};

/* a patch to a source artifact's tree, pinned like the artifact; a
 * relative url is a file beside the profiles (profiles/patches/...) */
static const struct nf_field patch_fields[] = {
	{ "name", NF_T_STR, .required = true },
	{ "url", NF_T_STR, .required = true },
	{ "sha256", NF_T_STR, .required = true },
	{ 0 }
};

static const struct nf_field artifact_fields[] = {
	{ "name", NF_T_STR, .required = true },
	{ "kind", NF_T_STR, .required = true,
	  .choices = (const char *const[]){ "deb", "rpm", "tarball", "source", NULL } },
	/* where it comes from: downloaded (url), or a file one of the
	 * image's packages brings (from: a source tarball such as
	 * /usr/src/nvidia-open-kernel.tar.xz); either way pinned by sha256 */
	{ "url", NF_T_STR },
	{ "from", NF_T_PATH },
	/* the pin; an artifact the site supplies has its pin in the site
	 * file instead (artifacts: name, sha256) */
	{ "sha256", NF_T_STR },
	/* site: a file this project cannot download for the site (NVIDIA's
	 * fabric manager is only in NVIDIA's repository): the profile names
	 * the package and version, the site file pins the bytes */
	{ "supplier", NF_T_STR,
	  .choices = (const char *const[]){ "site", NULL } },
	/* kind deb: the package the file must hold (with version: its
	 * version), checked before it is installed */
	{ "package", NF_T_STR },
	/* a boolean of the profile (gpu.nvswitch): the artifact is needed
	 * only where it is true */
	{ "when", NF_T_STR },
	{ "patches", NF_T_OBJLIST, patch_fields },
	{ "version", NF_T_STR },
	{ "dest", NF_T_PATH },
	{ "build", NF_T_STR },
	{ "distro", NF_T_STR },
	{ "optional", NF_T_BOOL },
	{ 0 }
};

static const struct nf_field services[] = {
	{ "enable", NF_T_STRLIST },
	{ "disable", NF_T_STRLIST },
	{ 0 }
};

static const struct nf_field network[] = {
	{ "dhcp", NF_T_BOOL },
	{ 0 }
};

static const struct nf_field fields[] = {
	{ "packages", NF_T_OBJ, packages },
	{ "network", NF_T_OBJ, network },
	{ "repos", NF_T_OBJLIST, repo_fields },
	{ "artifacts", NF_T_OBJLIST, artifact_fields },
	/* Debian archive components of the image's sources; default [main] */
	{ "components", NF_T_STRLIST },
	{ "services", NF_T_OBJ, services },
	{ "overlays", NF_T_STRLIST },
	{ 0 }
};

static void lint_sha(struct nf_facet_lint *l, const char *path, const char *sha)
{
	if (sha && !nf_is_sha256_hex(sha))
		nf_lint_at(l, path, NF_SEV_ERROR,
			   "sha256 '%s' is not 64 lowercase hex digits", sha);
}

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const json_t *pk = json_object_get(sec, "packages");
	static const char *const purged[] = { "build", "remove" };
	size_t i, j;
	json_t *a, *b;

	/* what the image keeps cannot also be purged after the artifacts */
	for (size_t k = 0; k < NF_ARRAY_SIZE(purged); k++)
		json_array_foreach(json_object_get(pk, purged[k]), i, a)
			json_array_foreach(json_object_get(pk, "install"), j, b) {
				char path[96];

				if (!json_equal(a, b))
					continue;
				snprintf(path, sizeof(path), "system.packages.%s[%zu]",
					 purged[k], i);
				nf_lint_at(l, path, NF_SEV_ERROR, "package '%s' is "
					   "also in system.packages.install: the "
					   "image cannot keep it and purge it",
					   json_string_value(a));
			}

	json_array_foreach(json_object_get(sec, "components"), i, a) {
		const char *c = json_string_value(a);
		char path[96];

		snprintf(path, sizeof(path), "system.components[%zu]", i);
		if (c && (!*c || strspn(c, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(c)))
			nf_lint_at(l, path, NF_SEV_ERROR, "component '%s' is not an "
				   "archive component name (main, contrib, "
				   "non-free, non-free-firmware)", c);
	}

	json_array_foreach(json_object_get(sec, "artifacts"), i, a) {
		const char *kind = json_string_value(json_object_get(a, "kind"));
		int url = json_object_get(a, "url") != NULL;
		int from = json_object_get(a, "from") != NULL;
		char path[96];

		int site = json_object_get(a, "supplier") != NULL;
		const char *when = json_string_value(json_object_get(a, "when"));
		const json_t *sha = json_object_get(a, "sha256");

		snprintf(path, sizeof(path), "system.artifacts[%zu].sha256", i);
		lint_sha(l, path, json_string_value(sha));
		snprintf(path, sizeof(path), "system.artifacts[%zu]", i);
		if (!site && !sha)
			nf_lint_at(l, path, NF_SEV_ERROR, "artifact '%s' has no "
				   "sha256: pin it, or say 'supplier: site' "
				   "when the site file pins it",
				   json_string_value(json_object_get(a, "name")));
		if (site && sha)
			nf_lint_at(l, path, NF_SEV_ERROR, "artifact '%s' is "
				   "supplied by the site: its sha256 is the site "
				   "file's (artifacts:), not the profile's",
				   json_string_value(json_object_get(a, "name")));
		if (site && (from || !kind || strcmp(kind, "deb") ||
			     !json_object_get(a, "package") ||
			     !json_object_get(a, "version")))
			nf_lint_at(l, path, NF_SEV_ERROR, "artifact '%s': a site-"
				   "supplied artifact is a deb with 'url' (its "
				   "file name), 'package' and 'version', which "
				   "the build checks in the site's file",
				   json_string_value(json_object_get(a, "name")));
		if (when) {
			const json_t *v = nf_profile_get(nf_profile_json(l->profile), when);

			if (v && !json_is_boolean(v))
				nf_lint_at(l, path, NF_SEV_ERROR, "artifact '%s': "
					   "'when: %s' is not a true/false "
					   "setting of the profile",
					   json_string_value(json_object_get(a, "name")),
					   when);
		}
		if (url == from)
			nf_lint_at(l, path, NF_SEV_ERROR, "artifact '%s' needs "
				   "either 'url' (downloaded) or 'from' (a file "
				   "the image's packages bring), %s",
				   json_string_value(json_object_get(a, "name")),
				   url ? "not both" : "and has neither");
		if (from && kind && strcmp(kind, "source") && strcmp(kind, "tarball"))
			nf_lint_at(l, path, NF_SEV_ERROR, "'from' is for source "
				   "and tarball artifacts, not kind '%s'", kind);
		if (json_object_get(a, "patches") && kind && strcmp(kind, "source"))
			nf_lint_at(l, path, NF_SEV_ERROR, "'patches' are applied "
				   "to a source artifact's tree, not kind '%s'", kind);
		json_array_foreach(json_object_get(a, "patches"), j, b) {
			snprintf(path, sizeof(path), "system.artifacts[%zu]."
				 "patches[%zu].sha256", i, j);
			lint_sha(l, path, json_string_value(json_object_get(b, "sha256")));
		}
	}
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* A node booted from the network has no interface configuration of its
 * own: systemd-networkd brings up every Ethernet link with DHCP, and
 * network-online.target (which the verifier waits for) is reached when any
 * one link is routable, not when every cabled-or-not port is.  EL images
 * keep NetworkManager, which configures wired links with DHCP by default. */
static int apply_network(struct nf_apply *a, const json_t *net)
{
	struct nf_buf b = { 0 };
	int r;

	if (!json_is_true(json_object_get(net, "dhcp")) || a->el)
		return 0;
	nf_apply_header(&b, "#", "system");
	nf_buf_printf(&b,
		"# every Ethernet link of a network-booted node, by DHCP\n"
		"[Match]\n"
		"Type=ether\n"
		"\n"
		"[Network]\n"
		"DHCP=yes\n"
		"\n"
		"[DHCPv4]\n"
		"UseHostname=yes\n"
		"UseDomains=yes\n");
	if ((r = nf_apply_write_buf(a, "/etc/systemd/network/50-nodeforge-dhcp.network",
				    &b, 0644, 0, 0)))
		return r;
	nf_apply_header(&b, "#", "system");
	nf_buf_printf(&b,
		"# online as soon as one link is routable: a node has ports\n"
		"# that are not cabled\n"
		"[Service]\n"
		"ExecStart=\n"
		"ExecStart=/usr/lib/systemd/systemd-networkd-wait-online --any --timeout=120\n");
	if ((r = nf_apply_write_buf(a, "/etc/systemd/system/systemd-networkd-wait-online."
				    "service.d/nodeforge.conf", &b, 0644, 0, 0)))
		return r;
	if ((r = nf_apply_enable(a, "systemd-networkd")))
		return r;
	return nf_apply_symlink(a, "/etc/systemd/system/network-online.target.wants/"
				"systemd-networkd-wait-online.service",
				"/lib/systemd/system/systemd-networkd-wait-online.service");
}

/* Services: enabled and disabled as the profile says.  Packages, repos,
 * artifacts and overlays are stages of the build itself (lib/build.c). */
static int apply(struct nf_apply *a, const json_t *sec)
{
	const json_t *svc = json_object_get(sec, "services");
	size_t i;
	json_t *v;
	int r;

	if ((r = apply_network(a, json_object_get(sec, "network"))))
		return r;

	json_array_foreach(json_object_get(svc, "enable"), i, v)
		if ((r = nf_apply_enable(a, json_string_value(v))))
			return r;
	json_array_foreach(json_object_get(svc, "disable"), i, v) {
		const char *u = json_string_value(v);
		char link[256];

		if (!u || strchr(u, '/'))
			return nf_fail(a->ctx, NF_E_INVALID,
				       "unit name '%s' is not valid", u ? u : "");
		snprintf(link, sizeof(link), "/etc/systemd/system/%s%s", u,
			 strchr(u, '.') ? "" : ".service");
		/* masked: a package's preset cannot bring it back */
		if ((r = nf_apply_symlink(a, link, "/dev/null")))
			return r;
	}
	return 0;
}

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* Services the profile enables that must run before slurmd starts (slurmd
 * itself waits for the verdict) */
static int check_services(struct nf_vcheck *c, const json_t *sec)
{
	char bad[512] = "", state[64];
	size_t i;
	json_t *s;
	int n = 0, total = 0;

	nf_v_expect(c, "every enabled service active");
	json_array_foreach(json_object_get(json_object_get(sec, "services"), "enable"), i, s) {
		const char *name = json_string_value(s);
		int r;

		if (!name || !strncmp(name, "slurm", 5) || !strcmp(name, "nvidia-fabricmanager") ||
		    !strncmp(name, "chrony", 6))
			continue; /* slurm* are gated; the others have their own checks */
		total++;
		r = nf_v_service_active(c, name, state, sizeof(state));
		if (r == NF_E_TIMEOUT)
			return NF_V_HUNG;
		if (r != 1 && n++ < 6)
			snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad), "%s%s %s",
				 *bad ? ", " : "", name, r < 0 ? "unknown" : state);
	}
	if (!n) {
		nf_v_seen(c, "%d active", total);
		return NF_V_PASS;
	}
	nf_v_seen(c, "%s", bad);
	nf_v_remedy(c, "systemctl --failed; systemctl start UNIT; journalctl -u UNIT -n 30");
	return NF_V_FAIL;
}

/* The image's identity: the resolved profile a build writes into every
 * image.  Without it the machine is not a nodeforge image at all, and
 * every other failure is this one's consequence (nf_verify_run folds
 * them under it); with another role's, it is another role's image */
static int check_image(struct nf_vcheck *c, const json_t *sec)
{
	const char *want = nf_v_role(c), *got;
	char *buf = NULL;
	json_t *doc;
	size_t len = 0;
	int r;

	(void)sec;
	nf_v_expect(c, "/etc/nodeforge/profile.json of role %s", want);
	r = nf_v_read(c, NF_VROOT, "/etc/nodeforge/profile.json", 4u << 20, &buf, &len);
	if (r == -ENOENT) {
		nf_v_seen(c, "this is not a nodeforge %s image: it has no "
			  "/etc/nodeforge/profile.json", want);
		nf_v_remedy(c, "verify a node booted from a %s image; on a build "
			    "host, nodeforge verify --root ROOT checks an image "
			    "tree", want);
		return NF_V_FAIL;
	}
	if (r) {
		nf_v_seen(c, "cannot read /etc/nodeforge/profile.json: %s",
			  r < 0 ? strerror(-r) : nf_strerror(r));
		return NF_V_FAIL;
	}
	doc = json_loadb(buf, len, 0, NULL);
	free(buf);
	got = json_string_value(json_object_get(doc, "role"));
	if (!got) {
		nf_v_seen(c, "/etc/nodeforge/profile.json names no role");
		json_decref(doc);
		return NF_V_FAIL;
	}
	if (strcmp(got, want)) {
		nf_v_seen(c, "this is a nodeforge %s image, not %s", got, want);
		nf_v_remedy(c, "nodeforge verify (its own role), or reinstall the "
			    "node from a %s image", want);
		json_decref(doc);
		return NF_V_FAIL;
	}
	nf_v_seen(c, "a nodeforge %s image", got);
	json_decref(doc);
	return NF_V_PASS;
}

/* Every unit check asks systemctl, which answers only where systemd is
 * PID 1: elsewhere (a container, a chroot, a CI runner) their failures
 * are this one's consequences */
static int check_init(struct nf_vcheck *c, const json_t *sec)
{
	char *buf = NULL;
	int r;

	(void)sec;
	nf_v_expect(c, "systemd is PID 1");
	r = nf_v_read(c, NF_VSYS, "/proc/1/comm", 256, &buf, NULL);
	if (r == -ENOENT)
		return nf_v_skip(c, "no /proc/1/comm to read");
	if (r) {
		nf_v_seen(c, "cannot read /proc/1/comm: %s", r < 0 ? strerror(-r) : nf_strerror(r));
		return NF_V_FAIL;
	}
	buf[strcspn(buf, "\n")] = '\0';
	if (!strcmp(buf, "systemd")) {
		nf_v_seen(c, "systemd");
		free(buf);
		return NF_V_PASS;
	}
	nf_v_seen(c, "PID 1 is '%s', not systemd: no unit can be asked", buf);
	free(buf);
	nf_v_remedy(c, "verify on a node booted from the image; on a build host, "
		    "nodeforge verify --root ROOT checks the image's files only");
	return NF_V_FAIL;
}

static const struct nf_check_def defs[] = {
	{ "system.image", "the machine is a nodeforge image of the role", NULL,
	  NF_CHECK_STATIC | NF_CHECK_BASE, 0, check_image },
	{ "system.init", "systemd is PID 1", NULL, NF_CHECK_PROBE | NF_CHECK_BASE, 0,
	  check_init },
	{ "system.services", "the profile's services are active", NULL, NF_CHECK_PROBE, 3000,
	  check_services, "system.init" },
};

static const struct nf_checkset checks = NF_CHECKSET(defs);

/* ---- end of check ---- */

/* The services the profile enables have started (or failed) before
 * their checks run: a unit still 'activating' is no verdict.  Slurm's
 * daemons are the gate's to hold back, not to wait for */
static size_t gate_units(const struct nf_apply *a, const json_t *sec,
			 struct nf_gate_unit *out, size_t max)
{
	size_t i, n = 0;
	json_t *v;

	(void)a;
	json_array_foreach(json_object_get(json_object_get(sec, "services"),
					   "enable"), i, v) {
		const char *u = json_string_value(v);

		if (n == max)
			break;
		if (!u || !strncmp(u, "slurm", 5) || strchr(u, '/') ||
		    strpbrk(u, " \t\n"))
			continue;
		out[n++] = (struct nf_gate_unit){ u, NF_GATE_AFTER };
	}
	return n;
}

const struct nf_facet nf_facet_system = {
	.name = "system",
	.summary = "packages, repos, artifacts, services, overlays",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = &checks,
	.gate_units = gate_units,
};
