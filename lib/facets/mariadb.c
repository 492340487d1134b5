/* SPDX-License-Identifier: MIT */
/*
 * mariadb: slurmdbd's database tuning.  The buffer pool is a share of the
 * node's RAM, resolved on the node (a fixed "45G" is right for one size of
 * machine only).
 */
#include "internal.h"

/* How long slurmctld's start waits for slurmdbd to answer */
#define NF_DBD_WAIT_S 60
#define NF_DB_NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"

static const struct nf_field fields[] = {
	{ "buffer_pool_pct", NF_T_INT },
	{ "log_file_size", NF_T_SIZE },
	{ "log_buffer_size", NF_T_SIZE },
	{ "lock_wait_timeout", NF_T_INT },
	{ "max_allowed_packet", NF_T_SIZE },
	{ "flush_log_at_trx_commit", NF_T_INT },
	{ "sync_binlog", NF_T_INT },
	{ 0 }
};

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	json_int_t pct = json_integer_value(json_object_get(sec, "buffer_pool_pct"));
	json_int_t flush = json_integer_value(json_object_get(sec, "flush_log_at_trx_commit"));

	/* 70-80 % of RAM is for a host that runs only the database; on a
	 * controller slurmctld and slurmdbd need the rest (slurmctld holds
	 * every job and node record in memory): about half */
	int shared = nf_profile_runs(nf_profile_json(l->profile), "slurmctld");

	if (json_object_get(sec, "buffer_pool_pct") && !shared && (pct < 70 || pct > 80))
		nf_lint_at(l, "mariadb.buffer_pool_pct", NF_SEV_WARNING,
			   "buffer_pool_pct %lld: a dedicated slurmdbd database "
			   "wants 70-80%% of RAM", (long long)pct);
	if (json_object_get(sec, "buffer_pool_pct") && shared && (pct < 40 || pct > 60))
		nf_lint_at(l, "mariadb.buffer_pool_pct", NF_SEV_WARNING,
			   "buffer_pool_pct %lld on a node that also runs slurmctld "
			   "and slurmdbd: leave them memory, 40-60%% of RAM (70-80%% "
			   "is for a dedicated database host)", (long long)pct);
	if (json_object_get(sec, "buffer_pool_pct") && (pct < 1 || pct > 90))
		nf_lint_at(l, "mariadb.buffer_pool_pct", NF_SEV_ERROR,
			   "buffer_pool_pct %lld is outside 1-90", (long long)pct);
	if (json_object_get(sec, "flush_log_at_trx_commit") &&
	    (flush < 0 || flush > 2))
		nf_lint_at(l, "mariadb.flush_log_at_trx_commit", NF_SEV_ERROR,
			   "innodb_flush_log_at_trx_commit takes 0, 1 or 2, not %lld",
			   (long long)flush);
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* The buffer pool is a share of the node's RAM, which the image does not
 * know: a small script run before mariadb starts renders it from
 * /proc/meminfo into its own file next to the static tuning */
static int size_val(const json_t *v, char *out, size_t outsz)
{
	if (json_is_integer(v))
		snprintf(out, outsz, "%lld", (long long)json_integer_value(v));
	else if (json_is_string(v) && !strpbrk(json_string_value(v), " \n#"))
		snprintf(out, outsz, "%s", json_string_value(v));
	else
		return -1;
	return 0;
}

static int apply_tuning(struct nf_apply *a, const json_t *sec)
{
	static const struct {
		const char *key, *conf;
	} keys[] = {
		{ "log_file_size", "innodb_log_file_size" },
		{ "log_buffer_size", "innodb_log_buffer_size" },
		{ "lock_wait_timeout", "innodb_lock_wait_timeout" },
		{ "max_allowed_packet", "max_allowed_packet" },
		{ "flush_log_at_trx_commit", "innodb_flush_log_at_trx_commit" },
		{ "sync_binlog", "sync_binlog" },
	};
	const char *dir = a->el ? "/etc/my.cnf.d" : "/etc/mysql/mariadb.conf.d";
	json_int_t pct = json_integer_value(json_object_get(sec, "buffer_pool_pct"));
	struct nf_buf b = { 0 };
	char path[128], val[64];
	int r;

	nf_apply_header(&b, "#", "mariadb");
	nf_buf_printf(&b, "[mysqld]\n");
	for (size_t i = 0; i < NF_ARRAY_SIZE(keys); i++) {
		const json_t *v = json_object_get(sec, keys[i].key);

		if (!v)
			continue;
		if (size_val(v, val, sizeof(val))) {
			nf_buf_free(&b);
			return nf_fail(a->ctx, NF_E_INVALID,
				       "mariadb.%s is not a number or size",
				       keys[i].key);
		}
		nf_buf_printf(&b, "%-31s = %s\n", keys[i].conf, val);
	}
	if (pct)
		nf_buf_printf(&b, "# innodb_buffer_pool_size: %lld%% of RAM, "
			      "written to 91-nodeforge-buffer-pool.cnf at start\n",
			      (long long)pct);
	snprintf(path, sizeof(path), "%s/90-slurm.cnf", dir);
	if ((r = nf_apply_write_buf(a, path, &b, 0644, 0, 0)))
		return r;
	if (pct <= 0 || pct > 100)
		return 0;
	nf_buf_printf(&b,
		"#!/bin/sh\n"
		"# Written by nodeforge build (facet 'mariadb'): size the InnoDB\n"
		"# buffer pool as a share of this node's RAM.\n"
		"set -eu\n"
		"pct=$1\n"
		"out=%s/91-nodeforge-buffer-pool.cnf\n"
		"kb=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)\n"
		"mb=$((kb * pct / 100 / 1024))\n"
		"printf '[mysqld]\\ninnodb_buffer_pool_size = %%sM\\n' \"$mb\" > \"$out.tmp\"\n"
		"# the server reads it as mysql; mariadb.service's UMask=007\n"
		"# would leave it 0660 root, and MariaDB skips a file it cannot read\n"
		"chmod 0644 \"$out.tmp\"\n"
		"mv -f \"$out.tmp\" \"$out\"\n", dir);
	if ((r = nf_apply_write_buf(a, "/usr/lib/nodeforge/mariadb-buffer-pool",
				    &b, 0755, 0, 0)))
		return r;
	nf_apply_header(&b, "#", "mariadb");
	nf_buf_printf(&b, "[Service]\n# '+': runs as root, the service itself as mysql\n"
		      "ExecStartPre=+/usr/lib/nodeforge/"
		      "mariadb-buffer-pool %lld\n", (long long)pct);
	return nf_apply_write_buf(a, "/etc/systemd/system/mariadb.service.d/"
				  "nodeforge.conf", &b, 0644, 0, 0);
}

/* slurmdbd's accounting database on this node: on its first boot the
 * local MariaDB gets the database, the user and the grants slurmdbd.conf
 * names (nodeforge-dbinit.service, before slurmdbd), and where slurmctld
 * runs too, the cluster is registered in accounting before slurmctld
 * starts (nodeforge-slurm-register.service).  The password is read from
 * slurmdbd.conf when the script runs: enrollment delivers it there, the
 * image never holds it. */

/* What both scripts share: a journal message at error priority, and a
 * Slurm config file read as Slurm reads it */
static const char script_prelude[] =
	"set -u\n"
	"\n"
	"die() {\n"
	"\techo \"<3>$me: $*\" >&2\n"
	"\texit 1\n"
	"}\n"
	"\n"
	"# The last value of KEY in FILE as Slurm's parser reads it: an unescaped\n"
	"# '#' starts a comment, \"\\c\" is \"c\", keys in any case, several Key=Value\n"
	"# on a line, a value is \"quoted\" or runs to the next blank\n"
	"conf_get() {\n"
	"\tawk -v k=\"$1\" '\n"
	"\t{\n"
	"\t\tl = \"\"\n"
	"\t\tfor (i = 1; i <= length($0); i++) {\n"
	"\t\t\tc = substr($0, i, 1)\n"
	"\t\t\tif (c == \"#\")\n"
	"\t\t\t\tbreak\n"
	"\t\t\tif (c == \"\\\\\")\n"
	"\t\t\t\tc = substr($0, ++i, 1)\n"
	"\t\t\tl = l c\n"
	"\t\t}\n"
	"\t\twhile (match(l, /^[ \\t]*[A-Za-z0-9_.]+[ \\t]*=[ \\t]*/)) {\n"
	"\t\t\tkey = substr(l, 1, RLENGTH)\n"
	"\t\t\tgsub(/[ \\t=]/, \"\", key)\n"
	"\t\t\tl = substr(l, RLENGTH + 1)\n"
	"\t\t\tif (substr(l, 1, 1) == \"\\\"\") {\n"
	"\t\t\t\tl = substr(l, 2)\n"
	"\t\t\t\te = index(l, \"\\\"\")\n"
	"\t\t\t\te = e ? e : length(l) + 1\n"
	"\t\t\t} else {\n"
	"\t\t\t\tmatch(l, /^[^ \\t\\r]*/)\n"
	"\t\t\t\te = RLENGTH + 1\n"
	"\t\t\t}\n"
	"\t\t\tv = substr(l, 1, e - 1)\n"
	"\t\t\tl = substr(l, e + 1)\n"
	"\t\t\tif (tolower(key) == tolower(k)) {\n"
	"\t\t\t\tout = v\n"
	"\t\t\t\tfound = 1\n"
	"\t\t\t}\n"
	"\t\t}\n"
	"\t}\n"
	"\tEND { if (found) print out }' \"$2\"\n"
	"}\n";

static const char dbinit_body[] =
	"conf=${1:-/etc/slurm/slurmdbd.conf}\n"
	"[ -r \"$conf\" ] || die \"cannot read $conf\"\n"
	"db=$(conf_get StorageLoc \"$conf\")\n"
	"db=${db:-slurm_acct_db}\n"
	"user=$(conf_get StorageUser \"$conf\")\n"
	"[ -n \"$user\" ] || user=$(conf_get SlurmUser \"$conf\")\n"
	"case $db in\n"
	"''|*[!A-Za-z0-9_]*) die \"StorageLoc '$db' in $conf: letters, digits and '_' only\" ;;\n"
	"esac\n"
	"case $user in\n"
	"''|root) die \"no StorageUser in $conf: slurmdbd would reach the database as root\" ;;\n"
	"*[!A-Za-z0-9_.-]*) die \"StorageUser '$user' in $conf: letters, digits, '_', '.' and '-' only\" ;;\n"
	"esac\n"
	"pw=$(conf_get StoragePass \"$conf\")\n"
	"[ -n \"$pw\" ] || die \"no StoragePass in $conf: the slurmdbd password arrives at\" \\\n"
	"\t\"first boot through enrollment and has not (journalctl -u nodeforge-enroll;\" \\\n"
	"\t\"nodeforge enroll --help); slurmdbd stays down\"\n"
	"i=0\n"
	"until mariadb --batch -e 'SELECT 1' >/dev/null 2>&1; do\n"
	"\ti=$((i + 1))\n"
	"\t[ \"$i\" -lt 30 ] || die \"MariaDB does not answer on its socket after 30 s\" \\\n"
	"\t\t\"(systemctl status mariadb)\"\n"
	"\tsleep 1\n"
	"done\n"
	"# What mariadb-secure-installation removes: anonymous users, root from\n"
	"# other hosts, the test database and the grants on it\n"
	"mariadb --batch <<'SQL' || die \"MariaDB refused to remove anonymous users, remote root or the test database\"\n"
	"DELETE FROM mysql.global_priv WHERE User='';\n"
	"DELETE FROM mysql.global_priv WHERE User='root' AND Host NOT IN ('localhost', '127.0.0.1', '::1');\n"
	"DROP DATABASE IF EXISTS test;\n"
	"DELETE FROM mysql.db WHERE Db='test' OR Db='test\\\\_%';\n"
	"FLUSH PRIVILEGES;\n"
	"SQL\n"
	"# The password goes through pipes only, never a command line: a SQL\n"
	"# string with ' and \\ escaped\n"
	"q=$(printf '%s' \"$pw\" | sed -e 's/\\\\/\\\\\\\\/g' -e \"s/'/''/g\")\n"
	"{\n"
	"\tprintf 'CREATE DATABASE IF NOT EXISTS `%s`;\\n' \"$db\"\n"
	"\tprintf \"CREATE USER IF NOT EXISTS '%s'@'localhost' IDENTIFIED BY '%s';\\n\" \"$user\" \"$q\"\n"
	"\tprintf \"ALTER USER '%s'@'localhost' IDENTIFIED BY '%s';\\n\" \"$user\" \"$q\"\n"
	"\tprintf \"GRANT ALL PRIVILEGES ON \\`%s\\`.* TO '%s'@'localhost';\\n\" \"$db\" \"$user\"\n"
	"} | mariadb --batch || die \"MariaDB refused to create database '$db' or user '$user'@'localhost'\"\n"
	"echo \"$me: database '$db' and user '$user'@'localhost' with its grants are in place\"\n";

static const char register_body[] =
	"conf=${1:-/etc/slurm/slurm.conf}\n"
	"wait=${2:-60}\n"
	"[ -r \"$conf\" ] || die \"cannot read $conf\"\n"
	"# slurmctld and sacctmgr take the name in lower case\n"
	"name=$(conf_get ClusterName \"$conf\" | tr '[:upper:]' '[:lower:]')\n"
	"case $name in\n"
	"'') die \"no ClusterName in $conf\" ;;\n"
	"*[!a-z0-9_-]*) die \"ClusterName '$name' in $conf: letters, digits, '_' and '-' only\" ;;\n"
	"esac\n"
	"start=$(date +%s)\n"
	"while ! out=$(timeout 10 sacctmgr -n -P list cluster format=cluster 2>&1); do\n"
	"\t[ $(($(date +%s) - start)) -lt \"$wait\" ] ||\n"
	"\t\tdie \"slurmdbd did not answer within $wait s: $(printf '%s\\n' \"$out\" | tail -n 1)\" \\\n"
	"\t\t\t\"(systemctl status slurmdbd); slurmctld stays down\"\n"
	"\tsleep 2\n"
	"done\n"
	"if printf '%s\\n' \"$out\" | grep -qxF \"$name\"; then\n"
	"\techo \"$me: cluster '$name' is registered in accounting\"\n"
	"\texit 0\n"
	"fi\n"
	"sacctmgr -i add cluster \"$name\" || die \"sacctmgr could not add cluster '$name'\"\n"
	"echo \"$me: cluster '$name' added to accounting\"\n";

/* slurmdbd stores into MariaDB on this node (the resolved profile):
 * StorageHost unset or localhost, the unix socket the grants are for */
static int local_db(const json_t *prof)
{
	const json_t *slurm = json_object_get(prof, "slurm");
	const json_t *dbd = json_object_get(slurm, "dbd");
	const char *t = json_string_value(json_object_get(dbd, "StorageType"));
	const char *h = json_string_value(json_object_get(dbd, "StorageHost"));
	return nf_profile_runs(prof, "slurmdbd") && t && !strcmp(t, "accounting_storage/mysql") &&
	       (!h || !strcmp(h, "localhost"));
}

static int write_script(struct nf_apply *a, const char *path, const char *me,
			const char *what, const char *body)
{
	struct nf_buf b = { 0 };

	nf_buf_printf(&b, "#!/bin/sh\n# Written by nodeforge build (facet "
		      "'mariadb'): %s\nme=%s\n%s\n%s", what, me, script_prelude,
		      body);
	return nf_apply_write_buf(a, path, &b, 0755, 0, 0);
}

/* A drop-in making UNIT require and follow REQ (a space-separated list) */
static int write_requires(struct nf_apply *a, const char *unit,
			  const char *name, const char *why, const char *req)
{
	struct nf_buf b = { 0 };
	char path[160];

	nf_apply_header(&b, "#", "mariadb");
	nf_buf_printf(&b, "# %s\n[Unit]\nRequires=%s\nAfter=%s\n", why, req, req);
	snprintf(path, sizeof(path), "/etc/systemd/system/%s.service.d/%s.conf",
		 unit, name);
	return nf_apply_write_buf(a, path, &b, 0644, 0, 0);
}

static int apply_accounting(struct nf_apply *a)
{
	const json_t *dbd = json_object_get(json_object_get(a->prof, "slurm"), "dbd");
	const char *loc = json_string_value(json_object_get(dbd, "StorageLoc"));
	const char *user = json_string_value(json_object_get(dbd, "StorageUser"));
	struct nf_buf b = { 0 };
	int r;

	if (!local_db(a->prof))
		return 0;
	/* the script checks the same at run time; a profile learns it now */
	if ((loc && (!*loc || strspn(loc, NF_DB_NAME_CHARS) != strlen(loc))) ||
	    (user && (!*user || strspn(user, NF_DB_NAME_CHARS ".-") != strlen(user))))
		return nf_fail(a->ctx, NF_E_INVALID, "slurm.dbd StorageLoc '%s' / "
			       "StorageUser '%s': letters, digits and '_' only "
			       "('.' and '-' in a user name too)", loc ? loc : "",
			       user ? user : "");
	if ((r = write_script(a, "/usr/lib/nodeforge/slurm-dbinit",
			      "nodeforge-dbinit", "slurmdbd's database, user and "
			      "grants in the local MariaDB", dbinit_body)))
		return r;
	nf_apply_header(&b, "#", "mariadb");
	nf_buf_printf(&b,
		"[Unit]\n"
		"Description=nodeforge: slurmdbd's database and user in the local MariaDB\n"
		"Documentation=man:slurmdbd.conf(5)\n"
		"Requires=mariadb.service\n"
		"# enrollment delivers StoragePass into slurmdbd.conf\n"
		"After=mariadb.service nodeforge-enroll.service\n"
		"Before=slurmdbd.service\n"
		"\n"
		"[Service]\n"
		"Type=oneshot\n"
		"RemainAfterExit=yes\n"
		"ExecStart=/usr/lib/nodeforge/slurm-dbinit /etc/slurm/slurmdbd.conf\n"
		"TimeoutStartSec=120\n"
		"UMask=0077\n"
		"PrivateTmp=yes\n");
	if ((r = nf_apply_write_buf(a, "/etc/systemd/system/nodeforge-dbinit.service",
				    &b, 0644, 0, 0)) ||
	    (r = write_requires(a, "slurmdbd", "nodeforge-dbinit",
				"slurmdbd starts once its database and user exist",
				"nodeforge-dbinit.service")))
		return r;
	if (!nf_apply_has_daemon(a, "slurmctld"))
		return 0;
	if ((r = write_script(a, "/usr/lib/nodeforge/slurm-register-cluster",
			      "nodeforge-slurm-register", "this cluster in "
			      "accounting before slurmctld starts", register_body)))
		return r;
	nf_apply_header(&b, "#", "mariadb");
	nf_buf_printf(&b,
		"[Unit]\n"
		"Description=nodeforge: this cluster registered in accounting\n"
		"Documentation=man:sacctmgr(1)\n"
		"Requires=slurmdbd.service\n"
		"After=slurmdbd.service munge.service\n"
		"Before=slurmctld.service\n"
		"\n"
		"[Service]\n"
		"Type=oneshot\n"
		"RemainAfterExit=yes\n"
		"# waits up to %d s for slurmdbd to answer\n"
		"ExecStart=/usr/lib/nodeforge/slurm-register-cluster "
		"/etc/slurm/slurm.conf %d\n"
		"TimeoutStartSec=%d\n",
		NF_DBD_WAIT_S, NF_DBD_WAIT_S, NF_DBD_WAIT_S + 30);
	if ((r = nf_apply_write_buf(a, "/etc/systemd/system/"
				    "nodeforge-slurm-register.service", &b,
				    0644, 0, 0)))
		return r;
	return write_requires(a, "slurmctld", "nodeforge-accounting",
			      "slurmctld starts with its accounting up and the "
			      "cluster registered in it",
			      "slurmdbd.service nodeforge-slurm-register.service");
}

static int apply(struct nf_apply *a, const json_t *sec)
{
	int r = apply_tuning(a, sec);

	return r ? r : apply_accounting(a);
}

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* The mariadb client with `argv`, its output into *out: NF_V_PASS, or
 * the check's verdict when it could not run or failed (then seen says
 * why and *out is NULL) */
static int run_client(struct nf_vcheck *c, const char *const *argv, char **out)
{
	int st = 0, r = nf_v_exec(c, argv, NULL, out, &st);

	if (r == NF_E_TIMEOUT)
		return NF_V_HUNG;
	if (r) {
		nf_v_seen(c, "cannot run mariadb: %s", r < 0 ? strerror(-r) : nf_strerror(r));
		return NF_V_FAIL;
	}
	if (st) {
		(*out)[strcspn(*out, "\n")] = '\0';
		nf_v_seen(c, "exit %d: %.200s", st, *out);
		free(*out);
		*out = NULL;
		return NF_V_FAIL;
	}
	return NF_V_PASS;
}

static int check_server(struct nf_vcheck *c, const json_t *sec)
{
	const char *argv[] = { "mariadb", "--batch", "--skip-column-names", "-e",
			       "SHOW GLOBAL VARIABLES", NULL };
	char *out = NULL, *save = NULL;
	json_t *vars;
	int r;

	(void)sec;
	nf_v_expect(c, "the server answers SHOW GLOBAL VARIABLES");
	nf_v_remedy(c, "systemctl status mariadb; journalctl -u mariadb -n 30");
	if ((r = run_client(c, argv, &out)))
		return r;
	vars = json_object();
	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(l, '\t');

		if (tab) {
			*tab = '\0';
			json_object_set_new(vars, l, json_string(tab + 1));
		}
	}
	free(out);
	nf_v_seen(c, "%zu variables", json_object_size(vars));
	nf_v_cache_put(c, "mariadb.vars", vars);
	return NF_V_PASS;
}

static const char *var(struct nf_vcheck *c, const char *name)
{
	return json_string_value(json_object_get(nf_v_cache_get(c, "mariadb.vars"), name));
}

static int check_buffer_pool(struct nf_vcheck *c, const json_t *sec)
{
	json_int_t pct = json_integer_value(json_object_get(sec, "buffer_pool_pct"));
	const char *v = var(c, "innodb_buffer_pool_size");
	unsigned long long mem_kb;
	double have;

	if (!pct)
		return nf_v_skip(c, "the profile sets no buffer_pool_pct");
	if (!(mem_kb = nf_v_mem_total_kb(c)))
		return nf_v_skip(c, "no MemTotal in /proc/meminfo");
	if (!v) {
		nf_v_seen(c, "innodb_buffer_pool_size unknown");
		return NF_V_FAIL;
	}
	have = strtod(v, NULL) * 100.0 / (mem_kb * 1024.0);
	nf_v_expect(c, "innodb_buffer_pool_size %lld-%lld %% of RAM", (long long)pct - 5,
		    (long long)pct + 5);
	nf_v_seen(c, "%s bytes = %.1f %% of %llu MiB", v, have, mem_kb / 1024);
	if (have >= pct - 5 && have <= pct + 5)
		return NF_V_PASS;
	nf_v_remedy(c, "set innodb_buffer_pool_size = %lluM in the server's nodeforge.cnf and "
		    "systemctl restart mariadb", mem_kb * (unsigned long long)pct / 100 / 1024);
	return NF_V_FAIL;
}

static const struct {
	const char *id, *key, *var;
	bool size;
} simple[] = {
	{ "mariadb.lock_wait_timeout", "lock_wait_timeout", "innodb_lock_wait_timeout", false },
	{ "mariadb.log_file_size", "log_file_size", "innodb_log_file_size", true },
	{ "mariadb.log_buffer_size", "log_buffer_size", "innodb_log_buffer_size", true },
	{ "mariadb.max_allowed_packet", "max_allowed_packet", "max_allowed_packet", true },
	{ "mariadb.flush_log_at_trx_commit", "flush_log_at_trx_commit",
	  "innodb_flush_log_at_trx_commit", false },
	{ "mariadb.sync_binlog", "sync_binlog", "sync_binlog", false },
};

static int check_simple(struct nf_vcheck *c, const json_t *sec)
{
	const char *id = nf_v_id(c);
	char want[64];
	const char *v;
	size_t i;

	for (i = 0; i < NF_ARRAY_SIZE(simple) && strcmp(simple[i].id, id); i++)
		;
	if (i == NF_ARRAY_SIZE(simple) || !json_object_get(sec, simple[i].key))
		return nf_v_skip(c, "the profile does not set it");
	nf_v_json_str(json_object_get(sec, simple[i].key), want, sizeof(want));
	if (simple[i].size) {
		unsigned long long b;

		if (!nf_parse_size(want, &b))
			snprintf(want, sizeof(want), "%llu", b);
	}
	v = var(c, simple[i].var);
	nf_v_expect(c, "%s = %s", simple[i].var, want);
	nf_v_seen(c, "%s = %s", simple[i].var, v ? v : "(none)");
	if (v && !strcmp(v, want))
		return NF_V_PASS;
	nf_v_remedy(c, "set %s = %s in the server's nodeforge.cnf and systemctl restart mariadb",
		    simple[i].var, want);
	return NF_V_FAIL;
}

/* 0 where nodeforge-dbinit.service sets up this node's MariaDB for
 * slurmdbd; else the check's skip */
static int dbinit_here(struct nf_vcheck *c)
{
	struct stat st;

	if (!local_db(nf_v_profile(c)))
		return nf_v_skip(c, "slurmdbd does not store into this node's MariaDB");
	/* a server set up by other means than a nodeforge image */
	if (nf_v_stat(c, NF_VROOT, "/etc/systemd/system/nodeforge-dbinit.service", &st))
		return nf_v_skip(c, "no nodeforge-dbinit.service on this node");
	return 0;
}

/* The gate runs after nodeforge-dbinit.service: a controller whose
 * database or user is missing (the password never arrived) fails here,
 * with its cause, rather than passing while slurmdbd cannot start */
static int check_accounting(struct nf_vcheck *c, const json_t *sec)
{
	char state[64] = "";
	int r;

	(void)sec;
	if ((r = dbinit_here(c)))
		return r;
	nf_v_expect(c, "nodeforge-dbinit.service made slurmdbd's database and user");
	r = nf_v_service_active(c, "nodeforge-dbinit", state, sizeof(state));
	if (r == NF_E_TIMEOUT)
		return NF_V_HUNG;
	if (r == 1) {
		nf_v_seen(c, "nodeforge-dbinit.service active");
		return NF_V_PASS;
	}
	nf_v_seen(c, r < 0 ? "cannot ask systemctl" : "nodeforge-dbinit.service %s", state);
	nf_v_remedy(c, "journalctl -u nodeforge-dbinit -u nodeforge-enroll   # no StoragePass: "
		    "enrollment did not deliver it; then systemctl restart slurmdbd");
	return NF_V_FAIL;
}

/* What mariadb-secure-installation removes, still there: each as a line */
static const char secure_sql[] =
	"SELECT CONCAT(IF(User = '', 'anonymous user ', 'root from another host '), "
	"'''', User, '''@''', Host, '''') FROM mysql.global_priv "
	"WHERE User = '' OR (User = 'root' AND Host NOT IN ('localhost', '127.0.0.1', '::1')) "
	"UNION ALL SELECT 'database test' FROM information_schema.SCHEMATA "
	"WHERE SCHEMA_NAME = 'test' "
	"UNION ALL SELECT CONCAT('grants on ', Db) FROM mysql.db "
	"WHERE Db = 'test' OR Db = 'test\\\\_%'";

/* nodeforge-dbinit.service secures the server before it makes slurmdbd's
 * user: none of the accounts and databases a fresh install may have,
 * open to any local user or to remote hosts, are left */
static int check_secure(struct nf_vcheck *c, const json_t *sec)
{
	const char *argv[] = { "mariadb", "--batch", "--skip-column-names", "--raw",
			       "-e", secure_sql, NULL };
	char *out = NULL, *save = NULL, seen[512] = "";
	int n = 0, r;

	(void)sec;
	if ((r = dbinit_here(c)))
		return r;
	nf_v_expect(c, "no anonymous user, no root from another host, no test database");
	nf_v_remedy(c, "systemctl restart nodeforge-dbinit   # removes them, as "
		    "mariadb-secure-installation does");
	if ((r = run_client(c, argv, &out)))
		return r;
	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save), n++)
		snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen), "%s%s",
			 n ? ", " : "", l);
	free(out);
	nf_v_seen(c, "%s", n ? seen : "none");
	return n ? NF_V_FAIL : NF_V_PASS;
}

static const struct nf_check_def defs[] = {
	{ "mariadb.server", "the database server answers", NULL, NF_CHECK_PROBE, 3000,
	  check_server },
	{ "mariadb.buffer_pool", "InnoDB buffer pool size against RAM", "mariadb.server", 0, 0,
	  check_buffer_pool },
	{ "mariadb.lock_wait_timeout", "InnoDB lock wait timeout", "mariadb.server", 0, 0,
	  check_simple },
	{ "mariadb.log_file_size", "InnoDB redo log size", "mariadb.server", 0, 0, check_simple },
	{ "mariadb.log_buffer_size", "InnoDB log buffer size", "mariadb.server", 0, 0,
	  check_simple },
	{ "mariadb.max_allowed_packet", "max_allowed_packet", "mariadb.server", 0, 0,
	  check_simple },
	{ "mariadb.flush_log_at_trx_commit", "InnoDB flush policy", "mariadb.server", 0, 0,
	  check_simple },
	{ "mariadb.sync_binlog", "binary log sync policy", "mariadb.server", 0, 0,
	  check_simple },
	{ "mariadb.accounting", "slurmdbd's database and user exist", "mariadb.server",
	  NF_CHECK_PROBE, 2000, check_accounting },
	{ "mariadb.secure", "no anonymous user, remote root or test database",
	  "mariadb.server", NF_CHECK_PROBE, 3000, check_secure },
};

static const struct nf_checkset checks = NF_CHECKSET(defs);

/* ---- end of check ---- */

/* The gate reads how the accounting database's set-up went: a password
 * enrollment never delivered is a root cause */
static size_t gate_units(const struct nf_apply *a, const json_t *sec,
			 struct nf_gate_unit *out, size_t max)
{
	(void)sec;
	if (!max || !local_db(a->prof))
		return 0;
	out[0] = (struct nf_gate_unit){ "nodeforge-dbinit", NF_GATE_AFTER };
	return 1;
}

/* The local accounting database is lost with a root in RAM */
static size_t durable_dirs(const struct nf_apply *a, const json_t *sec,
			   const char **out, size_t max)
{
	(void)sec;
	if (!max || !local_db(a->prof))
		return 0;
	out[0] = "/var/lib/mysql";
	return 1;
}

/* mariadbd parses its configuration (my.cnf and what it includes) */
static int daemon_checks(struct nf_daemon_ci *d, const json_t *sec)
{
	(void)sec;
	if (!nf_daemon_ci_has(d, "usr/sbin/mariadbd"))
		return 0;
	return d->run(d, "localhost", "mariadb",
		      (const char *const[]){ "mariadbd", "--help", "--verbose",
					     "--user=mysql", NULL }, 0, 1, NULL);
}

const struct nf_facet nf_facet_mariadb = {
	.name = "mariadb",
	.summary = "MariaDB tuning for slurmdbd",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = &checks,
	.gate_units = gate_units,
	.durable_dirs = durable_dirs,
	.daemon_checks = daemon_checks,
};
