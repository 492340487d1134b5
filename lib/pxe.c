/* SPDX-License-Identifier: MIT */
/*
 * The boot tree: a static, content-addressed directory any HTTP server can
 * serve (layout in docs/formats.md).
 *
 * Rendering is idempotent: a file whose content is unchanged is not
 * touched.  Changed files are staged as temporaries next to their target,
 * made durable with one syncfs(), then renamed into place, so a reader
 * sees either the old or the new file and never a partial one.  Every path
 * is opened relative to the tree's directory fd with O_NOFOLLOW.
 */
#include "pxe_int.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------- templates */

struct var {
	const char *name, *value;
};

struct vars {
	const struct var *v;
	size_t n;
};

static int var_lookup(void *data, const char *name, char *out, size_t outsz)
{
	const struct vars *vs = data;

	for (size_t i = 0; i < vs->n; i++)
		if (!strcmp(vs->v[i].name, name)) {
			snprintf(out, outsz, "%s", vs->v[i].value);
			return 0;
		}
	return -1;
}

/* Kernel arguments and URLs land in iPXE, GRUB and kickstart scripts:
 * refuse anything those languages would interpret */
static int script_safe(const char *s)
{
	for (; *s; s++)
		if (!isprint((unsigned char)*s) || strchr("\"'`$;\\{}#", *s))
			return 0;
	return 1;
}

/* The kernel line of an iPXE script is a command line: iPXE reads '||'
 * and '&&' as operators, '${...}' as a setting, '#' as a comment, and
 * GRUB and kickstarts quote and expand too; the final arguments of a
 * role hold none of these */
int nf_pxe_kernel_args_check(struct nf_ctx *ctx, const char *role,
			     const char *args)
{
	char what[24], *shown;
	int r;

	for (const char *s = args; *s; s++) {
		if (isprint((unsigned char)*s) &&
		    !strchr("\"'`$;\\{}#|&<>", *s))
			continue;
		if (isprint((unsigned char)*s))
			snprintf(what, sizeof(what), "'%c'", *s);
		else
			snprintf(what, sizeof(what), "a control character");
		shown = nf_text_escape(args);
		r = nf_fail(ctx, NF_E_UNSAFE, "kernel arguments of role '%s' "
			    "contain %s, which iPXE, GRUB or a shell would "
			    "interpret: '%s'", role, what, shown ? shown : "?");
		free(shown);
		return r;
	}
	return 0;
}

/* ------------------------------------------------------------- render */

static const char *site_str(const struct nf_site *site, const char *a,
			    const char *b, const char *c)
{
	const json_t *j = site ? nf_site_json(site) : NULL;

	j = json_object_get(j, a);
	if (b)
		j = json_object_get(j, b);
	if (c)
		j = json_object_get(j, c);
	return json_string_value(j);
}

static int render_ipxe_common(struct pxe *p, struct nf_buf *b)
{
	const char *url = p->o->server_url;
	int r;

	nf_buf_printf(b,
		"#!ipxe\n"
		"# nodeforge boot entry (rendered; do not edit): chain to the\n"
		"# script of the MAC that booted, or report an unknown machine\n"
		"chain --autofree %s/ipxe/mac/${netX/mac:hexhyp}.ipxe || "
		"chain --autofree %s/ipxe/unknown.ipxe\n", url, url);
	if ((r = nf_pxe_bput(p, "ipxe", "boot.ipxe", b)))
		return r;
	nf_buf_printf(b,
		"#!ipxe\n"
		"# nodeforge: this MAC is not in the inventory.  Report it to the\n"
		"# boot server, then retry every minute until it is added.\n"
		"echo nodeforge: ${netX/mac} is not in the inventory\n"
		"imgfetch --name report %s/api/v1/unknown/${netX/mac:hexhyp} || "
		"echo nodeforge: could not report to %s\n"
		"imgfree report ||\n"
		":retry\n"
		"sleep 60\n"
		"chain --autofree %s/ipxe/boot.ipxe || goto retry\n",
		url, url, url);
	if ((r = nf_pxe_bput(p, "ipxe", "unknown.ipxe", b)))
		return r;
	nf_buf_printf(b,
		"# nodeforge: GRUB fallback for MACs not in the inventory\n"
		"# (rendered; do not edit).  Known MACs load grub.cfg-01-MAC.\n"
		"echo \"nodeforge: $net_default_mac is not in the inventory\"\n"
		"sleep 60\n"
		"reboot\n");
	return nf_pxe_bput(p, "grub", "grub.cfg", b);
}

int nf_pxe_render_node(struct pxe *p, const struct nf_node *nd,
		       const struct role *r, struct nf_buf *b)
{
	const char *url = p->o->server_url;
	char mac[18], ip[16], file[64];
	int e;

	if ((e = nf_render_check(p->ctx, "the node's boot script", "node name",
				 nd->name, NF_CHARS_NAME)) ||
	    (*nd->rack && (e = nf_render_check(p->ctx, "the node's boot script",
					       "rack", nd->rack, NF_CHARS_NAME))))
		return e;
	nf_mac_format(nd->mac, '-', mac);
	nf_ipv4_format(nd->ip, ip);
	nf_buf_printf(b,
		"#!ipxe\n"
		"# node %s (%s, rack %s, %s) - rendered by nodeforge; do not edit\n"
		"kernel %s/images/%s/%s initrd=%s %s%snodeforge.server=%s "
		"nodeforge.node=%s systemd.hostname=%s\n"
		"initrd %s/images/%s/%s\n"
		"boot\n",
		nd->name, r->name, *nd->rack ? nd->rack : "-", ip, url,
		r->name, r->kernel, r->initramfs, r->args, *r->args ? " " : "",
		url, nd->name, nd->name, url, r->name, r->initramfs);
	snprintf(file, sizeof(file), "%s.ipxe", mac);
	if ((e = nf_pxe_bput(p, "ipxe/mac", file, b)))
		return e;
	nf_buf_printf(b,
		"# node %s (%s) - rendered by nodeforge; do not edit\n"
		"set default=0\n"
		"set timeout=0\n"
		"menuentry 'nodeforge %s (%s)' {\n"
		"\tlinux /images/%s/%s %s%snodeforge.server=%s nodeforge.node=%s "
		"systemd.hostname=%s\n"
		"\tinitrd /images/%s/%s\n"
		"}\n",
		nd->name, r->name, nd->name, r->name, r->name, r->kernel,
		r->args, *r->args ? " " : "", url, nd->name, nd->name, r->name,
		r->initramfs);
	snprintf(file, sizeof(file), "grub.cfg-01-%s", mac);
	return nf_pxe_bput(p, "grub", file, b);
}

static int render_kickstart(struct pxe *p, const struct role *r,
			    struct nf_buf *b)
{
	char *tpath, *tmpl = NULL, *url = NULL, *args = NULL, name[96];
	const char *cluster = site_str(p->o->site, "cluster", NULL, NULL);
	/* the URL and checksum name exactly one file: the liveimg the
	 * build published, else the rootfs if Anaconda takes it as is */
	const char *tar = r->liveimg ? r->liveimg : r->rootfs;
	const char *sha = r->liveimg ? r->liveimg_sha256 : r->rootfs_sha256;
	int e;

	if (!p->o->kickstart_dir)
		return 0;
	if (cluster && (e = nf_render_check(p->ctx, "a kickstart", "cluster name",
					    cluster, NF_CHARS_NAME)))
		return e;
	if (!nf_pxe_anaconda_tarball(tar))
		return nf_fail(p->ctx, NF_E_UNSUPPORTED,
			       "cannot render the kickstart of role '%s': "
			       "Anaconda's liveimg would take '%s/%s/%s' for a "
			       "disk image, not a tarball (it goes by the "
			       "suffix: .tar, .tbz, .tgz, .txz, .tar.bz2, "
			       ".tar.gz, .tar.xz); rebuild the role with an EL "
			       "site ('nodeforge build %s' then publishes "
			       "'%s-<sha12>.rootfs.tar.xz' as 'liveimg' in "
			       "'%s.current'), or render without kickstarts",
			       r->name, p->o->images_dir, r->name, tar,
			       r->name, r->name, r->name);
	if ((e = nf_pxe_place_image(p, r, tar)))
		return e;
	tpath = nf_asprintf("%s/%s.ks.tmpl", p->o->kickstart_dir, r->name);
	if (!tpath)
		return -ENOMEM;
	if (access(tpath, F_OK) != 0) {
		free(tpath);
		tpath = nf_asprintf("%s/default.ks.tmpl", p->o->kickstart_dir);
		if (!tpath)
			return -ENOMEM;
	}
	e = nf_read_file(p->ctx, tpath, NF_PXE_TMPL_MAX, &tmpl, NULL);
	if (e)
		goto out;
	url = nf_asprintf("%s/images/%s/%s", p->o->server_url, r->name, tar);
	args = nf_asprintf("%s%snodeforge.server=%s", r->args,
			   *r->args ? " " : "", p->o->server_url);
	if (!url || !args) {
		e = -ENOMEM;
		goto out;
	}
	{
		const struct var vars[] = {
			{ "role", r->name },
			{ "cluster", cluster ? cluster : "cluster" },
			{ "server_url", p->o->server_url },
			{ "rootfs_url", url },
			{ "rootfs_sha256", sha },
			{ "kernel_args", args },
		};

		struct vars vs = { vars, NF_ARRAY_SIZE(vars) };

		e = nf_template_render(p->ctx, tpath, tmpl, var_lookup, &vs,
				       "{{role}}, {{cluster}}, {{server_url}}, "
				       "{{rootfs_url}}, {{rootfs_sha256}}, "
				       "{{kernel_args}}", b);
	}
	if (e)
		goto out;
	snprintf(name, sizeof(name), "%s.ks", r->name);
	e = nf_pxe_bput(p, "kickstart", name, b);
out:
	free(tpath);
	free(tmpl);
	free(url);
	free(args);
	return e;
}

static int render_dnsmasq(struct pxe *p, uint32_t net, unsigned prefix,
			  struct nf_buf *b)
{
	const struct nf_inventory *inv = p->o->inv;
	const char *gw = site_str(p->o->site, "networks", "provisioning",
				  "gateway");
	const char *url = p->o->server_url;
	uint32_t mask = prefix ? ~(uint32_t)0 << (32 - prefix) : 0;
	char a[16], m[16];

	nf_ipv4_format(net, a);
	nf_ipv4_format(mask, m);
	nf_buf_printf(b,
		"# nodeforge: DHCP reservations and network boot (rendered; do not\n"
		"# edit).  Only the machines of the inventory get an address.\n"
		"port=0\n"
		"bind-dynamic\n"
		"log-dhcp\n"
		"dhcp-range=set:prov,%s,static,%s,12h\n", a, m);
	if (gw && script_safe(gw) && !strchr(gw, ','))
		nf_buf_printf(b, "dhcp-option=tag:prov,option:router,%s\n", gw);
	nf_buf_printf(b,
		"# firmware: BIOS PXE, UEFI PXE, UEFI HTTP boot; and iPXE itself\n"
		"dhcp-match=set:bios,option:client-arch,0\n"
		"dhcp-match=set:efi64,option:client-arch,7\n"
		"dhcp-match=set:efi64,option:client-arch,9\n"
		"dhcp-match=set:efihttp,option:client-arch,16\n"
		"dhcp-userclass=set:ipxe,iPXE\n"
		"# plain PXE firmware loads iPXE over TFTP, then iPXE takes the\n"
		"# boot script over HTTP\n"
		"dhcp-boot=tag:bios,tag:!ipxe,undionly.kpxe\n"
		"dhcp-boot=tag:efi64,tag:!ipxe,ipxe.efi\n"
		"dhcp-boot=tag:ipxe,%s/ipxe/boot.ipxe\n"
		"# UEFI HTTP boot loads GRUB, which reads grub/grub.cfg-01-MAC\n"
		"dhcp-option-force=tag:efihttp,60,HTTPClient\n"
		"dhcp-boot=tag:efihttp,%s/grub/grubx64.efi\n"
		"enable-tftp\n"
		"tftp-root=%s/tftp\n"
		"tftp-secure\n",
		url, url, p->o->out_abs);
	for (size_t i = 0; i < nf_inventory_count(inv); i++) {
		const struct nf_node *nd = nf_inventory_node(inv, i);
		char mac[18], ip[16];

		nf_mac_format(nd->mac, ':', mac);
		nf_ipv4_format(nd->ip, ip);
		nf_buf_printf(b, "dhcp-host=%s,%s,%s,infinite\n", mac, ip, nd->name);
	}
	return nf_pxe_bput(p, "", "dnsmasq.conf", b);
}

static int render_nginx(struct pxe *p, struct nf_buf *b)
{
	const char *u = p->o->server_url, *hp, *colon, *slash;
	unsigned port = 80;

	hp = strstr(u, "://") + 3;
	slash = strchr(hp, '/');
	colon = strrchr(hp, ':');
	if (colon && (!slash || colon < slash) && !strchr(colon, ']'))
		port = (unsigned)atoi(colon + 1);
	nf_buf_printf(b,
		"# nodeforge: nginx serving the boot tree %s at scale (rendered;\n"
		"# do not edit).  Test with: nginx -t -c %s/nginx.conf\n"
		"worker_processes auto;\n"
		"pid %s/nginx.pid;\n"
		"error_log stderr warn;\n"
		"events {\n"
		"\tworker_connections 4096;\n"
		"}\n"
		"http {\n"
		"\ttypes {\n"
		"\t\ttext/plain ipxe cfg ks;\n"
		"\t\tapplication/json json;\n"
		"\t\tapplication/zstd zst;\n"
		"\t\tapplication/x-xz xz;\n"
		"\t\tapplication/octet-stream vmlinuz efi kpxe;\n"
		"\t}\n"
		"\tdefault_type application/octet-stream;\n"
		"\tsendfile on;\n"
		"\tsendfile_max_chunk 2m;\n"
		"\ttcp_nopush on;\n"
		"\ttcp_nodelay on;\n"
		"\tkeepalive_timeout 65;\n"
		"\tkeepalive_requests 10000;\n"
		"\topen_file_cache max=20000 inactive=60s;\n"
		"\tclient_max_body_size 64k;\n"
		"\tserver_tokens off;\n"
		"\taccess_log off;\n"
		"\tserver {\n"
		"\t\tlisten %u reuseport;\n"
		"\t\tserver_name _;\n"
		"\t\troot %s;\n"
		"\t\tlocation / {\n"
		"\t\t\ttry_files $uri =404;\n"
		"\t\t}\n"
		"\t\t# content-addressed: a name never changes its bytes\n"
		"\t\tlocation /images/ {\n"
		"\t\t\tadd_header Cache-Control \"public, max-age=31536000, "
		"immutable\";\n"
		"\t\t}\n"
		"\t\tlocation /ipxe/ {\n"
		"\t\t\tadd_header Cache-Control \"no-cache\";\n"
		"\t\t}\n"
		"\t\tlocation /grub/ {\n"
		"\t\t\tadd_header Cache-Control \"no-cache\";\n"
		"\t\t}\n",
		p->o->out_abs, p->o->out_abs, p->o->out_abs, port,
		p->o->out_abs);
	if (p->o->api_upstream)
		nf_buf_printf(b,
			"\t\t# verdicts and unknown-MAC reports go to nodeforge serve\n"
			"\t\tlocation /api/ {\n"
			"\t\t\tproxy_pass %s;\n"
			"\t\t\t# the node's own address: enrollment and verdicts\n"
			"\t\t\t# are accepted only from a node's inventory address\n"
			"\t\t\tproxy_set_header X-Real-IP $remote_addr;\n"
			"\t\t\tclient_max_body_size 64k;\n"
			"\t\t}\n", p->o->api_upstream);
	else
		nf_buf_printf(b,
			"\t\tlocation /api/ {\n"
			"\t\t\treturn 404;\n"
			"\t\t}\n");
	nf_buf_printf(b, "\t}\n}\n");
	return nf_pxe_bput(p, "", "nginx.conf", b);
}

static int render_index(struct pxe *p, struct role *roles, size_t nroles,
			struct nf_buf *b)
{
	const struct nf_inventory *inv = p->o->inv;
	json_t *doc = json_object(), *nodes = json_array(), *rj = json_object();
	int e;

	if (!doc || !nodes || !rj) {
		json_decref(doc);
		json_decref(nodes);
		json_decref(rj);
		return -ENOMEM;
	}
	json_object_set_new(doc, "server_url", json_string(p->o->server_url));
	for (size_t i = 0; i < nroles; i++)
		json_object_set_new(rj, roles[i].name,
				    json_pack("{s:s, s:s, s:s, s:s, s:s}",
					      "kernel", roles[i].kernel,
					      "initramfs", roles[i].initramfs,
					      "rootfs", roles[i].rootfs,
					      "rootfs_sha256",
					      roles[i].rootfs_sha256,
					      "kernel_args", roles[i].args));
	json_object_set_new(doc, "roles", rj);
	for (size_t i = 0; i < nf_inventory_count(inv); i++) {
		const struct nf_node *nd = nf_inventory_node(inv, i);
		char mac[18], ip[16];

		nf_mac_format(nd->mac, ':', mac);
		nf_ipv4_format(nd->ip, ip);
		json_array_append_new(nodes,
				      json_pack("{s:s, s:s, s:s, s:s, s:s}",
						"name", nd->name, "mac", mac,
						"ip", ip, "role", nd->role,
						"rack", nd->rack));
	}
	json_object_set_new(doc, "nodes", nodes);
	e = nf_pxe_put_index(p, doc, b);
	json_decref(doc);
	return e;
}

int nf_pxe_put_index(struct pxe *p, const json_t *doc, struct nf_buf *b)
{
	char *s = json_dumps(doc, JSON_INDENT(1) | JSON_SORT_KEYS);

	if (!s)
		return -ENOMEM;
	nf_buf_printf(b, "%s\n", s);
	free(s);
	return nf_pxe_bput(p, "", "nodes.json", b);
}

static int valid_url(const char *u)
{
	const char *h;

	if (strncmp(u, "http://", 7) && strncmp(u, "https://", 8))
		return 0;
	h = strstr(u, "://") + 3;
	if (!*h || *h == '/' || strlen(u) > 200)
		return 0;
	for (const char *c = h; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr(".:-[]/_~", *c))
			return 0;
	return u[strlen(u) - 1] != '/';
}

/* The signing key is the one the images were signed with: its public
 * half is OUT/signing.pub beside them (when there), and in every image
 * as the key the node checks the cluster files with */
static int check_sign_key(struct pxe *p)
{
	char *pub = NULL, *want = NULL, *path;
	size_t plen = 0, wlen = 0;
	int e = nf_public_pem(p->ctx, p->o->sign_key, &pub, &plen);

	if (e)
		return e;
	path = nf_asprintf("%s/signing.pub", p->o->images_dir);
	e = path ? nf_read_optional(p->ctx, path, 64 << 10, &want, &wlen)
		 : -ENOMEM;
	if (e == -ENOENT) {
		e = 0;
	} else if (!e && (wlen != plen || memcmp(want, pub, plen))) {
		e = nf_fail(p->ctx, NF_E_SIGNATURE, "the key '%s' is not the "
			    "one the images were signed with ('%s'): their "
			    "nodes would refuse cluster files it signs",
			    p->o->sign_key, path);
	}
	free(path);
	free(pub);
	free(want);
	return e;
}

/* cluster/NAME, and cluster/NAME.sig when there is a key */
static int put_cluster(struct pxe *p, const char *name, const char *text,
		       struct nf_buf *b)
{
	char line[NF_SIG_LINE], sig[32];
	int e;

	if (p->o->sign_key && (e = nf_sign_buf(p->ctx, name, text, strlen(text),
					       p->o->sign_key, line)))
		return e;
	nf_buf_printf(b, "%s", text);
	if ((e = nf_pxe_bput(p, "cluster", name, b)) || !p->o->sign_key)
		return e;
	snprintf(sig, sizeof(sig), "%s.sig", name);
	nf_buf_printf(b, "%s", line);
	return nf_pxe_bput(p, "cluster", sig, b);
}

int nf_pxe_render(struct nf_ctx *ctx, const struct nf_pxe_opts *o,
		  struct nf_pxe_stats *st)
{
	struct pxe p = { .ctx = ctx, .o = o, .st = st, .root = -1 };
	const struct nf_inventory *inv = o->inv;
	struct role *roles = NULL;
	size_t nroles = 0;
	json_t *rolemap = json_object(); /* role -> index */
	struct nf_buf b = { 0 };
	const char *cidr = o->network;
	uint32_t net = 0;
	unsigned prefix = 0;
	int e = 0;

	memset(st, 0, sizeof(*st));
	p.keep = json_object();
	if (!rolemap || !p.keep) {
		e = -ENOMEM;
		goto out;
	}
	if (!o->server_url || !valid_url(o->server_url)) {
		e = nf_fail(ctx, NF_E_INVALID,
			    "invalid server URL '%s': expected http://HOST[:PORT]"
			    "[/PATH] without a trailing '/'",
			    o->server_url ? o->server_url : "");
		goto out;
	}
	if (o->api_upstream && (!valid_url(o->api_upstream))) {
		e = nf_fail(ctx, NF_E_INVALID, "invalid API upstream '%s'",
			    o->api_upstream);
		goto out;
	}
	if (!cidr)
		cidr = site_str(o->site, "networks", "provisioning", "cidr");
	if (!cidr) {
		e = nf_fail(ctx, NF_E_INVALID,
			    "no provisioning network: set "
			    "'networks.provisioning.cidr' in the site or pass "
			    "--network CIDR");
		goto out;
	}
	if (nf_cidr_parse(cidr, &net, &prefix)) {
		e = nf_fail(ctx, NF_E_INVALID, "malformed network '%s'", cidr);
		goto out;
	}
	if (o->network && (e = nf_inventory_check_network(ctx, inv, cidr, NULL)))
		goto out;
	if (!o->out_abs || o->out_abs[0] != '/' || !script_safe(o->out_abs)) {
		e = nf_fail(ctx, NF_E_INVALID, "invalid output directory '%s'",
			    o->out_abs ? o->out_abs : "");
		goto out;
	}

	/* one image and one argument string per role */
	roles = calloc(nf_inventory_count(inv) ? nf_inventory_count(inv) : 1,
		       sizeof(*roles));
	if (!roles) {
		e = -ENOMEM;
		goto out;
	}
	if (mkdir(o->out_dir, 0755) < 0 && errno != EEXIST) {
		e = nf_fail(ctx, -errno, "cannot create '%s': %s", o->out_dir,
			    strerror(errno));
		goto out;
	}
	p.root = open(o->out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p.root < 0) {
		e = nf_fail(ctx, -errno, "cannot open '%s': %s", o->out_dir,
			    strerror(errno));
		goto out;
	}
	if ((e = nf_pxe_check_boot_files(&p, st)))
		goto out;
	for (size_t i = 0; i < nf_inventory_count(inv); i++) {
		const struct nf_node *nd = nf_inventory_node(inv, i);
		struct role *r;
		const char *args;

		if (json_object_get(rolemap, nd->role))
			continue;
		r = &roles[nroles];
		r->name = nd->role;
		args = json_string_value(json_object_get(o->role_args, nd->role));
		if (!args) {
			e = nf_fail(ctx, NF_E_NOTFOUND,
				    "no kernel arguments for role '%s'", nd->role);
			goto out;
		}
		if ((e = nf_pxe_kernel_args_check(ctx, nd->role, args)))
			goto out;
		r->args = args;
		nroles++;
		json_object_set_new(rolemap, nd->role,
				    json_integer((json_int_t)nroles - 1));
		if ((e = nf_pxe_load_current(&p, r)))
			goto out;
		if ((e = render_kickstart(&p, r, &b)))
			goto out;
	}
	if ((e = render_ipxe_common(&p, &b)))
		goto out;
	if ((e = nf_pxe_dir_fd(&p, "tftp")) < 0)
		goto out;
	if ((e = nf_pxe_place_ipxe(&p)))
		goto out;
	for (size_t i = 0; i < nf_inventory_count(inv); i++) {
		const struct nf_node *nd = nf_inventory_node(inv, i);
		struct role *r = &roles[json_integer_value(
			json_object_get(rolemap, nd->role))];

		if ((e = nf_pxe_render_node(&p, nd, r, &b)))
			goto out;
	}
	if (o->cluster_conf && o->cluster_hosts &&
	    ((o->sign_key && (e = check_sign_key(&p))) ||
	     (e = put_cluster(&p, "slurm.conf", o->cluster_conf, &b)) ||
	     (e = put_cluster(&p, "hosts", o->cluster_hosts, &b))))
		goto out;
	if ((e = render_dnsmasq(&p, net, prefix, &b)) ||
	    (e = render_nginx(&p, &b)) ||
	    (e = render_index(&p, roles, nroles, &b)))
		goto out;
	if ((e = nf_pxe_publish(&p)))
		goto out;
	if ((e = nf_pxe_prune(&p, "ipxe/mac", "", ".ipxe")) ||
	    (e = nf_pxe_prune(&p, "grub", "grub.cfg-01-", "")))
		goto out;
	if (o->kickstart_dir && (e = nf_pxe_prune(&p, "kickstart", "", ".ks")))
		goto out;
	/* an unsigned render leaves no signature of an older one behind */
	if (o->cluster_conf && o->cluster_hosts &&
	    (e = nf_pxe_prune(&p, "cluster", "", ".sig")))
		goto out;
	e = 0;
out:
	nf_pxe_release(&p);
	for (size_t i = 0; i < nroles; i++)
		nf_pxe_role_clear(&roles[i]);
	free(roles);
	free(b.s);
	json_decref(rolemap);
	return e;
}
