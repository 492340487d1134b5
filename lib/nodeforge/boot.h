/* SPDX-License-Identifier: MIT */
/* libnodeforge's public API: the boot side: inventory, pxe, the boot server.  Included by nodeforge.h,
 * which every user includes; not meant to be included alone. */
#ifndef NF_BOOT_H
#define NF_BOOT_H

/* ============================================ boot: inventory, pxe, serve */

/* MAC addresses: "52:54:00:ab:cd:ef" (':' or '-' separated, any case);
 * multicast and all-zero addresses are refused */
int nf_mac_parse(const char *s, uint8_t mac[6]);
/* Lower-case hex with `sep` between bytes; out holds 18 bytes */
void nf_mac_format(const uint8_t mac[6], char sep, char out[18]);
/* IPv4 dotted quad, strict: four decimal parts 0-255, no leading zeros;
 * host byte order */
int nf_ipv4_parse(const char *s, uint32_t *ip);
void nf_ipv4_format(uint32_t ip, char out[16]);
/* "10.0.0.0/16"; host bits must be zero */
int nf_cidr_parse(const char *s, uint32_t *net, unsigned *prefix);
int nf_cidr_contains(uint32_t net, unsigned prefix, uint32_t ip);

/* One machine of the inventory (racks.yaml), after range expansion */
struct nf_node {
	char *name;
	char *role;
	char *rack;         /* "" when not given */
	char *gpu_type;     /* the GRES type of its GPUs ("h200"), overriding
	                     * its role's gpu.type; NULL or "" when not given */
	uint8_t mac[6];
	uint32_t ip;        /* host byte order */
	uint32_t bmc;       /* BMC address; 0 when not given */
	uint16_t bmc_port;  /* 0: the protocol's own (623, 443) */
	unsigned char bmc_protocol; /* enum nf_bmc_protocol */
	unsigned char bmc_http; /* Redfish over plain http (a test stand-in) */
	const char *file;   /* where the node was declared (borrowed) */
	unsigned line, col;
};

/* How a node's BMC is spoken to: the inventory's bmc.protocol, else the
 * site's bmc.protocol, else IPMI */
enum nf_bmc_protocol { NF_BMC_DEFAULT = 0, NF_BMC_IPMI, NF_BMC_REDFISH };

struct nf_inventory;

#define NF_INVENTORY_MAX_NODES 100000

/*
 * Load and validate racks.yaml.  Every problem is appended to diags with
 * file:line:col; the call fails (NF_E_PARSE / NF_E_INVALID) when any error
 * was found.  Roles are checked against the profiles directory of ctx;
 * addresses against the site's provisioning network when site is given.
 */
int nf_inventory_load(struct nf_ctx *ctx, const char *path,
		      const struct nf_site *site, struct nf_inventory **out,
		      struct nf_diags *diags);
void nf_inventory_free(struct nf_inventory *inv);
const char *nf_inventory_path(const struct nf_inventory *inv);
size_t nf_inventory_count(const struct nf_inventory *inv);
const struct nf_node *nf_inventory_node(const struct nf_inventory *inv,
					size_t i);
const struct nf_node *nf_inventory_find(const struct nf_inventory *inv,
					const char *name);
/* Check every node's IP against a CIDR (diags at the node's `ip`) */
int nf_inventory_check_network(struct nf_ctx *ctx,
			       const struct nf_inventory *inv,
			       const char *cidr, struct nf_diags *diags);

/* The boot tree (lib/pxe.c; layout in docs/formats.md) */
struct nf_pxe_opts {
	const struct nf_inventory *inv;
	const struct nf_site *site;    /* may be NULL */
	const char *out_dir;           /* the tree, created when missing */
	const char *out_abs;           /* its absolute path (dnsmasq, nginx) */
	const char *server_url;        /* http://HOST[:PORT], no trailing / */
	const char *images_dir;        /* build output: DIR/ROLE/ROLE.current */
	const char *kickstart_dir;     /* ROLE.ks.tmpl / default.ks.tmpl;
					* NULL: no kickstarts */
	const char *network;           /* provisioning CIDR; NULL: the site's */
	const char *api_upstream;      /* nginx proxy_pass for /api/; or NULL */
	const char *ipxe_dir;          /* undionly.kpxe, ipxe.efi for tftp/;
					* NULL or missing files: not copied */
	const json_t *role_args;       /* role -> kernel arguments string */
	const char *cluster_conf;      /* nf_cluster_render(): cluster/slurm.conf */
	const char *cluster_hosts;     /* and cluster/hosts; NULL: none */
	const char *sign_key;          /* Ed25519 private key (PEM) that signs
					* both (cluster/NAME.sig): the one the
					* images were signed with, whose public
					* half they trust; NULL: unsigned */
	int strict;                    /* a boot file dnsmasq.conf names that
					* the tree lacks is an error, not a
					* warning (nf_pxe_stats.missing) */
};

/* A firmware boot file that dnsmasq.conf names and the tree lacks */
struct nf_pxe_missing {
	const char *path;    /* below the tree: tftp/undionly.kpxe */
	const char *client;  /* who loads it: "BIOS PXE clients" */
	const char *remedy;  /* how to provide it */
};

struct nf_pxe_stats {
	size_t files;      /* files the tree holds for this inventory */
	size_t written;    /* of which new or changed */
	size_t unchanged;
	size_t removed;    /* stale per-MAC and per-role files */
	size_t images;     /* image files placed into images/ */
	const struct nf_pxe_missing *missing[4]; /* static entries */
	size_t nmissing;
};

int nf_pxe_render(struct nf_ctx *ctx, const struct nf_pxe_opts *o,
		  struct nf_pxe_stats *st);

/* The first 64 hex digits of ROLE's current rootfs sha256, from
 * IMAGES_DIR/ROLE/ROLE.current (lib/pxe_node.c) */
int nf_pxe_current_sha(struct nf_ctx *ctx, const char *images_dir,
		       const char *role, char sha[65]);
/* The 64 hex digits of the rootfs sha256 of ROLE's image in IMAGES_DIR
 * whose sha256 begins with WANT (12 to 64 hex digits): the current one,
 * or an older one still published with its kernel, initramfs, rootfs,
 * manifest and signature (lib/pxe_node.c); NF_E_NOTFOUND names the
 * role's images */
int nf_pxe_image_sha(struct nf_ctx *ctx, const char *images_dir,
		     const char *role, const char *want, char sha[65]);
/* Rewrite the one node ND's entries of the rendered tree TREE
 * (ipxe/mac/MAC.ipxe, grub/grub.cfg-01-MAC) for an image of its role in
 * IMAGES_DIR, the image's files placed first, each entry published by
 * rename, then its entry in TREE/nodes.json: "kernel" names the image's
 * kernel when it is not the role's there (the boot server records it as
 * the node's image), and is dropped when it is; the server URL and kernel
 * arguments are those of TREE/nodes.json.  SHA NULL: the current image;
 * else (12 to 64 hex digits) the image nf_pxe_image_sha() finds for it,
 * else NF_E_NOTFOUND and nothing is written; NF_E_NOTFOUND too when
 * TREE/nodes.json has no node ND.  IMAGE gets "ROLE@sha12" */
int nf_pxe_point_node(struct nf_ctx *ctx, const char *tree,
		      const char *images_dir, const struct nf_node *nd,
		      const char *sha, char image[96]);

/* The embedded boot server (lib/serve.c; transport lib/adapters/http.c) */
typedef void (*nf_access_log_fn)(void *userdata, const char *line);

struct nf_serve_opts {
	const char *tree;        /* boot tree rendered by nf_pxe_render() */
	const char *state_dir;   /* node states (docs/formats.md) */
	const char *listen;      /* "ADDR:PORT"; port 0 picks a free one */
	unsigned threads;        /* worker threads; 0: one per CPU */
	nf_access_log_fn access_log; /* one line per request; may be NULL */
	void *log_data;
	struct nf_enroll *enroll;  /* answers /api/v1/enroll and /rotate
				    * (lib/enroll.c); NULL: not served */
	/* Proxies whose X-Real-IP header names the client (IPv4 or IPv6
	 * addresses); a request from any other peer is judged by the peer's
	 * own address.  At most NF_SERVE_TRUSTED_MAX. */
	const char *const *trusted_proxies;
	size_t ntrusted_proxies;
	/* Seconds a request head (line and headers) may take from the
	 * connection's start or the previous request's end; 0: 10 */
	unsigned head_timeout;
	/* Connections one address may hold at once; 0: 64 */
	unsigned per_address;
};
#define NF_SERVE_HEAD_TIMEOUT 10
#define NF_SERVE_PER_ADDRESS 64
#define NF_SERVE_TRUSTED_MAX 16

struct nf_server;

/* Start serving in background threads; returns once listening */
int nf_server_start(struct nf_ctx *ctx, const struct nf_serve_opts *o,
		    struct nf_server **out);
/* "http://ADDR:PORT" actually bound */
const char *nf_server_url(const struct nf_server *s);
/* Stop, flush pending state writes, free */
void nf_server_stop(struct nf_server *s);

/* HTTP client (lib/adapters/curl.c): bounded transfers to memory,
 * http/https only */
struct nf_http_req {
	const char *url;
	const void *body;          /* NULL: GET; else POST of body_len bytes */
	size_t body_len;
	const char *content_type;  /* of body */
	size_t max_bytes;          /* response cap (NF_E_LIMIT); 0: 1 MiB */
	long timeout_ms;           /* whole transfer; 0: 30 s */
	const char *const *headers;/* extra "Name: value" lines, NULL-ended */
	const char *method;        /* NULL: GET, or POST with a body; PATCH */
	const char *user, *password; /* HTTP basic authentication */
	const char *ca_file;       /* NULL: the system's CAs */
	int no_verify;             /* accept any TLS certificate */
};

/* *body is NUL-terminated, caller frees; HTTP status >= 400 fails with
 * NF_E_NETWORK (status still set when given) */
int nf_http_request(struct nf_ctx *ctx, const struct nf_http_req *rq,
		    char **body, size_t *len, long *status);
int nf_http_get(struct nf_ctx *ctx, const char *url, size_t max,
		long timeout_ms, char **body, size_t *len);

/* ============================================ end boot section */

#endif
