/* SPDX-License-Identifier: MIT */
/* libnodeforge's public API: secrets: munge keys, sealing, enrollment and rotation.  Included by nodeforge.h,
 * which every user includes; not meant to be included alone. */
#ifndef NF_SECRETS_H
#define NF_SECRETS_H

/* ============================================ secrets: munge keys, enrollment
 * Secrets reach a node at first boot through a sealed channel of the boot
 * server; images and boot trees carry only fingerprints (sha256:<hex>). */

#define NF_MUNGE_KEY_LEN 1024
#define NF_MUNGE_KEY_MIN 32
#define NF_MUNGE_KEY_MAX 1024
#define NF_PASSWORD_MAX 256
/* "sha256:" + 64 hex digits + NUL */
#define NF_FINGERPRINT_LEN 72

void nf_fingerprint(const void *buf, size_t len, char out[NF_FINGERPRINT_LEN]);
/* A new 1024-byte munge key from the CSPRNG at `path` (never replaces
 * one), mode 0400, owner `owner` (NULL: the caller); its fingerprint */
int nf_munge_key_new(struct nf_ctx *ctx, const char *path, const char *owner,
		     char fp[NF_FINGERPRINT_LEN]);
/* Fingerprint of a key file (refused when readable by group or others) */
int nf_munge_fingerprint_file(struct nf_ctx *ctx, const char *path,
			      char fp[NF_FINGERPRINT_LEN]);

/* For the verifier's munge facet: compare the key at `path` with the
 * site's fingerprint (profile.site.fingerprints.munge_key) and, after a
 * rotation, the previous one.  Returns a verdict (>= 0) or a negative
 * error; the message says what was seen, and the remedy text for the
 * verdict is nf_munge_fingerprint_remedy(verdict). */
enum nf_munge_fp_verdict {
	NF_MUNGE_FP_OK = 0,
	NF_MUNGE_FP_PREVIOUS,   /* still the key before the last rotation */
	NF_MUNGE_FP_OTHER,      /* a key the site does not know */
	NF_MUNGE_FP_MISSING,    /* no key file */
};
int nf_munge_fingerprint_verdict(struct nf_ctx *ctx, const char *path,
				 const char *expected, const char *previous,
				 char seen[NF_FINGERPRINT_LEN]);
const char *nf_munge_fingerprint_remedy(int verdict);

/* A password slurmdbd.conf can hold: printable, no '#', no edge spaces */
int nf_password_ok(const char *pw, size_t len);
/* Set StoragePass= in ROOT/rel (other lines kept), 0600, uid/gid (-1:
 * unchanged) */
int nf_slurmdbd_set_password(struct nf_ctx *ctx, int rootfd, const char *rel,
			     const char *pw, long uid, long gid);

/*
 * Enrollment, server side.  Transport-independent: the HTTP server hands
 * nf_enroll_claim() the peer address and the request body and sends back
 * the JSON and status it gets.  State (windows, claims, refusals) lives in
 * STATE_DIR/enroll.json (directory mode 0700, never under a served tree),
 * every change under a lock and published atomically.
 */
struct nf_enroll;

/* One machine the server may enroll (from the inventory) */
struct nf_enroll_node {
	const char *name;
	const char *role;
	const char *rack;        /* may be NULL */
	const char *mac;         /* "52:54:00:..."; NULL: not checked */
	uint32_t ip;             /* IPv4, host byte order */
};

struct nf_enroll_opts {
	const char *state_dir;
	const char *served_tree;   /* refuse a state dir inside it; or NULL */
	const char *munge_key;     /* path of the cluster's munge key */
	const char *slurmdbd_password;          /* path, or NULL */
	const char *slurmdbd_password_command;  /* or a command, or NULL */
};

#define NF_ENROLL_BODY_MAX 4096
#define NF_ENROLL_RESPONSE_MAX (128 * 1024)
/* Refusals are appended to STATE/refusals.log, one JSON object a line;
 * past this size it becomes refusals.log.1 (the one before is dropped) */
#define NF_ENROLL_REFUSALS_ROTATE (1u << 20)

int nf_enroll_new(struct nf_ctx *ctx, const struct nf_enroll_opts *o,
		  struct nf_enroll **out);
void nf_enroll_free(struct nf_enroll *e);
/* Nodes are copied */
int nf_enroll_add_node(struct nf_enroll *e, const struct nf_enroll_node *n);
/* Clock for tests (0: the real time) */
void nf_enroll_set_now(struct nf_enroll *e, long long now);
/* Arm windows of `seconds` for names; a claimed node is refused unless
 * `reenroll` (its claim is then dropped, and recorded) */
int nf_enroll_open(struct nf_enroll *e, char *const *names, size_t n,
		   long long seconds, int reenroll);
/* A claim: 200 with the sealed secrets, or 400/403/409/500 with
 * {"error", "reason"}; the refusal is recorded and logged at error level.
 * Returns 0 when a response was made (whatever its status) */
int nf_enroll_claim(struct nf_enroll *e, const char *peer_addr,
		    const void *body, size_t len, json_t **response,
		    int *http_status);
/* The state: {"windows": {...}, "claims": {...}, "refusals": [...]};
 * caller decrefs */
int nf_enroll_state(struct nf_enroll *e, json_t **out);

#define NF_ENROLL_STATE_DEFAULT "/var/lib/nodeforge"
/* An enrollment server for the site's secrets (secrets.munge_key.path,
 * secrets.slurmdbd_password.path|command) and the inventory's nodes;
 * state_dir NULL: the site's server.state_dir, else the default */
int nf_enroll_from_site(struct nf_ctx *ctx, const struct nf_site *site,
			const struct nf_inventory *inv, const char *state_dir,
			const char *served_tree, struct nf_enroll **out);
const char *nf_enroll_state_dir(const struct nf_enroll *e);
/* Secrets handed over in a credentials directory (systemd's
 * $CREDENTIALS_DIRECTORY, from the unit's LoadCredential=): DIR/munge.key
 * and DIR/slurmdbd.password, where present, replace the site's paths
 * (the password also its command).  dir NULL or empty: nothing */
#define NF_CREDENTIAL_MUNGE_KEY "munge.key"
#define NF_CREDENTIAL_SLURMDBD_PASSWORD "slurmdbd.password"
int nf_enroll_credentials(struct nf_enroll *e, const char *dir);

/* Enrollment, node side */
struct nf_enroll_client_opts {
	const char *server;     /* http://HOST[:PORT] */
	const char *node;
	const char *mac;        /* NULL: from the kernel cmdline or /sys */
	const char *root;       /* target root; NULL or "/": this system */
	const char *bind;       /* local address to send from; or NULL */
	long timeout_s;         /* per attempt */
	long retry_s;           /* keep retrying transport failures this long */
};

struct nf_enroll_result {
	char role[64];
	char munge_fingerprint[NF_FINGERPRINT_LEN];
	int slurmdbd_password;  /* 1 when StoragePass was written */
};

/* A claim in progress: the node's key pair and nonce */
struct nf_enroll_claim {
	uint8_t priv[32];
	uint8_t pub[32];
	uint8_t nonce[16];
	char node[256];
};

/* Make the key pair and the request body (caller frees *body) */
int nf_enroll_claim_make(struct nf_ctx *ctx, struct nf_enroll_claim *c,
			 const char *node, const char *mac, char **body);
/* Open a response to the claim and write the secrets below `root`; wipes
 * the private key whatever happens */
int nf_enroll_claim_accept(struct nf_ctx *ctx, struct nf_enroll_claim *c,
			   const char *resp, size_t len, const char *root,
			   struct nf_enroll_result *res);
/* The whole node side: claim, POST, accept */
int nf_enroll_client(struct nf_ctx *ctx, const struct nf_enroll_client_opts *o,
		     struct nf_enroll_result *res);
/* The cluster of an inventory (lib/cluster.c): the cluster part of
 * slurm.conf (controllers, nodes, partitions: /etc/slurm/cluster.conf) and
 * the /etc/hosts block of every node; checks that the inventory has a
 * controller, that the roles agree on slurm.conf and that the site's
 * controllers, if it names any, are the inventory's (-ENOENT: no node
 * runs slurmctld).  Caller frees both */
int nf_cluster_render(struct nf_ctx *ctx, const char *inventory,
		      const struct nf_site *site, char **slurm_conf, char **hosts);
/* On a node: fetch SERVER/cluster/slurm.conf and SERVER/cluster/hosts,
 * each with its signature (NAME.sig) by the public key at `pubkey` (NULL:
 * ROOT/etc/nodeforge/signing.pub, the key the image trusts), and only
 * when both verify install them (ROOT/etc/slurm/cluster.conf; the marked
 * block of ROOT/etc/hosts), each atomically; `root` NULL is /.
 * NF_E_SIGNATURE: a file unsigned or not signed by that key */
int nf_cluster_fetch(struct nf_ctx *ctx, const char *server, const char *root,
		     const char *pubkey);
/* `key=` of a kernel command line (sysroot-relative /proc/cmdline);
 * caller frees; -ENOENT when absent */
int nf_cmdline_get(struct nf_ctx *ctx, const char *key, char **out);

/* Whether a resolved profile's role runs a Slurm daemon (slurm.daemons:
 * slurmd, slurmctld, slurmdbd): the one answer every facet uses */
int nf_profile_runs(const json_t *prof, const char *daemon);

/* lib/distro.c: the distributions images are built for */
struct nf_distro {
	const char *name;   /* as in the site file: debian13, rocky9 */
	const char *suite;  /* mmdebstrap suite, or the EL release */
	int el;             /* dnf --installroot, EL paths */
};
const struct nf_distro *nf_distro_find(const char *name);
int nf_distro_is_el(const char *name);
/* The distros a site file (and a profile's distros:) may name: the ones
 * the shipped profiles are made and tested for, each in the table */
extern const char *const nf_site_distros[];

/*
 * Munge key rotation (lib/enroll.c; docs/nodeforge-keys.md).  The server
 * stages a new key in the state directory and a plan of groups
 * (controllers, then racks); nodes poll with nf_rotate_client and get the
 * new key sealed to a fresh key pair, proving they hold the current key;
 * a group switches when the driver lets it (nf_rotate_go).
 */
int nf_rotate_begin(struct nf_enroll *e, char fp[NF_FINGERPRINT_LEN]);
/* An interrupted rotation: its next key made if begin stopped before it;
 * fp its fingerprint.  NF_E_NOTFOUND without a plan */
int nf_rotate_resume(struct nf_enroll *e, char fp[NF_FINGERPRINT_LEN]);
int nf_rotate_go(struct nf_enroll *e, int group);
/* Idempotent: a finish stopped anywhere is completed by the next one */
int nf_rotate_finish(struct nf_enroll *e);
/* Back to the old key: the server's key restored, nodes that switched get
 * the old key on their next poll; idempotent; -EINVAL for a finished
 * rotation */
int nf_rotate_abort(struct nf_enroll *e);
/* The plan (rotation.json); caller decrefs */
int nf_rotate_status(struct nf_enroll *e, json_t **out);
/* A verdict POST for `name`: 1 when the node is not enrolled (its
 * address is all there is), 0 when time (unix seconds, within 300 s of
 * the server's clock) and proof (base64 nf_verdict_proof) hold with the
 * cluster's munge key (or the other key of a rotation under way),
 * NF_E_SIGNATURE (message set) otherwise */
/* The context the enrollment state reports its errors in */
struct nf_ctx *nf_enroll_ctx(const struct nf_enroll *e);
int nf_enroll_verdict_auth(struct nf_enroll *e, const char *name,
			   const char *time, const char *proof,
			   const void *body, size_t len);
/* A node's poll: same contract as nf_enroll_claim */
int nf_rotate_poll(struct nf_enroll *e, const char *peer_addr,
		   const void *body, size_t len, json_t **response,
		   int *http_status);

struct nf_rotate_client_opts {
	const char *server;
	const char *node;
	const char *root;
	const char *bind;
	const char *restart_cmd;  /* run after switching; NULL: none */
	long timeout_s;           /* per request */
	long wait_s;              /* give up after this long */
	long poll_ms;             /* between polls */
};

struct nf_rotate_result {
	int staged;
	int switched;
	char munge_fingerprint[NF_FINGERPRINT_LEN];  /* the key held */
};

int nf_rotate_client(struct nf_ctx *ctx, const struct nf_rotate_client_opts *o,
		     struct nf_rotate_result *res);

/* ============================================ end of secrets section */

#endif
