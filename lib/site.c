/* SPDX-License-Identifier: MIT */
/*
 * The site file: what differs per cluster.  Secrets are named by where they
 * come from (a path or a command), never by value; only their fingerprints
 * may travel into images.
 */
#include "internal.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

struct nf_site {
	char *path;
	json_t *json;
	json_t *locs;
	json_t *pub;
};

/* a profile's slurm.partitions, and the site's that replace them */
const struct nf_field nf_partition_fields[] = {
	{ "name", NF_T_STR, .required = true },
	/* a hostlist, or the nodes of `roles` in the inventory; neither:
	 * every node that runs slurmd */
	{ "nodes", NF_T_STR },
	{ "roles", NF_T_STRLIST },
	{ "options", NF_T_MAP },
	{ 0 }
};

static const struct nf_field host_fields[] = {
	{ "name", NF_T_STR, .required = true, .chars = NF_CHARS_NAME },
	{ "address", NF_T_STR, .required = true, .chars = NF_CHARS_HOST },
	{ 0 }
};

static const struct nf_field net_fields[] = {
	{ "cidr", NF_T_STR, .required = true, .chars = NF_CHARS_TEXT },
	{ "gateway", NF_T_STR, .chars = NF_CHARS_HOST },
	{ "dns", NF_T_STRLIST, .chars = NF_CHARS_HOST },
	{ "domain", NF_T_STR, .chars = NF_CHARS_NAME },
	{ "interface", NF_T_STR, .chars = NF_CHARS_NAME },
	{ 0 }
};

static const struct nf_field networks[] = {
	{ "provisioning", NF_T_OBJ, net_fields, .required = true },
	{ "bmc", NF_T_OBJ, net_fields },
	{ "fabric", NF_T_OBJ, net_fields },
	{ 0 }
};

static const struct nf_field secret_fields[] = {
	{ "path", NF_T_PATH },
	{ "command", NF_T_STR, .chars = NF_CHARS_TEXT },
	{ "fingerprint", NF_T_STR, .chars = NF_CHARS_TEXT },
	{ "previous_fingerprint", NF_T_STR, .chars = NF_CHARS_TEXT },
	{ "owner", NF_T_STR, .chars = NF_CHARS_NAME },
	{ 0 }
};

static const struct nf_field secrets[] = {
	{ "munge_key", NF_T_OBJ, secret_fields },
	{ "slurmdbd_password", NF_T_OBJ, secret_fields },
	{ "signing_key", NF_T_OBJ, secret_fields },
	/* the private key (PEM) kernel modules the images build are signed
	 * with (module_signing) */
	{ "module_signing_key", NF_T_OBJ, secret_fields },
	/* the BMC credentials file: user and password per rack and per node
	 * (lib/power.c) */
	{ "bmc", NF_T_OBJ, secret_fields },
	{ 0 }
};

static const char *const bmc_protocols[] = { "ipmi", "redfish", NULL };

/* How `nodeforge power` and `bootdev` reach the BMCs by default; the
 * inventory may say otherwise per node */
static const struct nf_field bmc_fields[] = {
	{ "protocol", NF_T_STR, .choices = bmc_protocols },
	/* the CA that signed the Redfish services' certificates */
	{ "ca", NF_T_PATH },
	{ "tls_verify", NF_T_BOOL },
	{ "timeout", NF_T_INT },
	/* IPMI's cipher suite (ipmitool -C): 17 or 3; absent: ipmitool
	 * asks the BMC, which some BMCs cannot answer (a wait per node) */
	{ "cipher_suite", NF_T_INT },
	{ 0 }
};

/* How the kernel modules the images build (kernel.built_modules) are
 * signed: with the site's key (sign: true, its certificate here, the key
 * in secrets.module_signing_key) or not at all (sign: false) */
static const struct nf_field module_signing_fields[] = {
	{ "sign", NF_T_BOOL, .required = true },
	{ "cert", NF_T_PATH },
	{ 0 }
};

static const struct nf_field server_fields[] = {
	{ "url", NF_T_STR, .required = true, .chars = NF_CHARS_URL },
	{ "listen", NF_T_STR, .chars = NF_CHARS_HOST },
	{ "state_dir", NF_T_PATH },
	{ 0 }
};

/* The site's copy of an artifact a profile says the site supplies
 * (supplier: site), such as NVIDIA's fabric manager, which only NVIDIA's
 * own repository has: the site pins its bytes; the profile pins the
 * package and version */
static const struct nf_field artifact_fields[] = {
	{ "name", NF_T_STR, .required = true, .chars = NF_CHARS_NAME },
	{ "sha256", NF_T_STR, .required = true, .chars = NF_CHARS_TEXT },
	/* where the file is when it is not in the artifact mirror under the
	 * profile's file name */
	{ "url", NF_T_STR, .chars = NF_CHARS_URL },
	{ 0 }
};

/* StateSaveLocation on storage every controller mounts */
static const struct nf_field state_save_fields[] = {
	{ "nfs", NF_T_STR, .required = true, .chars = NF_CHARS_TEXT },
	{ "options", NF_T_STR, .chars = NF_CHARS_TEXT },
	{ 0 }
};

static const struct nf_field slurm_fields[] = {
	{ "partitions", NF_T_OBJLIST, nf_partition_fields },
	{ "state_save", NF_T_OBJ, state_save_fields },
	{ 0 }
};

static const struct nf_field site_fields[] = {
	{ "cluster", NF_T_STR, .required = true, .chars = NF_CHARS_NAME },
	{ "distro", NF_T_STR, .required = true,
	  .choices = nf_site_distros },
	/* optional: the controllers are the inventory's; when the site names
	 * them, they must agree with it (lib/cluster.c) */
	{ "controllers", NF_T_OBJLIST, host_fields },
	{ "accounting", NF_T_OBJ, host_fields },
	{ "ntp", NF_T_STRLIST, .chars = NF_CHARS_HOST },
	{ "networks", NF_T_OBJ, networks, .required = true },
	{ "mirrors", NF_T_MAP, .chars = NF_CHARS_URL },
	{ "artifact_mirror", NF_T_STR, .chars = NF_CHARS_URL },
	{ "artifacts", NF_T_OBJLIST, artifact_fields },
	{ "module_signing", NF_T_OBJ, module_signing_fields },
	{ "server", NF_T_OBJ, server_fields },
	{ "secrets", NF_T_OBJ, secrets },
	{ "bmc", NF_T_OBJ, bmc_fields },
	{ "profiles", NF_T_STR, .chars = NF_CHARS_TEXT },
	{ "slurm", NF_T_OBJ, slurm_fields },
	{ 0 }
};

static void site_err(struct nf_diags *d, const json_t *locs, const char *path,
		     const char *fmt, const char *a)
{
	const char *file;
	unsigned line, col;

	nf_locs_get(locs, path, &file, &line, &col);
	nf_diag_add(d, file ? file : "", line, col, NF_SEV_ERROR, fmt, a);
}

int nf_parse_cidr(const char *s, uint32_t *net, unsigned *prefix)
{
	char buf[64], *slash;
	struct in_addr a;
	char *end;
	unsigned long p;

	if (!s || strlen(s) >= sizeof(buf))
		return NF_E_PARSE;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (!slash)
		return NF_E_PARSE;
	*slash = '\0';
	if (inet_pton(AF_INET, buf, &a) != 1)
		return NF_E_PARSE;
	if (!slash[1])
		return NF_E_PARSE;
	p = strtoul(slash + 1, &end, 10);
	if (*end || p > 32)
		return NF_E_PARSE;
	*net = ntohl(a.s_addr);
	*prefix = (unsigned)p;
	return 0;
}

static int check_ip(struct nf_diags *d, const json_t *locs, const char *path,
		    const char *ip)
{
	struct in_addr a;

	if (!ip || inet_pton(AF_INET, ip, &a) != 1) {
		site_err(d, locs, path, "'%s' is not an IPv4 address", ip ? ip : "");
		return 1;
	}
	return 0;
}

static int validate(const json_t *j, const json_t *locs, struct nf_diags *d)
{
	const json_t *nets = json_object_get(j, "networks");
	const json_t *sec = json_object_get(j, "secrets");
	const char *k;
	json_t *v;
	size_t i;
	int bad = 0;

	json_object_foreach((json_t *)nets, k, v) {
		char path[128];
		uint32_t net;
		unsigned pfx;
		const char *cidr = json_string_value(json_object_get(v, "cidr"));

		snprintf(path, sizeof(path), "networks.%s.cidr", k);
		if (nf_parse_cidr(cidr, &net, &pfx)) {
			site_err(d, locs, path,
				 "'%s' is not a network such as 10.0.0.0/16", cidr);
			bad = 1;
		} else if (pfx < 32 && (net & (0xffffffffu >> pfx))) {
			site_err(d, locs, path,
				 "'%s' has host bits set after the prefix", cidr);
			bad = 1;
		}
		if (json_object_get(v, "gateway")) {
			snprintf(path, sizeof(path), "networks.%s.gateway", k);
			bad |= check_ip(d, locs, path,
					json_string_value(json_object_get(v, "gateway")));
		}
	}
	json_array_foreach(json_object_get(j, "controllers"), i, v) {
		char path[64];

		snprintf(path, sizeof(path), "controllers[%zu].address", i);
		bad |= check_ip(d, locs, path,
				json_string_value(json_object_get(v, "address")));
	}
	if (json_object_get(j, "accounting"))
		bad |= check_ip(d, locs, "accounting.address",
				json_string_value(json_object_get(
					json_object_get(j, "accounting"), "address")));
	json_array_foreach(json_object_get(j, "artifacts"), i, v) {
		const char *sha = json_string_value(json_object_get(v, "sha256"));
		const char *name = json_string_value(json_object_get(v, "name"));
		char path[64];
		size_t k2;
		json_t *w;

		if (sha && !nf_is_sha256_hex(sha)) {
			snprintf(path, sizeof(path), "artifacts[%zu].sha256", i);
			site_err(d, locs, path, "sha256 '%s' is not 64 lowercase "
				 "hex digits (sha256sum FILE)", sha);
			bad = 1;
		}
		json_array_foreach(json_object_get(j, "artifacts"), k2, w) {
			if (k2 >= i)
				break;
			if (name && json_equal(json_object_get(w, "name"),
					       json_object_get(v, "name"))) {
				snprintf(path, sizeof(path), "artifacts[%zu].name", i);
				site_err(d, locs, path, "artifact '%s' is pinned "
					 "twice", name);
				bad = 1;
				break;
			}
		}
	}
	/* a node checks the munge key enrollment delivers against the
	 * fingerprint its image carries; without one it has no way to tell
	 * the cluster's boot server from any other that answers */
	v = json_object_get(sec, "munge_key");
	if (v && !json_object_get(v, "fingerprint")) {
		const char *file;
		unsigned line, col;

		nf_locs_get(locs, "secrets.munge_key", &file, &line, &col);
		nf_diag_add(d, file ? file : "", line, col, NF_SEV_WARNING,
			    "secrets.munge_key has no fingerprint: images built "
			    "from this site take a munge key (and the slurmdbd "
			    "password) from whichever server answers their "
			    "enrollment; add the one 'nodeforge keys munge' "
			    "printed as secrets.munge_key.fingerprint%s", "");
	}
	json_object_foreach((json_t *)sec, k, v) {
		const char *fp = json_string_value(json_object_get(v, "fingerprint"));
		char path[128];

		snprintf(path, sizeof(path), "secrets.%s", k);
		if (json_object_get(v, "path") && json_object_get(v, "command")) {
			site_err(d, locs, path, "secret '%s' names both a path and a command", k);
			bad = 1;
		}
		if (fp) {
			const char *h = !strncmp(fp, "sha256:", 7) ? fp + 7 : fp;

			if (!nf_is_sha256_hex(h)) {
				snprintf(path, sizeof(path), "secrets.%s.fingerprint", k);
				site_err(d, locs, path,
					 "fingerprint '%s' is not sha256:<64 hex digits>", fp);
				bad = 1;
			}
		}
	}
	return bad;
}

/* What a profile may carry of the site: everything but where secrets come
 * from; of secrets only the fingerprints */
static json_t *make_public(const json_t *j)
{
	json_t *pub = json_deep_copy(j);
	json_t *sec = json_object_get(pub, "secrets");
	json_t *fps = json_object();
	const char *k;
	json_t *v;

	json_object_foreach(sec, k, v) {
		json_t *fp = json_object_get(v, "fingerprint");
		json_t *prev = json_object_get(v, "previous_fingerprint");

		if (fp)
			json_object_set(fps, k, fp);
		if (prev) {
			char name[128];

			snprintf(name, sizeof(name), "%s.previous", k);
			json_object_set(fps, name, prev);
		}
	}
	json_object_del(pub, "secrets");
	json_object_del(pub, "profiles");
	/* how the BMCs are reached is no part of an image: a changed timeout
	 * must not make a new one */
	json_object_del(pub, "bmc");
	json_object_set_new(pub, "fingerprints", fps);
	return pub;
}

int nf_site_load(struct nf_ctx *ctx, const char *path, struct nf_site **out,
		 struct nf_diags *diags)
{
	struct nf_site *s;
	json_t *j = NULL, *locs = json_object();
	int r;

	r = nf_yaml_load(ctx, path, &j, locs, diags);
	if (r) {
		json_decref(locs);
		return r;
	}
	if (nf_schema_check(j, site_fields, "", locs, diags) ||
	    validate(j, locs, diags)) {
		json_decref(j);
		json_decref(locs);
		return nf_fail(ctx, NF_E_INVALID, "site file '%s' has errors", path);
	}
	if (!(s = calloc(1, sizeof(*s)))) {
		json_decref(j);
		json_decref(locs);
		return -ENOMEM;
	}
	s->path = nf_strdup(path);
	s->json = j;
	s->locs = locs;
	s->pub = make_public(j);
	*out = s;
	return 0;
}

void nf_site_free(struct nf_site *site)
{
	if (!site)
		return;
	free(site->path);
	json_decref(site->json);
	json_decref(site->locs);
	json_decref(site->pub);
	free(site);
}

const json_t *nf_site_json(const struct nf_site *site)
{
	return site->json;
}

const json_t *nf_site_public(const struct nf_site *site)
{
	return site->pub;
}

const char *nf_site_path(const struct nf_site *site)
{
	return site->path;
}

/* ------------------------------------------------------------ site init */

/* A value that goes into the YAML as a plain scalar: no quoting needed,
 * nothing YAML would read as structure */
static int plain(const char *s)
{
	if (!s || !*s || strlen(s) > 255)
		return 0;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("._:/-[]", *p)))
			return 0;
	return *s != '-' && *s != '[' && *s != ':';
}

static int init_value(struct nf_ctx *ctx, const char *what, const char *v)
{
	if (plain(v))
		return 0;
	return nf_fail(ctx, NF_E_INVALID, "%s '%s' is not a plain name, address "
		       "or URL", what, v ? v : "");
}

static void yaml_list(struct nf_buf *b, const char *key, const char *const *v, size_t n,
		      const char *indent)
{
	nf_buf_printf(b, "%s%s: [", indent, key);
	for (size_t i = 0; i < n; i++)
		nf_buf_printf(b, "%s%s", i ? ", " : "", v[i]);
	nf_buf_printf(b, "]\n");
}

int nf_site_init(struct nf_ctx *ctx, const struct nf_site_init *o,
		 const char *path, struct nf_diags *diags)
{
	const char *cluster = o->cluster ? o->cluster : "cluster";
	const char *distro = o->distro ? o->distro : "debian13";
	char fp[NF_FINGERPRINT_LEN] = "", *dir = NULL, *tmp = NULL;
	struct nf_site *site = NULL;
	struct nf_buf b = { 0 };
	int r, fd = -1;

	if ((r = init_value(ctx, "cluster", cluster)) ||
	    (r = init_value(ctx, "distro", distro)) ||
	    (r = init_value(ctx, "network", o->network)) ||
	    (r = init_value(ctx, "server", o->server)) ||
	    (o->gateway && (r = init_value(ctx, "gateway", o->gateway))) ||
	    (o->domain && (r = init_value(ctx, "domain", o->domain))) ||
	    (o->munge_key && (r = init_value(ctx, "munge key path", o->munge_key))) ||
	    (o->password && (r = init_value(ctx, "password path", o->password))))
		return r;
	if (!o->nntp)
		return nf_fail(ctx, NF_E_USAGE, "a site needs at least one NTP server");
	for (size_t i = 0; i < o->nntp; i++)
		if ((r = init_value(ctx, "NTP server", o->ntp[i])))
			return r;
	for (size_t i = 0; i < o->ndns; i++)
		if ((r = init_value(ctx, "DNS server", o->dns[i])))
			return r;
	if (strncmp(o->server, "http://", 7) && strncmp(o->server, "https://", 8))
		return nf_fail(ctx, NF_E_INVALID, "server '%s' is not an http(s) URL",
			       o->server);
	/* the key's fingerprint pins it in every image built from the site */
	if (o->munge_key && nf_munge_fingerprint_file(ctx, o->munge_key, fp))
		fp[0] = '\0';
	nf_buf_printf(&b, "# The site file of cluster %s, written by 'nodeforge init'.\n"
		      "# Pass it with --site (or NODEFORGE_SITE); 'nodeforge lint' checks it.\n"
		      "cluster: %s\ndistro: %s\n\n", cluster, cluster, distro);
	yaml_list(&b, "ntp", o->ntp, o->nntp, "");
	nf_buf_printf(&b, "\nnetworks:\n  provisioning:\n    cidr: %s\n", o->network);
	if (o->gateway)
		nf_buf_printf(&b, "    gateway: %s\n", o->gateway);
	if (o->ndns)
		yaml_list(&b, "dns", o->dns, o->ndns, "    ");
	if (o->domain)
		nf_buf_printf(&b, "    domain: %s\n", o->domain);
	nf_buf_printf(&b, "\nserver:\n  url: %s\n\n"
		      "# Where secrets come from on the boot server, never their values:\n"
		      "# images carry only fingerprints.\n"
		      "secrets:\n  munge_key:\n    path: %s\n    owner: munge\n",
		      o->server, o->munge_key ? o->munge_key : "/etc/nodeforge/secrets/munge.key");
	if (*fp)
		nf_buf_printf(&b, "    fingerprint: \"%s\"\n", fp);
	nf_buf_printf(&b, "  slurmdbd_password:\n    path: %s\n",
		      o->password ? o->password : "/etc/nodeforge/secrets/slurmdbd.password");
	if (b.err || !b.s) {
		nf_buf_free(&b);
		return -ENOMEM;
	}
	/* written beside the target, checked as any site is, then published */
	dir = nf_strdup(path);
	if (!dir || !(tmp = nf_asprintf("%s.init.XXXXXX", path))) {
		r = -ENOMEM;
		goto out;
	}
	if ((fd = mkstemp(tmp)) < 0) {
		r = nf_fail(ctx, -errno, "cannot create '%s': %s", tmp, strerror(errno));
		free(tmp);
		tmp = NULL;
		goto out;
	}
	if (write(fd, b.s, b.len) != (ssize_t)b.len || fsync(fd) < 0 ||
	    fchmod(fd, 0644) < 0) {
		r = nf_fail(ctx, -errno, "cannot write '%s': %s", tmp, strerror(errno));
		goto out;
	}
	r = nf_site_load(ctx, tmp, &site, diags);
	/* the findings name the file the caller asked for */
	for (size_t i = 0; diags && i < diags->n; i++)
		if (diags->v[i].file && !strcmp(diags->v[i].file, tmp)) {
			char *f = nf_strdup(path);

			if (f) {
				free(diags->v[i].file);
				diags->v[i].file = f;
			}
		}
	if (r)
		goto out;
	if (o->force ? rename(tmp, path) < 0
		     : (link(tmp, path) < 0 || unlink(tmp) < 0)) {
		r = errno == EEXIST
			? nf_fail(ctx, -EEXIST, "'%s' exists: it is kept (--force "
				  "replaces it)", path)
			: nf_fail(ctx, -errno, "cannot publish '%s': %s", path,
				  strerror(errno));
		goto out;
	}
	free(tmp);
	tmp = NULL;
out:
	if (fd >= 0)
		close(fd);
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	free(dir);
	nf_site_free(site);
	nf_buf_free(&b);
	return r;
}
