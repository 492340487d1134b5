/* SPDX-License-Identifier: MIT */
/*
 * Inventory: racks.yaml -> validated nodes.
 *
 *   nodes:
 *     - name: gpu-[01-16]          # a Slurm hostlist expands to many nodes
 *       mac: 52:54:00:00:01:01+    # start value, +1 per node ...
 *       ip: [10.0.1.11, ...]       # ... or a list of exactly as many values
 *       bmc: 10.1.1.11+          # or {address: 10.1.1.11+, protocol:
 *                                #     ipmi|redfish, port: N, scheme: http}
 *       role: compute
 *       rack: r01
 *       gpu_type: h200             # optional: its GPUs, when not its role's
 *
 * A value ending in '+' is the first of a run that increases by one for
 * each name of the range, in the order the hostlist expands.  A plain value
 * is allowed only when the name is a single node.  Every error is reported
 * at file:line:col of the offending key or list element.
 */
#include "internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <sys/stat.h>

#define NF_INV_NAME_MAX 63
#define NF_INV_ROLE_MAX 64
#define NF_INV_RACK_MAX 64
#define NF_INV_MAX_BYTES (16u << 20)

struct nf_node_loc {
	unsigned ip_line, ip_col;
};

struct nf_inventory {
	char *path;
	struct nf_node *nodes;
	struct nf_node_loc *locs;
	size_t n, cap;
	json_t *by_name; /* name -> index */
};

/* ------------------------------------------------------ address parsing */

void nf_mac_format(const uint8_t mac[6], char sep, char out[18])
{
	snprintf(out, 18, "%02x%c%02x%c%02x%c%02x%c%02x%c%02x", mac[0], sep,
		 mac[1], sep, mac[2], sep, mac[3], sep, mac[4], sep, mac[5]);
}

int nf_ipv4_parse(const char *s, uint32_t *ip)
{
	uint32_t v = 0;
	const char *p = s;

	if (!s)
		return NF_E_PARSE;
	for (int i = 0; i < 4; i++) {
		unsigned part = 0;
		int digits = 0;

		if (p[0] == '0' && isdigit((unsigned char)p[1]))
			return NF_E_PARSE; /* leading zero: octal or decimal? */
		while (isdigit((unsigned char)*p)) {
			part = part * 10 + (unsigned)(*p++ - '0');
			if (++digits > 3 || part > 255)
				return NF_E_PARSE;
		}
		if (!digits)
			return NF_E_PARSE;
		v = v << 8 | part;
		if (i < 3 && *p++ != '.')
			return NF_E_PARSE;
	}
	if (*p)
		return NF_E_PARSE;
	*ip = v;
	return 0;
}

void nf_ipv4_format(uint32_t ip, char out[16])
{
	snprintf(out, 16, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255,
		 (ip >> 8) & 255, ip & 255);
}

static uint32_t prefix_mask(unsigned prefix)
{
	return prefix ? ~(uint32_t)0 << (32 - prefix) : 0;
}

int nf_cidr_parse(const char *s, uint32_t *net, unsigned *prefix)
{
	char buf[32];
	const char *slash;
	unsigned long pl;
	char *end;
	uint32_t ip;

	if (!s || !(slash = strchr(s, '/')) || (size_t)(slash - s) >= sizeof(buf))
		return NF_E_PARSE;
	memcpy(buf, s, (size_t)(slash - s));
	buf[slash - s] = '\0';
	if (nf_ipv4_parse(buf, &ip))
		return NF_E_PARSE;
	if (!isdigit((unsigned char)slash[1]))
		return NF_E_PARSE;
	errno = 0;
	pl = strtoul(slash + 1, &end, 10);
	if (errno || *end || pl > 32)
		return NF_E_PARSE;
	if (ip & ~prefix_mask((unsigned)pl))
		return NF_E_INVALID;
	*net = ip;
	*prefix = (unsigned)pl;
	return 0;
}

int nf_cidr_contains(uint32_t net, unsigned prefix, uint32_t ip)
{
	return (ip & prefix_mask(prefix)) == net;
}

/* ------------------------------------------------------------- loading */

struct loader {
	struct nf_ctx *ctx;
	struct nf_inventory *inv;
	json_t *locs;
	struct nf_diags *diags;
	json_t *macs, *ips, *roles; /* seen values -> node index; role cache */
	int errors;
};

static void at(struct loader *l, const char *path, unsigned *line,
	       unsigned *col)
{
	const char *f;

	if (nf_locs_get(l->locs, path, &f, line, col)) {
		*line = 0;
		*col = 0;
	}
}

static void load_err(struct loader *l, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void load_err(struct loader *l, const char *path, const char *fmt, ...)
{
	unsigned line, col;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	at(l, path, &line, &col);
	nf_diag_add(l->diags, l->inv->path, line, col, NF_SEV_ERROR, "%s", msg);
	if (!l->errors++)
		nf_fail(l->ctx, NF_E_INVALID, "%s:%u:%u: %s", l->inv->path, line,
			col, msg);
}

enum vkind { V_MAC, V_IP };

/* One address field of an entry, expanded to n values */
static int expand_addr(struct loader *l, const json_t *v, const char *path,
		       enum vkind kind, size_t n, const char *range,
		       uint64_t *out, char (*where)[160])
{
	const char *what = kind == V_MAC ? "MAC" : "IP";
	const char *key = strrchr(path, '.') + 1;

	if (json_is_array(v)) {
		if (json_array_size(v) != n) {
			load_err(l, path,
			    "'%s' has %zu names but '%s' lists %zu values",
			    range, n, key, json_array_size(v));
			return -1;
		}
		for (size_t i = 0; i < n; i++) {
			const json_t *e = json_array_get(v, i);
			uint8_t mac[6] = { 0 };
			uint32_t ip = 0;
			int r;

			snprintf(where[i], sizeof(where[i]), "%s[%zu]", path, i);
			if (!json_is_string(e)) {
				load_err(l, where[i], "'%s' values must be strings",
				    key);
				return -1;
			}
			if (kind == V_MAC) {
				r = nf_mac_parse(json_string_value(e), mac);
				out[i] = (uint64_t)mac[0] << 40 |
					 (uint64_t)mac[1] << 32 |
					 (uint64_t)mac[2] << 24 |
					 (uint64_t)mac[3] << 16 |
					 (uint64_t)mac[4] << 8 | mac[5];
			} else {
				r = nf_ipv4_parse(json_string_value(e), &ip);
				out[i] = ip;
			}
			if (r) {
				load_err(l, where[i], "malformed %s address '%s'%s",
				    what, json_string_value(e),
				    r == NF_E_INVALID
					    ? " (multicast or all-zero)" : "");
				return -1;
			}
		}
		return 0;
	}
	if (!json_is_string(v)) {
		load_err(l, path, "'%s' must be a string or a list of strings", key);
		return -1;
	}
	{
		const char *s = json_string_value(v);
		size_t len = strlen(s);
		int inc = len > 0 && s[len - 1] == '+';
		char buf[64];
		uint64_t start, max;
		int r;

		if (len >= sizeof(buf)) {
			load_err(l, path, "malformed %s address '%.40s...'", what, s);
			return -1;
		}
		memcpy(buf, s, len + 1);
		if (inc)
			buf[len - 1] = '\0';
		if (kind == V_MAC) {
			uint8_t mac[6] = { 0 };

			r = nf_mac_parse(buf, mac);
			start = (uint64_t)mac[0] << 40 | (uint64_t)mac[1] << 32 |
				(uint64_t)mac[2] << 24 | (uint64_t)mac[3] << 16 |
				(uint64_t)mac[4] << 8 | mac[5];
			max = 0xffffffffffffULL;
		} else {
			uint32_t ip = 0;

			r = nf_ipv4_parse(buf, &ip);
			start = ip;
			max = 0xffffffffULL;
		}
		if (r) {
			load_err(l, path, "malformed %s address '%s'%s", what, s,
			    r == NF_E_INVALID ? " (multicast or all-zero)" : "");
			return -1;
		}
		if (!inc && n > 1) {
			load_err(l, path,
			    "'%s' has %zu names but '%s' is one value; give a "
			    "list of %zu or a start value ending in '+'",
			    range, n, key, n);
			return -1;
		}
		if (start + (n - 1) > max) {
			load_err(l, path, "%s range '%s' for %zu nodes runs past the "
				     "last address", what, s, n);
			return -1;
		}
		if (kind == V_MAC && ((start + n - 1) >> 40 & 1) != (start >> 40 & 1)) {
			load_err(l, path, "MAC range '%s' for %zu nodes runs into "
				     "another vendor prefix", s, n);
			return -1;
		}
		for (size_t i = 0; i < n; i++) {
			out[i] = start + i;
			snprintf(where[i], sizeof(where[i]), "%s", path);
		}
	}
	return 0;
}

static int role_ok(struct loader *l, const char *role, const char *path)
{
	const char *dir = nf_ctx_profiles_dir(l->ctx);
	json_t *cached;
	char *file;
	struct stat st;
	int ok = 0;

	if (!*role || strlen(role) > NF_INV_ROLE_MAX) {
		load_err(l, path, "invalid role name '%s'", role);
		return 0;
	}
	for (const char *p = role; *p; p++)
		if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) &&
		    *p != '-' && *p != '_') {
			load_err(l, path, "invalid role name '%s'", role);
			return 0;
		}
	if (!dir || !*dir)
		return 1;
	cached = json_object_get(l->roles, role);
	if (cached)
		ok = json_is_true(cached);
	else {
		file = nf_asprintf("%s/%s.yaml", dir, role);
		if (!file)
			return 0;
		if (stat(file, &st) == 0 && S_ISREG(st.st_mode)) {
			json_t *doc = NULL;

			ok = 1;
			/* a profile that only exists to be inherited is not a
			 * role a machine can boot; a profile with errors is
			 * reported by lint, not here */
			if (nf_yaml_load(NULL, file, &doc, NULL, NULL) == 0) {
				if (json_is_true(json_object_get(doc, "abstract")) ||
				    json_is_false(json_object_get(doc, "role")))
					ok = -1;
				json_decref(doc);
			}
		}
		free(file);
		json_object_set_new(l->roles, role,
				    ok == 1 ? json_true() : json_false());
		if (ok == -1) {
			load_err(l, path, "unknown role '%s': profile '%s/%s.yaml' "
				     "is abstract", role, dir, role);
			return 0;
		}
	}
	if (!ok)
		load_err(l, path, "unknown role '%s': no profile '%s/%s.yaml'", role,
		    dir, role);
	return ok == 1;
}

static int name_ok(const char *s)
{
	size_t len = strlen(s);

	if (!len || len > NF_INV_NAME_MAX || s[0] == '-' || s[len - 1] == '-')
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-')
			return 0;
	return 1;
}

static int add_node(struct nf_inventory *inv, struct nf_node *nd,
		    struct nf_node_loc *lc)
{
	if (inv->n == inv->cap) {
		size_t cap = inv->cap ? inv->cap * 2 : 64;
		struct nf_node *v = realloc(inv->nodes, cap * sizeof(*v));
		struct nf_node_loc *w;

		if (!v)
			return -ENOMEM;
		inv->nodes = v;
		w = realloc(inv->locs, cap * sizeof(*w));
		if (!w)
			return -ENOMEM;
		inv->locs = w;
		inv->cap = cap;
	}
	inv->nodes[inv->n] = *nd;
	inv->locs[inv->n] = *lc;
	inv->n++;
	return 0;
}

/* The settings of a mapping `bmc:` besides its address: protocol, port,
 * scheme; 0, or -1 after an error */
static int bmc_opts(struct loader *l, const json_t *bmc, const char *path,
		    struct nf_node *tmpl)
{
	static const char *const keys[] = { "address", "protocol", "port",
					    "scheme", NULL };
	char kpath[128];
	const char *k;
	json_t *v;
	int bad = 0;

	json_object_foreach((json_t *)bmc, k, v) {
		int known = 0;

		for (size_t i = 0; keys[i]; i++)
			known |= !strcmp(k, keys[i]);
		snprintf(kpath, sizeof(kpath), "%s.%s", path, k);
		if (!known) {
			load_err(l, kpath, "unknown key '%s' (expected address, "
				 "protocol, port, scheme)", k);
			bad = 1;
		} else if (!strcmp(k, "protocol")) {
			const char *p = json_string_value(v);

			if (p && !strcmp(p, "ipmi"))
				tmpl->bmc_protocol = NF_BMC_IPMI;
			else if (p && !strcmp(p, "redfish"))
				tmpl->bmc_protocol = NF_BMC_REDFISH;
			else {
				load_err(l, kpath, "'protocol' must be ipmi or "
					 "redfish");
				bad = 1;
			}
		} else if (!strcmp(k, "port")) {
			if (!json_is_integer(v) || json_integer_value(v) < 1 ||
			    json_integer_value(v) > 65535) {
				load_err(l, kpath, "'port' must be a number from "
					 "1 to 65535");
				bad = 1;
			} else {
				tmpl->bmc_port = (uint16_t)json_integer_value(v);
			}
		} else if (!strcmp(k, "scheme")) {
			const char *p = json_string_value(v);

			if (p && (!strcmp(p, "http") || !strcmp(p, "https")))
				tmpl->bmc_http = !strcmp(p, "http");
			else {
				load_err(l, kpath, "'scheme' must be http or "
					 "https");
				bad = 1;
			}
		}
	}
	if (!json_object_get(bmc, "address")) {
		load_err(l, path, "'bmc' has no 'address'");
		bad = 1;
	}
	if (!bad && tmpl->bmc_http && tmpl->bmc_protocol != NF_BMC_REDFISH) {
		snprintf(kpath, sizeof(kpath), "%s.scheme", path);
		load_err(l, kpath, "'scheme' is for protocol: redfish");
		bad = 1;
	}
	return bad ? -1 : 0;
}

static const char *const entry_keys[] = { "name", "mac", "ip", "role",
					  "rack", "bmc", "gpu_type", NULL };

static int load_entry(struct loader *l, const json_t *e, size_t idx)
{
	char path[64], kpath[96];
	const json_t *name, *role, *rack, *bmc, *gtype;
	const char *k;
	json_t *v;
	char **names = NULL;
	size_t n = 0;
	uint64_t *macs = NULL, *ips = NULL, *bmcs = NULL;
	char (*wmac)[160] = NULL, (*wip)[160] = NULL, (*wbmc)[160] = NULL;
	char rackbuf[32];
	const char *rackstr = "";
	struct nf_node tmpl = { 0 };
	int bad = 0, r = 0;

	snprintf(path, sizeof(path), "nodes[%zu]", idx);
	if (!json_is_object(e)) {
		load_err(l, path, "a node must be a mapping with name, mac, ip, role");
		return 0;
	}
	json_object_foreach((json_t *)e, k, v) {
		int known = 0;

		for (size_t i = 0; entry_keys[i]; i++)
			known |= !strcmp(k, entry_keys[i]);
		if (!known) {
			snprintf(kpath, sizeof(kpath), "%s.%s", path, k);
			load_err(l, kpath, "unknown key '%s' (expected name, mac, ip, "
				      "role, rack, bmc, gpu_type)", k);
			bad = 1;
		}
	}
	static const char *const required[] = { "name", "mac", "ip", "role" };
	for (size_t i = 0; i < NF_ARRAY_SIZE(required); i++)
		if (!json_object_get(e, required[i])) {
			load_err(l, path, "node has no '%s'", required[i]);
			bad = 1;
		}
	if (bad)
		return 0;
	name = json_object_get(e, "name");
	role = json_object_get(e, "role");
	rack = json_object_get(e, "rack");
	bmc = json_object_get(e, "bmc");
	gtype = json_object_get(e, "gpu_type");
	if (gtype) {
		const char *t = json_string_value(gtype);
		size_t tl = t ? strlen(t) : 0;

		snprintf(kpath, sizeof(kpath), "%s.gpu_type", path);
		if (!tl || tl > 32 || strspn(t, "abcdefghijklmnopqrstuvwxyz0123456789_") != tl) {
			load_err(l, kpath, "'gpu_type' must be a GRES type such as "
				 "h100 or h200 (a-z, 0-9, _)");
			bad = 1;
		}
	}
	snprintf(kpath, sizeof(kpath), "%s.name", path);
	if (!json_is_string(name)) {
		load_err(l, kpath, "'name' must be a string");
		return 0;
	}
	r = nf_hostlist_expand(json_string_value(name), &names, &n,
			       NF_INVENTORY_MAX_NODES - l->inv->n);
	if (r == NF_E_LIMIT) {
		load_err(l, kpath, "'%s' expands past %d nodes",
		    json_string_value(name), NF_INVENTORY_MAX_NODES);
		return 0;
	}
	if (r < 0 && r != -ENOMEM) {
		load_err(l, kpath, "malformed hostlist '%s'", json_string_value(name));
		return 0;
	}
	if (r)
		return r;
	for (size_t i = 0; i < n; i++)
		if (!name_ok(names[i])) {
			load_err(l, kpath, "invalid host name '%s'", names[i]);
			bad = 1;
			break;
		}
	snprintf(kpath, sizeof(kpath), "%s.role", path);
	if (!json_is_string(role)) {
		load_err(l, kpath, "'role' must be a string");
		bad = 1;
	} else if (!role_ok(l, json_string_value(role), kpath)) {
		bad = 1;
	}
	if (rack) {
		snprintf(kpath, sizeof(kpath), "%s.rack", path);
		if (json_is_string(rack) &&
		    strlen(json_string_value(rack)) <= NF_INV_RACK_MAX &&
		    (!*json_string_value(rack) ||
		     nf_chars_ok(json_string_value(rack), NF_CHARS_NAME))) {
			rackstr = json_string_value(rack);
		} else if (json_is_string(rack) &&
			   strlen(json_string_value(rack)) <= NF_INV_RACK_MAX) {
			char *shown = nf_text_escape(json_string_value(rack));

			load_err(l, kpath, "'rack' must be %s, not '%s'",
				 nf_chars_what(NF_CHARS_NAME), shown ? shown : "?");
			free(shown);
			bad = 1;
		} else if (json_is_integer(rack)) {
			snprintf(rackbuf, sizeof(rackbuf), "%lld",
				 (long long)json_integer_value(rack));
			rackstr = rackbuf;
		} else {
			load_err(l, kpath, "'rack' must be a short string");
			bad = 1;
		}
	}
	macs = calloc(n, sizeof(*macs));
	ips = calloc(n, sizeof(*ips));
	bmcs = calloc(n, sizeof(*bmcs));
	wmac = calloc(n, sizeof(*wmac));
	wip = calloc(n, sizeof(*wip));
	wbmc = calloc(n, sizeof(*wbmc));
	if (!macs || !ips || !bmcs || !wmac || !wip || !wbmc) {
		r = -ENOMEM;
		goto out;
	}
	snprintf(kpath, sizeof(kpath), "%s.mac", path);
	if (expand_addr(l, json_object_get(e, "mac"), kpath, V_MAC, n,
			json_string_value(name), macs, wmac))
		bad = 1;
	snprintf(kpath, sizeof(kpath), "%s.ip", path);
	if (expand_addr(l, json_object_get(e, "ip"), kpath, V_IP, n,
			json_string_value(name), ips, wip))
		bad = 1;
	if (bmc) {
		snprintf(kpath, sizeof(kpath), "%s.bmc", path);
		if (json_is_object(bmc)) {
			if (bmc_opts(l, bmc, kpath, &tmpl))
				bad = 1;
			bmc = json_object_get(bmc, "address");
			snprintf(kpath, sizeof(kpath), "%s.bmc.address", path);
		}
		if (bmc && expand_addr(l, bmc, kpath, V_IP, n,
				       json_string_value(name), bmcs, wbmc))
			bad = 1;
	}
	if (bad)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct nf_node nd = { 0 };
		struct nf_node_loc lc = { 0 };
		char key[24];
		json_t *prev;

		snprintf(kpath, sizeof(kpath), "%s.name", path);
		if ((prev = json_object_get(l->inv->by_name, names[i]))) {
			const struct nf_node *o =
				&l->inv->nodes[json_integer_value(prev)];
			load_err(l, kpath, "duplicate node name '%s' (first at line %u)",
			    names[i], o->line);
			continue;
		}
		snprintf(key, sizeof(key), "%012llx", (unsigned long long)macs[i]);
		if ((prev = json_object_get(l->macs, key))) {
			const struct nf_node *o =
				&l->inv->nodes[json_integer_value(prev)];
			char m[18];

			nf_mac_format(o->mac, ':', m);
			load_err(l, wmac[i], "duplicate MAC %s: node '%s' has the same "
					"as '%s'", m, names[i], o->name);
			continue;
		}
		snprintf(key, sizeof(key), "%08llx", (unsigned long long)ips[i]);
		if ((prev = json_object_get(l->ips, key))) {
			const struct nf_node *o =
				&l->inv->nodes[json_integer_value(prev)];
			char a[16];

			nf_ipv4_format(o->ip, a);
			load_err(l, wip[i], "duplicate IP %s: node '%s' has the same "
				       "as '%s'", a, names[i], o->name);
			continue;
		}
		for (int b = 0; b < 6; b++)
			nd.mac[b] = (uint8_t)(macs[i] >> (40 - 8 * b));
		nd.ip = (uint32_t)ips[i];
		nd.bmc = (uint32_t)bmcs[i];
		nd.bmc_port = tmpl.bmc_port;
		nd.bmc_protocol = tmpl.bmc_protocol;
		nd.bmc_http = tmpl.bmc_http;
		nd.file = l->inv->path;
		snprintf(kpath, sizeof(kpath), "%s", path);
		at(l, kpath, &nd.line, &nd.col);
		at(l, wip[i], &lc.ip_line, &lc.ip_col);
		nd.name = names[i];
		nd.role = nf_strdup(json_string_value(role));
		nd.rack = nf_strdup(rackstr);
		nd.gpu_type = nf_strdup(gtype ? json_string_value(gtype) : "");
		if (!nd.role || !nd.rack || !nd.gpu_type) {
			free(nd.role);
			free(nd.rack);
			free(nd.gpu_type);
			r = -ENOMEM;
			goto out;
		}
		if ((r = add_node(l->inv, &nd, &lc))) {
			free(nd.role);
			free(nd.rack);
			free(nd.gpu_type);
			goto out;
		}
		names[i] = NULL; /* owned by the node now */
		json_object_set_new(l->inv->by_name, nd.name,
				    json_integer((json_int_t)l->inv->n - 1));
		snprintf(key, sizeof(key), "%012llx", (unsigned long long)macs[i]);
		json_object_set_new(l->macs, key,
				    json_integer((json_int_t)l->inv->n - 1));
		snprintf(key, sizeof(key), "%08llx", (unsigned long long)ips[i]);
		json_object_set_new(l->ips, key,
				    json_integer((json_int_t)l->inv->n - 1));
	}
out:
	nf_strv_free(names, n);
	free(macs);
	free(ips);
	free(bmcs);
	free(wmac);
	free(wip);
	free(wbmc);
	return r;
}

int nf_inventory_check_network(struct nf_ctx *ctx,
			       const struct nf_inventory *inv,
			       const char *cidr, struct nf_diags *diags)
{
	uint32_t net, bcast;
	unsigned prefix;
	int errors = 0;

	if (nf_cidr_parse(cidr, &net, &prefix))
		return nf_fail(ctx, NF_E_INVALID,
			       "malformed provisioning network '%s'", cidr);
	bcast = net | ~prefix_mask(prefix);
	for (size_t i = 0; i < inv->n; i++) {
		const struct nf_node *nd = &inv->nodes[i];
		char a[16];
		const char *why = NULL;

		if (!nf_cidr_contains(net, prefix, nd->ip))
			why = "is outside the provisioning network";
		else if (prefix < 31 && (nd->ip == net || nd->ip == bcast))
			why = "is the network or broadcast address of";
		if (!why)
			continue;
		nf_ipv4_format(nd->ip, a);
		nf_diag_add(diags, inv->path, inv->locs[i].ip_line,
			    inv->locs[i].ip_col, NF_SEV_ERROR,
			    "IP %s of node '%s' %s %s", a, nd->name, why, cidr);
		if (!errors++)
			nf_fail(ctx, NF_E_INVALID, "%s:%u:%u: IP %s of node '%s' "
				"%s %s", inv->path, inv->locs[i].ip_line,
				inv->locs[i].ip_col, a, nd->name, why, cidr);
	}
	return errors ? NF_E_INVALID : 0;
}

/* The site's provisioning network, or NULL */
static const char *site_cidr(const struct nf_site *site)
{
	const json_t *j = site ? nf_site_json(site) : NULL;

	j = json_object_get(j, "networks");
	j = json_object_get(j, "provisioning");
	return json_string_value(json_object_get(j, "cidr"));
}

int nf_inventory_load(struct nf_ctx *ctx, const char *path,
		      const struct nf_site *site, struct nf_inventory **out,
		      struct nf_diags *diags)
{
	struct nf_inventory *inv = calloc(1, sizeof(*inv));
	struct loader l = { .ctx = ctx, .inv = inv, .diags = diags };
	json_t *doc = NULL, *nodes;
	const char *k, *cidr;
	json_t *v;
	int r;

	if (!inv)
		return -ENOMEM;
	inv->path = nf_strdup(path);
	inv->by_name = json_object();
	l.locs = json_object();
	l.macs = json_object();
	l.ips = json_object();
	l.roles = json_object();
	if (!inv->path || !inv->by_name || !l.locs || !l.macs || !l.ips ||
	    !l.roles) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = nf_yaml_load(ctx, path, &doc, l.locs, diags)))
		goto out;
	json_object_foreach(doc, k, v) {
		if (strcmp(k, "nodes"))
			load_err(&l, k, "unknown key '%s' (expected 'nodes')", k);
	}
	nodes = json_object_get(doc, "nodes");
	if (!nodes) {
		nf_diag_add(diags, path, 1, 1, NF_SEV_ERROR,
			    "no 'nodes' list");
		if (!l.errors++)
			nf_fail(ctx, NF_E_INVALID, "%s:1:1: no 'nodes' list",
				path);
	} else if (!json_is_array(nodes)) {
		load_err(&l, "nodes", "'nodes' must be a list");
	} else {
		for (size_t i = 0; i < json_array_size(nodes); i++)
			if ((r = load_entry(&l, json_array_get(nodes, i), i)))
				goto out;
	}
	cidr = site_cidr(site);
	if (!l.errors && cidr &&
	    nf_inventory_check_network(ctx, inv, cidr, diags))
		l.errors++;
	r = l.errors ? NF_E_INVALID : 0;
out:
	json_decref(doc);
	json_decref(l.locs);
	json_decref(l.macs);
	json_decref(l.ips);
	json_decref(l.roles);
	if (r) {
		nf_inventory_free(inv);
		return r;
	}
	*out = inv;
	return 0;
}

void nf_inventory_free(struct nf_inventory *inv)
{
	if (!inv)
		return;
	for (size_t i = 0; i < inv->n; i++) {
		free(inv->nodes[i].name);
		free(inv->nodes[i].role);
		free(inv->nodes[i].rack);
		free(inv->nodes[i].gpu_type);
	}
	free(inv->nodes);
	free(inv->locs);
	json_decref(inv->by_name);
	free(inv->path);
	free(inv);
}

const char *nf_inventory_path(const struct nf_inventory *inv)
{
	return inv->path;
}

size_t nf_inventory_count(const struct nf_inventory *inv)
{
	return inv->n;
}

const struct nf_node *nf_inventory_node(const struct nf_inventory *inv,
					size_t i)
{
	return i < inv->n ? &inv->nodes[i] : NULL;
}

const struct nf_node *nf_inventory_find(const struct nf_inventory *inv,
					const char *name)
{
	json_t *v = json_object_get(inv->by_name, name);

	return v ? &inv->nodes[json_integer_value(v)] : NULL;
}
