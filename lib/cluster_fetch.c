/* SPDX-License-Identifier: MIT */
/*
 * `nodeforge cluster fetch`: on a node, at every boot, the cluster part of
 * slurm.conf and the hosts block from the boot tree (cluster/slurm.conf,
 * cluster/hosts), installed as root.  Whoever answers on the boot network
 * could serve them, so each must come with its detached signature
 * (cluster/NAME.sig, written by `nodeforge pxe --key`) by the key the image
 * trusts: the public half of the key the image itself was signed with,
 * which the build put at /etc/nodeforge/signing.pub.  Both files are
 * fetched and checked before either is installed.
 */
#include "internal.h"

#include <stdlib.h>

#define HOSTS_BEGIN "# nodeforge cluster hosts"
#define HOSTS_END "# end of nodeforge cluster hosts\n"

/* /etc/hosts with the block between the markers replaced by `block` */
static char *merge_hosts(const char *old, const char *block)
{
	struct nf_buf b = { 0 };
	const char *s = old ? old : "", *e, *end;

	if (!strstr(s, "localhost"))
		nf_buf_printf(&b, "127.0.0.1\tlocalhost\n::1\tlocalhost "
			      "ip6-localhost ip6-loopback\n");
	e = strstr(s, HOSTS_BEGIN);
	if (e && (e == s || e[-1] == '\n') && (end = strstr(e, HOSTS_END))) {
		nf_buf_printf(&b, "%.*s%s%s", (int)(e - s), s, block,
			      end + strlen(HOSTS_END));
	} else {
		nf_buf_printf(&b, "%s%s%s", s,
			      *s && s[strlen(s) - 1] != '\n' ? "\n" : "", block);
	}
	if (b.err) {
		nf_buf_free(&b);
		return NULL;
	}
	return b.s;
}

static int text_ok(const char *s, size_t len, const char *first)
{
	return len && strlen(s) == len && !strncmp(s, first, strlen(first));
}

/* One file of the tree's cluster/; a server that answers 404 has a tree
 * without them (its inventory runs no slurmctld: nodeforge pxe said so),
 * which waiting does not change: NF_E_NOTFOUND */
static int cluster_get(struct nf_ctx *ctx, const char *url, char **body,
		       size_t *len)
{
	struct nf_http_req rq = { .url = url, .max_bytes = 16 << 20,
				  .timeout_ms = 30000 };
	long status = 0;
	int r = nf_http_request(ctx, &rq, body, len, &status);

	if (r && status == 404)
		return nf_fail(ctx, NF_E_NOTFOUND, "%s: HTTP 404: the boot tree "
			       "has no cluster files (its inventory has no "
			       "node that runs slurmctld)", url);
	return r;
}

/* URL.sig over the body of URL, by the key at `trust` */
static int cluster_sig(struct nf_ctx *ctx, const char *url, const char *body,
		       size_t len, const char *trust)
{
	char *sigurl = nf_asprintf("%s.sig", url), *sig = NULL;
	struct nf_http_req rq = { .url = sigurl, .max_bytes = 1024,
				  .timeout_ms = 30000 };
	long status = 0;
	size_t slen = 0;
	int r;

	if (!sigurl)
		return -ENOMEM;
	r = nf_http_request(ctx, &rq, &sig, &slen, &status);
	if (r && status == 404)
		r = nf_fail(ctx, NF_E_SIGNATURE, "refusing '%s': it is not "
			    "signed (HTTP 404 for '%s'; nodeforge pxe --key "
			    "signs the cluster files)", url, sigurl);
	else if (!r && (r = nf_sig_check(ctx, url, body, len, sigurl, sig,
					 slen, trust))) {
		char why[512];

		snprintf(why, sizeof(why), "%s", nf_errmsg(ctx));
		r = nf_fail(ctx, r, "refusing '%s': %s", url, why);
	}
	free(sig);
	free(sigurl);
	return r;
}

/* SERVER/cluster/NAME, its first line `first`, signed by `trust` */
static int fetch_signed(struct nf_ctx *ctx, const char *server,
			const char *name, const char *first, const char *what,
			const char *trust, char **body)
{
	char *url = nf_asprintf("%s/cluster/%s", server, name);
	size_t len = 0;
	int r;

	*body = NULL;
	if (!url)
		return -ENOMEM;
	if (!(r = cluster_get(ctx, url, body, &len))) {
		if (!text_ok(*body, len, first) ||
		    (!strcmp(name, "hosts") && !strstr(*body, HOSTS_END)))
			r = nf_fail(ctx, NF_E_INVALID, "%s is not %s that "
				    "nodeforge pxe renders", url, what);
		else
			r = cluster_sig(ctx, url, *body, len, trust);
	}
	if (r) {
		free(*body);
		*body = NULL;
	}
	free(url);
	return r;
}

int nf_cluster_fetch(struct nf_ctx *ctx, const char *server, const char *root,
		     const char *pubkey)
{
	char *conf = NULL, *hosts = NULL, *old = NULL, *merged = NULL;
	char *path = NULL, *trust;
	struct stat st;
	int r;

	if (!(trust = pubkey ? strdup(pubkey)
			     : nf_asprintf("%s" NF_TRUST_PUB, root ? root : "")))
		return -ENOMEM;
	/* without it nothing can be checked, and waiting changes nothing */
	if (stat(trust, &st) < 0) {
		r = nf_fail(ctx, NF_E_NOTFOUND, "no trusted key '%s' (%s): "
			    "nothing can check the cluster files' signatures; "
			    "an image built by nodeforge carries the public "
			    "half of the key it was signed with there",
			    trust, strerror(errno));
		goto out;
	}
	/* both checked before either is installed */
	if ((r = fetch_signed(ctx, server, "slurm.conf", "# Written by nodeforge",
			      "a cluster.conf", trust, &conf)) ||
	    (r = fetch_signed(ctx, server, "hosts", HOSTS_BEGIN, "a hosts block",
			      trust, &hosts)))
		goto out;
	if (!(path = nf_asprintf("%s/etc/hosts", root ? root : ""))) {
		r = -ENOMEM;
		goto out;
	}
	/* a root without /etc/hosts gets one */
	if ((r = nf_read_optional(ctx, path, 16 << 20, &old, NULL)) &&
	    r != -ENOENT)
		goto out;
	if (!(merged = merge_hosts(old, hosts))) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = nf_write_atomic(ctx, path, merged, strlen(merged), 0644)))
		goto out;
	free(path);
	if (!(path = nf_asprintf("%s" NF_CLUSTER_CONF, root ? root : ""))) {
		r = -ENOMEM;
		goto out;
	}
	r = nf_write_atomic(ctx, path, conf, strlen(conf), 0644);
out:
	free(trust);
	free(path);
	free(conf);
	free(hosts);
	free(old);
	free(merged);
	return r;
}
