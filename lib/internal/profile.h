/* SPDX-License-Identifier: MIT */
/* libnodeforge's private declarations: YAML positions, schema validation, the facet table.
 * Included by internal.h; not meant to be included alone. */
#ifndef NF_INTERNAL_PROFILE_H
#define NF_INTERNAL_PROFILE_H

/* ---- YAML adapter (lib/adapters/yaml.c) ----
 * Parse a YAML document into a jansson tree.  Every node's position is
 * recorded in `locs` (object: dotted path -> [file, line, col]).  Scalars
 * become strings unless they are plain (unquoted) and read as an integer,
 * a real, true/false or null.  Duplicate keys, anchors/aliases, tags and
 * multiple documents are errors. */
int nf_yaml_load(struct nf_ctx *ctx, const char *path, json_t **out,
		 json_t *locs, struct nf_diags *diags);
int nf_yaml_load_buf(struct nf_ctx *ctx, const char *name, const char *buf,
		     size_t len, json_t **out, json_t *locs,
		     struct nf_diags *diags);

/* Position of a dotted path in a locs object; 0 when unknown */
int nf_locs_get(const json_t *locs, const char *path, const char **file,
		unsigned *line, unsigned *col);

/* ---- schema validation (lib/schema.c) ----
 * A small typed schema, declared by each facet, checked against a parsed
 * tree; every error names file:line:col via locs. */
enum nf_type {
	NF_T_ANY = 0,
	NF_T_STR,
	NF_T_INT,
	NF_T_BOOL,
	NF_T_NUM,       /* integer or real */
	NF_T_SIZE,      /* "64M", "1G" or an integer of bytes */
	NF_T_LIMIT,     /* integer or "unlimited" */
	NF_T_STRLIST,   /* list of strings */
	NF_T_OBJ,       /* object with its own fields */
	NF_T_OBJLIST,   /* list of objects with their own fields */
	NF_T_MAP,       /* free-form object: string keys, scalar values */
	NF_T_PATH,      /* absolute path */
	NF_T_MODE,      /* octal string such as "0400" */
};

/* What characters a string value may hold.  Values that end up in
 * configuration files and boot scripts (slurm.conf, kickstarts, iPXE) get
 * a set narrow enough that no such file reads them as more than one
 * value; NF_CHARS_ANY leaves a value unchecked. */
enum nf_chars {
	NF_CHARS_ANY = 0,
	NF_CHARS_NAME,  /* letters, digits, '-', '_', '.'; a letter or digit first */
	NF_CHARS_HOST,  /* a host name or an IPv4/IPv6 address, optional :PORT */
	NF_CHARS_URL,   /* printable, no blank, no quote, '<', '>', '\', '`', '{', '}', '|', '^' */
	NF_CHARS_TEXT,  /* any text without a control character (no newline) */
};

/* Whether s holds only what `chars` allows (an empty name or host is
 * refused); and the set in words, for a message */
bool nf_chars_ok(const char *s, int chars);
const char *nf_chars_what(int chars);
/* Where a value is written into a file another program parses: 0 when s
 * holds only what `chars` allows, else the error, naming the value (its
 * control bytes escaped), what it is and the file */
int nf_render_check(struct nf_ctx *ctx, const char *file, const char *what,
		    const char *s, int chars);

struct nf_field {
	const char *name;
	int type;
	const struct nf_field *fields; /* NF_T_OBJ / NF_T_OBJLIST */
	const char *const *choices;    /* NF_T_STR: allowed values (NULL-ended) */
	bool required;
	int chars;                     /* enum nf_chars: strings, list items, map values */
};

int nf_schema_check(const json_t *obj, const struct nf_field *fields,
		    const char *path, const json_t *locs,
		    struct nf_diags *diags);
/* slurm.partitions, in a profile and in the site (lib/site.c: the site
 * file, the lower part, holds the field list the slurm facet uses) */
extern const struct nf_field nf_partition_fields[];
/* Parse sizes such as "64M", "1G", "45G" (powers of 1024) */
int nf_parse_size(const char *s, unsigned long long *out);

/* ---- facets (lib/facets/) ---- */
struct nf_facet_lint {
	struct nf_ctx *ctx;
	const struct nf_profile *profile;
	struct nf_diags *diags;
};

/* Defined by the image builder (lib/build.c) and the verifier (lib/verify.c) */
struct nf_apply;
struct nf_checkset;

/* How a unit stands to the first-boot verifier's gate
 * (nodeforge-verify.service, written by apply) */
enum nf_gate_how {
	NF_GATE_AFTER,          /* the gate starts after it: its checks read
				 * what the unit did */
	NF_GATE_WANTS,          /* the same, and the gate pulls it in */
	NF_GATE_GUARDS,         /* the unit starts only after the gate passed */
};
struct nf_gate_unit {
	const char *unit;       /* "chrony-wait": ".service" when no suffix */
	int how;                /* enum nf_gate_how */
};
#define NF_GATE_MAX 32

/* A secret file a facet owns: delivered to the node at enrollment, never
 * in an image (nodeforge ci's static stage fails on one) */
#define NF_SECRET_SIGNS 1u      /* the node's key its verdicts are signed with */
struct nf_secret_file {
	const char *id;         /* the ci case: "ci.secrets.munge_key" */
	const char *path;       /* where the node keeps it (absolute) */
	const char *name;       /* a file name no image holds at any path, or NULL */
	const char *what;       /* the finding, in words */
	const char *remedy;
	unsigned flags;         /* NF_SECRET_* */
};
#define NF_SECRETS_MAX 8

/* What a facet's daemon checks (nodeforge ci, static stage) are given: the
 * unpacked image and the means to run its own programs in it (ci's
 * callbacks: the facets call no ci code).  run()
 * runs ARGV chrooted in the image as node HOST and adds case ID: a
 * program still running after GRACE_MS > 0 has read its configuration;
 * RC_COUNTS: a non-zero exit fails too; WANT: a string the output must
 * hold, or NULL */
struct nf_daemon_ci {
	struct nf_ctx *ctx;
	const char *root;               /* the unpacked image */
	const json_t *prof;             /* its resolved profile */
	const char *inventory;          /* or NULL */
	const struct nf_site *site;     /* or NULL */
	int el;                         /* EL family (paths differ) */
	void *data;
	int (*run)(struct nf_daemon_ci *d, const char *host, const char *id,
		   const char *const *argv, long grace_ms, int rc_counts,
		   const char *want);
	/* Writes the cluster part of slurm.conf into the image (the
	 * inventory's, or a stand-in of one node of the role) and names a
	 * node of the role in host */
	int (*cluster_conf)(struct nf_daemon_ci *d, char *host, size_t hsz);
};
/* 1 when REL (relative to the image root) exists, links included
 * (lib/facet_lint.c) */
int nf_daemon_ci_has(const struct nf_daemon_ci *d, const char *rel);

struct nf_facet {
	const char *name;     /* facet name, also its profile section */
	const char *summary;
	const struct nf_field *schema;
	/* the section is a mapping of scalar values (NF_T_MAP) whose keys
	 * are the facet's to check, rather than the fields of schema */
	bool map;
	/* Cross-field validation and best-practice lint of the resolved
	 * profile; diags carry positions */
	int (*lint)(struct nf_facet_lint *l, const json_t *section);
	/* Kernel arguments this facet adds to the boot artifacts */
	int (*boot_args)(const json_t *section, json_t *args);
	/* What the profile leaves to the site: fills SECTION from the site
	 * file's public part when the profile does not say */
	void (*from_site)(json_t *section, const json_t *site);
	/* What the image build writes into the image root for this facet */
	int (*apply)(struct nf_apply *a, const json_t *section);
	/* What the verifier checks on a live node or an image root */
	const struct nf_checkset *checks;
	/* The hooks below are called for every facet, with the profile's
	 * section or NULL where it has none.
	 * The units the first-boot gate is ordered with: up to max into
	 * out, their number returned (strings borrowed from the profile or
	 * static) */
	size_t (*gate_units)(const struct nf_apply *a, const json_t *section,
			     struct nf_gate_unit *out, size_t max);
	/* Directories whose contents must outlive a reboot: the node warns
	 * when one is in RAM (a network-booted root) */
	size_t (*durable_dirs)(const struct nf_apply *a, const json_t *section,
			       const char **out, size_t max);
	/* nodeforge ci: the image's own programs parse what the facet wrote
	 * (d->run per program the image has) */
	int (*daemon_checks)(struct nf_daemon_ci *d, const json_t *section);
	/* The secret files the facet owns on a node */
	size_t (*secrets)(const json_t *section, struct nf_secret_file *out,
			  size_t max);
};

extern const struct nf_facet *const nf_facets[];
extern const size_t nf_nfacets;
const struct nf_facet *nf_facet_find(const char *name);
/* The definition of check ID in any facet, or NULL */
const struct nf_check_def *nf_check_find(const char *id);

/* Position helper for facet lint: diag at the value's location
 * (lib/facet_lint.c) */
int nf_lint_at(struct nf_facet_lint *l, const char *path, int sev,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The key of a kernel argument ("hugepages" of "hugepages=160", the whole
 * word without '=') into key; 1 if it has a value, 0 if not, NF_E_LIMIT
 * when keysz is too small, NF_E_INVALID when it is more than one
 * (lib/cmdline.c) */
int nf_kargs_key(const char *arg, char *key, size_t keysz);

/* The site as profiles may carry it: no secret sources (lib/site.c) */
const json_t *nf_site_public(const struct nf_site *site);
/* The value at a dotted path of a resolved profile's objects
 * ("gpu.nvswitch"), or NULL */
const json_t *nf_profile_get(const json_t *prof, const char *path);
/* 1 when obj (an artifact) has no 'when', or the profile setting its
 * 'when' names is true: the role needs it */
int nf_profile_runs_when(const json_t *prof, const json_t *obj);
/* "10.0.0.0/16" -> host-order network and prefix length */
int nf_parse_cidr(const char *s, uint32_t *net, unsigned *prefix);

#endif
