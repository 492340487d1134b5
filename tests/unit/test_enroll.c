/* SPDX-License-Identifier: MIT */
/* Enrollment: server-side claims and their refusals, node-side opening and
 * writing, against a scratch state directory and a scratch target root. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "internal.h"

#define T0 1800000000LL

static struct nf_ctx *ctx;
static char tmp[64];
static char path[256];
static int last_level;
static char last_log[1024];

static const char *P(const char *rel)
{
	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	return path;
}

static void logcb(void *d, int level, const char *msg)
{
	(void)d;
	last_level = level;
	snprintf(last_log, sizeof(last_log), "%s", msg);
}

static void put(const char *rel, const char *text, unsigned mode)
{
	int fd = open(P(rel), O_WRONLY | O_CREAT | O_TRUNC, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	fchmod(fd, mode);
	close(fd);
}

/* A target root whose munge and slurm users have their own ids */
static void make_root(const char *rel)
{
	char d[128];

	mkdir(P(rel), 0755);
	snprintf(d, sizeof(d), "%s/etc", rel);
	mkdir(P(d), 0755);
	snprintf(d, sizeof(d), "%s/etc/passwd", rel);
	put(d, "root:x:0:0::/root:/bin/sh\nmunge:x:4242:4343::/:/bin/false\n"
	    "slurm:x:64030:64031::/:/bin/false\n", 0644);
}

static int setup(void **state)
{
	(void)state;
	strcpy(tmp, "/tmp/nf-enroll.XXXXXX");
	if (!mkdtemp(tmp) || nf_ctx_new(&ctx))
		return -1;
	nf_ctx_set_log(ctx, logcb, NULL);
	nf_ctx_set_log_level(ctx, NF_LOG_DEBUG);
	mkdir(P("secrets"), 0700);
	mkdir(P("tree"), 0755);
	make_root("root");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	nf_ctx_free(ctx);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	return system(cmd);
}

static uint8_t munge_key[1024];

/* the site's password command instead of its password file */
static const char *server_pw_cmd;

static struct nf_enroll *server(const char *statedir)
{
	struct nf_enroll_opts o = { 0 };
	static char mk[256], pw[256], sd[256];
	struct nf_enroll *e = NULL;
	struct nf_enroll_node nodes[] = {
		{ "gpu-01", "compute", "r1", "52:54:00:00:00:01", 0x7f000001 },
		{ "cp-01", "controller", "r0", NULL, 0x7f000001 },
		{ "gpu-02", "compute", "r1", NULL, 0x7f000002 },
	};
	int fd;

	snprintf(sd, sizeof(sd), "%s/%s", tmp, statedir);
	o.state_dir = sd;
	snprintf(mk, sizeof(mk), "%s/secrets/munge.key", tmp);
	snprintf(pw, sizeof(pw), "%s/secrets/dbpass", tmp);
	o.munge_key = mk;
	o.slurmdbd_password = server_pw_cmd ? NULL : pw;
	o.slurmdbd_password_command = server_pw_cmd;
	if (access(mk, F_OK)) {
		for (size_t i = 0; i < sizeof(munge_key); i++)
			munge_key[i] = (uint8_t)(i * 7 + 3);
		fd = open(mk, O_WRONLY | O_CREAT, 0400);
		assert_int_equal(write(fd, munge_key, sizeof(munge_key)), 1024);
		close(fd);
		put("secrets/dbpass", "s3cr\"et\\pw\n", 0600);
	}
	assert_int_equal(nf_enroll_new(ctx, &o, &e), 0);
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++)
		assert_int_equal(nf_enroll_add_node(e, &nodes[i]), 0);
	nf_enroll_set_now(e, T0);
	return e;
}

static json_t *claim(struct nf_enroll *e, const char *peer, const char *body,
		     int *status)
{
	json_t *resp = NULL;

	assert_int_equal(nf_enroll_claim(e, peer, body, strlen(body), &resp,
					 status), 0);
	assert_non_null(resp);
	return resp;
}

static json_t *claim_rot(struct nf_enroll *e, const char *peer,
			 const char *body, int *status)
{
	json_t *resp = NULL;

	assert_int_equal(nf_rotate_poll(e, peer, body, strlen(body), &resp,
					status), 0);
	assert_non_null(resp);
	return resp;
}

static char *open_window(struct nf_enroll *e, const char *name)
{
	char *names[] = { (char *)name };

	assert_int_equal(nf_enroll_open(e, names, 1, 600, 0), 0);
	return NULL;
}

/* root/etc/munge/munge.key is the 1024 bytes of `key` */
static void node_key_is(const uint8_t *key)
{
	uint8_t got[2048];
	ssize_t n;
	int fd = open(P("root/etc/munge/munge.key"), O_RDONLY);

	assert_true(fd >= 0);
	n = read(fd, got, sizeof(got));
	close(fd);
	assert_int_equal(n, 1024);
	assert_memory_equal(got, key, 1024);
}

static void test_enroll_compute(void **state)
{
	struct nf_enroll *e = server("state1");
	struct nf_enroll_claim c;
	struct nf_enroll_result res;
	struct stat st;
	char *body, *dump, *b64;
	json_t *resp;
	int status;
	(void)state;

	open_window(e, "gpu-01");
	assert_int_equal(nf_enroll_claim_make(ctx, &c, "gpu-01",
					      "52-54-00-00-00-01", &body), 0);
	resp = claim(e, "127.0.0.1", body, &status);
	assert_int_equal(status, 200);
	/* the response does not carry the key in the clear or as base64 */
	dump = json_dumps(resp, 0);
	b64 = nf_b64_encode(munge_key, sizeof(munge_key));
	assert_null(strstr(dump, b64));
	assert_null(memmem(dump, strlen(dump), munge_key, 64));
	assert_int_equal(nf_enroll_claim_accept(ctx, &c, dump, strlen(dump),
						P("root"), &res), 0);
	assert_string_equal(res.role, "compute");
	assert_int_equal(res.slurmdbd_password, 0);
	/* the private key is wiped */
	for (size_t i = 0; i < sizeof(c.priv); i++)
		assert_int_equal(c.priv[i], 0);
	assert_int_equal(stat(P("root/etc/munge/munge.key"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0400);
	assert_int_equal(st.st_uid, 4242);
	assert_int_equal(st.st_gid, 4343);
	node_key_is(munge_key);
	assert_int_equal(access(P("root/etc/slurm/slurmdbd.conf"), F_OK), -1);
	free(b64);
	free(dump);
	free(body);
	json_decref(resp);

	/* the claim is recorded, the window closed */
	assert_int_equal(nf_enroll_state(e, &resp), 0);
	assert_non_null(json_object_get(json_object_get(resp, "claims"),
					"gpu-01"));
	assert_null(json_object_get(json_object_get(resp, "windows"),
				    "gpu-01"));
	json_decref(resp);
	nf_enroll_free(e);
}

/* An enrollment that succeeds leaves no message behind: the state and
 * rotation files a fresh server lacks, the image's absent profile and the
 * owner looked up in its passwd were all handled, and a later failure of
 * the same code without a message of its own (what 'nodeforge enroll' and
 * the server's API print) must say its code, not theirs */
static void test_enroll_leaves_no_message(void **state)
{
	struct nf_enroll *e;
	struct nf_enroll_claim c;
	struct nf_enroll_result res;
	char *body, *dump;
	json_t *resp;
	int status;
	(void)state;

	make_root("root-msg");
	nf_clear_error(ctx);
	e = server("state-msg");
	open_window(e, "gpu-02");
	assert_int_equal(nf_enroll_claim_make(ctx, &c, "gpu-02", NULL, &body), 0);
	resp = claim(e, "127.0.0.2", body, &status);
	assert_int_equal(status, 200);
	assert_string_equal(nf_error_text(ctx, -ENOENT), nf_strerror(-ENOENT));
	dump = json_dumps(resp, 0);
	assert_int_equal(nf_enroll_claim_accept(ctx, &c, dump, strlen(dump),
						P("root-msg"), &res), 0);
	assert_string_equal(nf_error_text(ctx, -ENOENT), nf_strerror(-ENOENT));
	assert_string_equal(nf_error_text(ctx, NF_E_NOTFOUND),
			    nf_strerror(NF_E_NOTFOUND));
	free(dump);
	free(body);
	json_decref(resp);
	nf_enroll_free(e);
}

static void test_enroll_controller_password(void **state)
{
	struct nf_enroll *e = server("state2");
	struct nf_enroll_claim c;
	struct nf_enroll_result res;
	struct stat st;
	char *body, *dump, *conf;
	json_t *resp;
	int status;
	(void)state;

	mkdir(P("root/etc/slurm"), 0755);
	put("root/etc/slurm/slurmdbd.conf",
	    "DbdHost=cp-01\nStoragePass=old\nStorageUser=slurm\n", 0644);
	open_window(e, "cp-01");
	assert_int_equal(nf_enroll_claim_make(ctx, &c, "cp-01", NULL, &body), 0);
	resp = claim(e, "::ffff:127.0.0.1", body, &status);
	assert_int_equal(status, 200);
	dump = json_dumps(resp, 0);
	assert_null(strstr(dump, "s3cr"));
	assert_int_equal(nf_enroll_claim_accept(ctx, &c, dump, strlen(dump),
						P("root"), &res), 0);
	assert_string_equal(res.role, "controller");
	assert_int_equal(res.slurmdbd_password, 1);
	assert_int_equal(stat(P("root/etc/slurm/slurmdbd.conf"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, 64030);
	assert_int_equal(nf_read_file(ctx, P("root/etc/slurm/slurmdbd.conf"),
				      4096, &conf, NULL), 0);
	assert_string_equal(conf, "DbdHost=cp-01\nStoragePass=s3cr\"et\\pw\n"
				  "StorageUser=slurm\n");
	free(conf);
	free(dump);
	free(body);
	json_decref(resp);
	nf_enroll_free(e);
}

/* secrets.slurmdbd_password as a command: its first line is the
 * password; a command that fails enrolls nothing */
/* A claim answered 200 and accepted into root/ */
static void claim_accept(struct nf_enroll *e, struct nf_enroll_claim *c,
			 const char *peer, const char *body,
			 struct nf_enroll_result *res)
{
	json_t *resp;
	char *dump;
	int status;

	resp = claim(e, peer, body, &status);
	assert_int_equal(status, 200);
	dump = json_dumps(resp, 0);
	assert_int_equal(nf_enroll_claim_accept(ctx, c, dump, strlen(dump),
						P("root"), res), 0);
	free(dump);
	json_decref(resp);
}

/* root/etc/slurm/slurmdbd.conf is exactly `text` */
static void conf_is(const char *text)
{
	char *conf;

	assert_int_equal(nf_read_file(ctx, P("root/etc/slurm/slurmdbd.conf"),
				      4096, &conf, NULL), 0);
	assert_string_equal(conf, text);
	free(conf);
}

static void test_enroll_password_command(void **state)
{
	static const char *const cmds[] = {
		"printf 'from-a-vault\\n'; echo noise >&2",
		"echo partial; exit 3",
	};
	(void)state;

	for (size_t i = 0; i < 2; i++) {
		struct nf_enroll *e;
		struct nf_enroll_claim c;
		struct nf_enroll_result res;
		char *body, dir[32];
		json_t *resp;
		int status;

		server_pw_cmd = cmds[i];
		snprintf(dir, sizeof(dir), "state-pwcmd%zu", i);
		e = server(dir);
		server_pw_cmd = NULL;
		mkdir(P("root/etc/slurm"), 0755);
		put("root/etc/slurm/slurmdbd.conf", "StoragePass=old\n", 0644);
		open_window(e, "cp-01");
		assert_int_equal(nf_enroll_claim_make(ctx, &c, "cp-01", NULL,
						      &body), 0);
		if (i == 1) {
			resp = NULL;
			status = 200;
			nf_enroll_claim(e, "::ffff:127.0.0.1", body, strlen(body),
					&resp, &status);
			assert_int_not_equal(status, 200);
			assert_non_null(strstr(nf_errmsg(ctx), "echo partial; "
					       "exit 3' failed"));
			json_decref(resp);
			free(body);
			nf_enroll_free(e);
			continue;
		}
		claim_accept(e, &c, "::ffff:127.0.0.1", body, &res);
		assert_int_equal(res.slurmdbd_password, 1);
		conf_is("StoragePass=from-a-vault\n");
		free(body);
		nf_enroll_free(e);
	}
}

/* Credentials (the unit's LoadCredential=, $CREDENTIALS_DIRECTORY)
 * replace the site's secrets where present: the key and the password a
 * controller gets come from them, and the site's password command never
 * runs */
static void test_enroll_credentials(void **state)
{
	struct nf_enroll *e;
	struct nf_enroll_claim c;
	struct nf_enroll_result res;
	uint8_t cred_key[1024];
	char *body;
	int fd;
	(void)state;

	server_pw_cmd = "echo from-the-site; exit 7";
	e = server("state-cred");
	server_pw_cmd = NULL;
	mkdir(P("creds"), 0700);
	/* none: nothing changes */
	assert_int_equal(nf_enroll_credentials(e, NULL), 0);
	assert_int_equal(nf_enroll_credentials(e, P("creds")), 0);
	memset(cred_key, 0x5a, sizeof(cred_key));
	fd = open(P("creds/munge.key"), O_WRONLY | O_CREAT, 0400);
	assert_int_equal(write(fd, cred_key, sizeof(cred_key)), 1024);
	close(fd);
	put("creds/slurmdbd.password", "from-a-credential\n", 0400);
	assert_int_equal(nf_enroll_credentials(e, P("creds")), 0);
	mkdir(P("root/etc/slurm"), 0755);
	put("root/etc/slurm/slurmdbd.conf", "StoragePass=old\n", 0644);
	open_window(e, "cp-01");
	assert_int_equal(nf_enroll_claim_make(ctx, &c, "cp-01", NULL, &body),
			 0);
	claim_accept(e, &c, "127.0.0.1", body, &res);
	assert_int_equal(res.slurmdbd_password, 1);
	node_key_is(cred_key);
	conf_is("StoragePass=from-a-credential\n");
	free(body);
	nf_enroll_free(e);
}

/* The key goes where the munge facet checks it: a profile that moves
 * munge.key_path and sets its own owner and mode gets the key there, and
 * the facet's checks pass on the enrolled root */
static void test_enroll_profile_key_place(void **state)
{
	struct nf_enroll *e = server("state-kp");
	struct nf_verify_opts vo = { .only = "munge.key" };
	struct nf_enroll_claim c;
	struct nf_enroll_result res;
	struct nf_profile *p = NULL;
	struct nf_verify *v = NULL;
	struct stat st;
	char *body, *dump, root[256], sys[256];
	json_t *resp;
	int status, checked = 0;
	(void)state;

	make_root("root-kp");
	mkdir(P("root-kp/etc/nodeforge"), 0755);
	mkdir(P("sys-kp"), 0755);
	put("root-kp/etc/nodeforge/profile.json",
	    "{\"role\":\"compute\",\"boot_args\":[],\"munge\":{"
	    "\"key_path\":\"/etc/munge-site/cluster.key\","
	    "\"owner\":\"slurm\",\"mode\":\"0600\"}}", 0644);
	snprintf(root, sizeof(root), "%s", P("root-kp"));
	snprintf(sys, sizeof(sys), "%s", P("sys-kp"));
	open_window(e, "gpu-01");
	assert_int_equal(nf_enroll_claim_make(ctx, &c, "gpu-01",
					      "52:54:00:00:00:01", &body), 0);
	resp = claim(e, "127.0.0.1", body, &status);
	assert_int_equal(status, 200);
	dump = json_dumps(resp, 0);
	assert_int_equal(nf_enroll_claim_accept(ctx, &c, dump, strlen(dump),
						root, &res), 0);
	assert_int_equal(stat(P("root-kp/etc/munge-site/cluster.key"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, 64030);
	assert_int_equal(access(P("root-kp/etc/munge/munge.key"), F_OK), -1);

	/* the facet's own checks, as on the booted node (a sysroot) */
	vo.root = root;
	vo.sysroot = sys;
	assert_int_equal(nf_profile_load_json(ctx,
			 P("root-kp/etc/nodeforge/profile.json"), &p), 0);
	assert_int_equal(nf_verify_run(ctx, p, &vo, &v), 0);
	for (size_t i = 0; i < nf_verify_count(v); i++) {
		const struct nf_check_result *r = nf_verify_result(v, i);

		if (strcmp(r->id, "munge.key.present") &&
		    strcmp(r->id, "munge.key.mode") &&
		    strcmp(r->id, "munge.key.owner"))
			continue;
		if (r->verdict != NF_V_PASS)
			fail_msg("%s: expected %s, seen %s", r->id,
				 r->expected ? r->expected : "",
				 r->seen ? r->seen : "");
		checked++;
	}
	assert_int_equal(checked, 3);
	nf_verify_free(v);
	nf_profile_free(p);
	free(dump);
	free(body);
	json_decref(resp);
	nf_enroll_free(e);
}

static void expect_refusal(struct nf_enroll *e, const char *peer,
			   const char *body, int code, const char *reason,
			   const char *msg)
{
	int status = 0;
	json_t *resp = claim(e, peer, body, &status);

	assert_int_equal(status, code);
	assert_string_equal(json_string_value(json_object_get(resp, "reason")),
			    reason);
	if (!strstr(json_string_value(json_object_get(resp, "error")), msg))
		fail_msg("message '%s' lacks '%s'",
			 json_string_value(json_object_get(resp, "error")), msg);
	assert_null(json_object_get(resp, "sealed"));
	assert_int_equal(last_level, NF_LOG_ERR);
	assert_non_null(strstr(last_log, "REFUSED"));
	json_decref(resp);
}

/* A refusal is one line appended to refusals.log: enroll.json is not
 * rewritten; the log is rotated at 1 MiB; a state that still holds
 * refusals hands them to the log when next saved */
static void test_refusals_log(void **state)
{
	struct nf_enroll *e = server("state-log");
	struct nf_enroll_claim c;
	char *body, *buf;
	char *names[] = { "gpu-02" };
	struct stat sb;
	size_t len;
	json_t *st, *ref;
	FILE *f;
	(void)state;

	assert_int_equal(nf_enroll_claim_make(ctx, &c, "evil-01", NULL, &body),
			 0);
	expect_refusal(e, "127.0.0.1", body, 403, "unknown-node",
		       "'evil-01' is not a node of the inventory");
	free(body);
	/* no state written for a refusal, one line appended */
	assert_int_equal(stat(P("state-log/enroll.json"), &sb), -1);
	assert_int_equal(nf_read_file(NULL, P("state-log/refusals.log"), 1 << 20,
				      &buf, &len), 0);
	assert_non_null(strstr(buf, "\"reason\":\"unknown-node\""));
	assert_int_equal(buf[len - 1], '\n');
	assert_ptr_equal(strchr(buf, '\n'), buf + len - 1);
	free(buf);
	stat(P("state-log/refusals.log"), &sb);
	assert_int_equal(sb.st_mode & 07777, 0600);

	/* at 1 MiB the log becomes refusals.log.1 */
	f = fopen(P("state-log/refusals.log"), "a");
	assert_non_null(f);
	while (ftell(f) < (long)NF_ENROLL_REFUSALS_ROTATE - 100)
		fputs("{\"at\":1,\"node\":\"x\",\"peer\":\"\",\"reason\":"
		      "\"filler\",\"message\":\"\"}\n", f);
	fputs("not json\n", f); /* skipped when read */
	fclose(f);
	assert_int_equal(nf_enroll_claim_make(ctx, &c, "evil-02", NULL, &body),
			 0);
	expect_refusal(e, "127.0.0.1", body, 403, "unknown-node", "evil-02");
	free(body);
	assert_int_equal(stat(P("state-log/refusals.log.1"), &sb), 0);
	assert_true(sb.st_size <= (off_t)NF_ENROLL_REFUSALS_ROTATE);
	assert_int_equal(stat(P("state-log/refusals.log"), &sb), 0);
	assert_true(sb.st_size < 300);
	assert_int_equal(nf_enroll_state(e, &st), 0);
	ref = json_object_get(st, "refusals");
	assert_true(json_array_size(ref) > 5000);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(ref, 0), "node")), "evil-01");
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(ref, json_array_size(ref) - 1),
				    "node")), "evil-02");
	json_decref(st);

	/* an older state's refusals move to the log at the next save */
	unlink(P("state-log/refusals.log.1"));
	unlink(P("state-log/refusals.log"));
	put("state-log/enroll.json", "{\"version\":1,\"windows\":{},\"claims\":{},"
	    "\"refusals\":[{\"at\":5,\"node\":\"old-01\",\"peer\":\"\","
	    "\"reason\":\"no-window\",\"message\":\"m\"}]}", 0600);
	assert_int_equal(nf_enroll_open(e, names, 1, 600, 0), 0);
	assert_int_equal(nf_read_file(NULL, P("state-log/enroll.json"), 1 << 20,
				      &buf, &len), 0);
	assert_null(strstr(buf, "refusals"));
	free(buf);
	assert_int_equal(nf_enroll_state(e, &st), 0);
	ref = json_object_get(st, "refusals");
	assert_int_equal(json_array_size(ref), 1);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(ref, 0), "node")), "old-01");
	json_decref(st);
	nf_enroll_free(e);
}

static void test_refusals(void **state)
{
	struct nf_enroll *e = server("state3");
	struct nf_enroll_claim c;
	char *body, *ok;
	json_t *st, *ref;
	int status;
	(void)state;

	/* unknown node */
	assert_int_equal(nf_enroll_claim_make(ctx, &c, "evil-01", NULL, &body),
			 0);
	expect_refusal(e, "127.0.0.1", body, 403, "unknown-node",
		       "'evil-01' is not a node of the inventory");
	free(body);
	/* no window */
	assert_int_equal(nf_enroll_claim_make(ctx, &c, "gpu-02", NULL, &body), 0);
	expect_refusal(e, "127.0.0.2", body, 403, "no-window",
		       "no enrollment window for 'gpu-02'");
	/* wrong source address */
	open_window(e, "gpu-02");
	expect_refusal(e, "127.0.0.1", body, 403, "wrong-address",
		       "came from 127.0.0.1, not from its inventory address "
		       "127.0.0.2");
	/* outside the window: after it closed, and before it opened */
	nf_enroll_set_now(e, T0 + 601);
	expect_refusal(e, "127.0.0.2", body, 403, "outside-window",
		       "outside its window");
	nf_enroll_set_now(e, T0 - 1);
	expect_refusal(e, "127.0.0.2", body, 403, "outside-window",
		       "outside its window");
	/* inside: accepted; then a second claim is refused loudly */
	nf_enroll_set_now(e, T0 + 600);
	ok = body;
	{
		json_t *resp = claim(e, "127.0.0.2", ok, &status);

		assert_int_equal(status, 200);
		json_decref(resp);
	}
	free(body);
	assert_int_equal(nf_enroll_claim_make(ctx, &c, "gpu-02", NULL, &body), 0);
	expect_refusal(e, "127.0.0.2", body, 409, "already-enrolled",
		       "'gpu-02' already enrolled");
	free(body);
	/* wrong MAC */
	open_window(e, "gpu-01");
	assert_int_equal(nf_enroll_claim_make(ctx, &c, "gpu-01",
					      "52:54:00:00:00:09", &body), 0);
	expect_refusal(e, "127.0.0.1", body, 403, "wrong-mac",
		       "not its inventory MAC 52:54:00:00:00:01");
	free(body);
	/* malformed */
	expect_refusal(e, "127.0.0.1", "{\"name\":\"gpu-01\"}", 400, "malformed",
		       "malformed claim");
	expect_refusal(e, "127.0.0.1", "not json", 400, "malformed",
		       "malformed claim");
	expect_refusal(e, "127.0.0.1",
		       "{\"name\":\"gpu-01\",\"pubkey\":\"QUFB\",\"nonce\":"
		       "\"QUFBQUFBQUFBQUFBQUFBQQ==\"}", 400, "malformed",
		       "malformed claim");

	/* each refusal is in the state, with its reason */
	assert_int_equal(nf_enroll_state(e, &st), 0);
	ref = json_object_get(st, "refusals");
	assert_int_equal(json_array_size(ref), 10);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(ref, 0), "reason")),
			    "unknown-node");
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(ref, 5), "reason")),
			    "already-enrolled");
	json_decref(st);

	/* an enrolled node's window is only re-armed with reenroll */
	{
		char *names[] = { "gpu-02" };

		assert_int_equal(nf_enroll_open(e, names, 1, 60, 0), -EEXIST);
		assert_int_equal(nf_enroll_open(e, names, 1, 60, 1), 0);
	}
	nf_enroll_free(e);
}

static void test_oversized_claim(void **state)
{
	struct nf_enroll *e = server("state4");
	char *big = calloc(1, NF_ENROLL_BODY_MAX + 2);
	json_t *resp = NULL;
	int status;
	(void)state;

	memset(big, ' ', NF_ENROLL_BODY_MAX + 1);
	assert_int_equal(nf_enroll_claim(e, "127.0.0.1", big,
					 NF_ENROLL_BODY_MAX + 1, &resp, &status),
			 0);
	assert_int_equal(status, 413);
	json_decref(resp);
	free(big);
	nf_enroll_free(e);
}

static void test_tampered_and_replayed_response(void **state)
{
	struct nf_enroll *e = server("state5");
	struct nf_enroll_claim c, c2;
	struct nf_enroll_result res;
	char *body, *body2, *dump;
	json_t *resp;
	int status;
	char *s;
	(void)state;

	open_window(e, "gpu-02");
	assert_int_equal(nf_enroll_claim_make(ctx, &c, "gpu-02", NULL, &body), 0);
	c2 = c;
	resp = claim(e, "127.0.0.2", body, &status);
	assert_int_equal(status, 200);
	dump = json_dumps(resp, 0);
	/* flip one base64 character in the middle of the sealed box */
	s = strstr(dump, "\"sealed\": \"") + 30;
	*s = *s == 'A' ? 'B' : 'A';
	assert_int_equal(nf_enroll_claim_accept(ctx, &c, dump, strlen(dump),
						P("root2"), &res), NF_E_SIGNATURE);
	assert_non_null(strstr(nf_errmsg(ctx), "does not open"));
	assert_int_equal(access(P("root2"), F_OK), -1);
	free(dump);
	/* the untouched response under another claim nonce does not open */
	dump = json_dumps(resp, 0);
	assert_int_equal(nf_enroll_claim_make(ctx, &c, "gpu-02", NULL, &body2),
			 0);
	memcpy(c.priv, c2.priv, 32);
	assert_int_equal(nf_enroll_claim_accept(ctx, &c, dump, strlen(dump),
						P("root2"), &res), NF_E_SIGNATURE);
	free(body2);
	free(dump);
	free(body);
	json_decref(resp);
	nf_enroll_free(e);
}

static void test_state_dir_rules(void **state)
{
	struct nf_enroll_opts o = { 0 };
	struct nf_enroll *e = NULL;
	char sd[256], tree[256];
	(void)state;

	snprintf(sd, sizeof(sd), "%s/open-state", tmp);
	mkdir(sd, 0755);
	chmod(sd, 0755);
	o.state_dir = sd;
	assert_int_equal(nf_enroll_new(ctx, &o, &e), NF_E_UNSAFE);
	assert_non_null(strstr(nf_errmsg(ctx), "chmod 0700"));
	snprintf(tree, sizeof(tree), "%s/tree", tmp);
	snprintf(sd, sizeof(sd), "%s/tree/state", tmp);
	o.state_dir = sd;
	o.served_tree = tree;
	assert_int_equal(nf_enroll_new(ctx, &o, &e), NF_E_UNSAFE);
	assert_non_null(strstr(nf_errmsg(ctx), "inside the served tree"));
	assert_int_equal(access(sd, F_OK), -1);
	snprintf(sd, sizeof(sd), "%s/fresh-state", tmp);
	assert_int_equal(nf_enroll_new(ctx, &o, &e), 0);
	nf_enroll_free(e);
	{
		struct stat st;

		assert_int_equal(stat(sd, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0700);
	}
}

static void test_server_refuses_open_key(void **state)
{
	struct nf_enroll *e = server("state6");
	struct nf_enroll_claim c;
	char *body;
	json_t *resp;
	int status;
	(void)state;

	chmod(P("secrets/munge.key"), 0644);
	open_window(e, "gpu-02");
	assert_int_equal(nf_enroll_claim_make(ctx, &c, "gpu-02", NULL, &body), 0);
	resp = claim(e, "127.0.0.2", body, &status);
	assert_int_equal(status, 500);
	assert_non_null(strstr(last_log, "readable by others"));
	json_decref(resp);
	chmod(P("secrets/munge.key"), 0400);
	/* the node was not marked enrolled: it may try again */
	resp = claim(e, "127.0.0.2", body, &status);
	assert_int_equal(status, 200);
	json_decref(resp);
	free(body);
	nf_enroll_free(e);
}

static void test_fingerprint_verdict(void **state)
{
	char fp[NF_FINGERPRINT_LEN], seen[NF_FINGERPRINT_LEN];
	char old[NF_FINGERPRINT_LEN];
	(void)state;

	nf_fingerprint(munge_key, sizeof(munge_key), fp);
	nf_fingerprint("old", 3, old);
	assert_int_equal(nf_munge_fingerprint_file(ctx, P("secrets/munge.key"),
						   seen), 0);
	assert_string_equal(seen, fp);
	assert_int_equal(nf_munge_fingerprint_verdict(ctx, P("secrets/munge.key"),
						      fp, NULL, seen),
			 NF_MUNGE_FP_OK);
	assert_int_equal(nf_munge_fingerprint_verdict(ctx, P("secrets/munge.key"),
						      fp + 7, NULL, seen),
			 NF_MUNGE_FP_OK);
	assert_int_equal(nf_munge_fingerprint_verdict(ctx, P("secrets/munge.key"),
						      old, fp, seen),
			 NF_MUNGE_FP_PREVIOUS);
	assert_non_null(strstr(nf_errmsg(ctx), "previous key"));
	assert_non_null(strstr(nf_munge_fingerprint_remedy(NF_MUNGE_FP_PREVIOUS),
			       "rotate"));
	assert_int_equal(nf_munge_fingerprint_verdict(ctx, P("secrets/munge.key"),
						      old, NULL, seen),
			 NF_MUNGE_FP_OTHER);
	assert_int_equal(nf_munge_fingerprint_verdict(ctx, P("secrets/none"),
						      old, NULL, seen),
			 NF_MUNGE_FP_MISSING);
	assert_non_null(strstr(nf_munge_fingerprint_remedy(NF_MUNGE_FP_MISSING),
			       "enroll open"));
}

static void test_secret_write_refuses_escape(void **state)
{
	int rootfd = open(P("root"), O_RDONLY | O_DIRECTORY);
	(void)state;

	assert_int_equal(nf_secret_write_at(ctx, rootfd, "etc/../../x", "k", 1,
					    0400, -1, -1), NF_E_UNSAFE);
	assert_int_equal(symlink("/tmp", P("root/link")), 0);
	assert_int_equal(nf_secret_write_at(ctx, rootfd, "link/x", "k", 1, 0400,
					    -1, -1), NF_E_UNSAFE);
	close(rootfd);
}


/* A rotation poll body for `name` holding `key` */
static char *rot_body(const char *name, const uint8_t *key, size_t klen,
		      uint8_t priv[32], uint8_t nonce[16], int bad_proof)
{
	uint8_t pub[32], msg[512], mac[32];
	char fp[NF_FINGERPRINT_LEN], *a, *b, *c, *out;
	size_t n = 0;
	json_t *j;

	assert_int_equal(nf_x25519_keypair(ctx, priv, pub), 0);
	assert_int_equal(nf_random_bytes(ctx, nonce, 16), 0);
	memcpy(msg, "nodeforge-rotate-v1", 20);
	n = 20;
	memcpy(msg + n, name, strlen(name) + 1);
	n += strlen(name) + 1;
	memcpy(msg + n, nonce, 16);
	n += 16;
	memcpy(msg + n, pub, 32);
	n += 32;
	assert_int_equal(nf_hmac_sha256(key, klen, msg, n, mac), 0);
	mac[0] ^= (uint8_t)bad_proof;
	nf_fingerprint(key, klen, fp);
	a = nf_b64_encode(pub, 32);
	b = nf_b64_encode(nonce, 16);
	c = nf_b64_encode(mac, 32);
	j = json_pack("{s:s,s:s,s:s,s:s,s:s}", "name", name, "pubkey", a,
		      "nonce", b, "have", fp, "proof", c);
	out = json_dumps(j, 0);
	json_decref(j);
	free(a);
	free(b);
	free(c);
	return out;
}

static const char *rot_action(struct nf_enroll *e, const char *peer,
			      const char *body, int *status)
{
	static char act[32];
	json_t *resp = claim_rot(e, peer, body, status);
	const char *a = json_string_value(json_object_get(resp, "action"));
	const char *reason = json_string_value(json_object_get(resp, "reason"));

	snprintf(act, sizeof(act), "%s", a ? a : reason ? reason : "?");
	json_decref(resp);
	return act;
}

static void test_rotation(void **state)
{
	struct nf_enroll *e = server("state7");
	struct nf_enroll_claim c;
	char *body, fp[NF_FINGERPRINT_LEN], *names[] = { "gpu-02", "cp-01" };
	uint8_t priv[32], nonce[16], newkey[1024];
	json_t *resp, *rot;
	int status, fd;
	(void)state;

	assert_int_equal(nf_enroll_open(e, names, 2, 600, 0), 0);
	assert_int_equal(nf_enroll_claim_make(ctx, &c, "gpu-02", NULL, &body), 0);
	json_decref(claim(e, "127.0.0.2", body, &status));
	free(body);
	assert_int_equal(nf_enroll_claim_make(ctx, &c, "cp-01", NULL, &body), 0);
	json_decref(claim(e, "127.0.0.1", body, &status));
	free(body);

	/* no rotation yet */
	body = rot_body("gpu-02", munge_key, 1024, priv, nonce, 0);
	assert_string_equal(rot_action(e, "127.0.0.2", body, &status), "none");
	free(body);

	assert_int_equal(nf_rotate_begin(e, fp), 0);
	assert_int_equal(nf_rotate_begin(e, fp), -EBUSY);
	assert_int_equal(nf_rotate_status(e, &rot), 0);
	/* controllers first */
	assert_string_equal(json_string_value(json_array_get(json_array_get(
				    json_object_get(rot, "groups"), 0), 0)), "cp-01");
	json_decref(rot);

	/* bad proof, wrong address */
	body = rot_body("gpu-02", munge_key, 1024, priv, nonce, 1);
	assert_string_equal(rot_action(e, "127.0.0.2", body, &status), "bad-proof");
	assert_int_equal(status, 403);
	free(body);
	body = rot_body("gpu-02", munge_key, 1024, priv, nonce, 0);
	assert_string_equal(rot_action(e, "127.0.0.1", body, &status),
			    "wrong-address");
	/* staged, sealed to the poll's key */
	resp = claim_rot(e, "127.0.0.2", body, &status);
	assert_int_equal(status, 200);
	assert_string_equal(json_string_value(json_object_get(resp, "action")),
			    "stage");
	{
		uint8_t aad[128], *blob, *pt;
		size_t al = 0, bl, pl;
		json_t *p;
		uint8_t *k;
		size_t kl;

		memcpy(aad, "nodeforge-rotate-v1", 20);
		al = 20;
		memcpy(aad + al, "gpu-02", 7);
		al += 7;
		memcpy(aad + al, nonce, 16);
		al += 16;
		assert_int_equal(nf_b64_decode(json_string_value(json_object_get(
					       resp, "sealed")), 4096, &blob, &bl), 0);
		assert_int_equal(nf_seal_open(ctx, priv, aad, al, blob, bl, &pt,
					      &pl), 0);
		p = json_loads((char *)pt, 0, NULL);
		assert_int_equal(nf_b64_decode(json_string_value(json_object_get(
					       p, "munge_key")), 1024, &k, &kl), 0);
		assert_int_equal(kl, 1024);
		memcpy(newkey, k, 1024);
		{
			char kfp[NF_FINGERPRINT_LEN];

			nf_fingerprint(k, kl, kfp);
			assert_string_equal(kfp, fp);
		}
		free(k);
		json_decref(p);
		nf_wipe_free(pt, pl + 1);
		free(blob);
	}
	json_decref(resp);
	free(body);
	/* compute may switch only after its group's turn */
	assert_int_equal(nf_rotate_go(e, 0), 0);
	body = rot_body("gpu-02", munge_key, 1024, priv, nonce, 0);
	assert_string_equal(rot_action(e, "127.0.0.2", body, &status), "stage");
	free(body);
	body = rot_body("cp-01", munge_key, 1024, priv, nonce, 0);
	assert_string_equal(rot_action(e, "127.0.0.1", body, &status), "switch");
	free(body);
	assert_int_equal(nf_rotate_go(e, 1), 0);
	body = rot_body("gpu-02", munge_key, 1024, priv, nonce, 0);
	assert_string_equal(rot_action(e, "127.0.0.2", body, &status), "switch");
	free(body);
	/* proving the new key: done */
	body = rot_body("gpu-02", newkey, 1024, priv, nonce, 0);
	assert_string_equal(rot_action(e, "127.0.0.2", body, &status), "done");
	free(body);
	/* a key nobody issued */
	body = rot_body("gpu-02", (const uint8_t *)"0123456789abcdef0123456789abcdef",
			32, priv, nonce, 0);
	assert_string_equal(rot_action(e, "127.0.0.2", body, &status),
			    "not-in-rotation");
	free(body);
	assert_int_equal(nf_rotate_finish(e), 0);
	/* the server now holds the new key; the old one was kept */
	fd = open(P("secrets/munge.key"), O_RDONLY);
	{
		uint8_t got[1024];

		assert_int_equal(read(fd, got, 1024), 1024);
		assert_memory_equal(got, newkey, 1024);
	}
	close(fd);
	/* the controller, which never reported, can still switch */
	body = rot_body("cp-01", munge_key, 1024, priv, nonce, 0);
	assert_string_equal(rot_action(e, "127.0.0.1", body, &status), "switch");
	free(body);
	memcpy(munge_key, newkey, 1024);
	nf_enroll_free(e);
}

/* A finish killed right after it replaced the site's key (the
 * NODEFORGE_TEST_CRASH_AT hook, in a child) leaves the old key answered,
 * and the next finish completes it without copying the new key over
 * munge.key.previous; a third finish changes nothing */
static void test_rotation_finish_killed(void **state)
{
	struct nf_enroll *e = server("state10");
	struct nf_enroll_claim c;
	char *body, fp[NF_FINGERPRINT_LEN], oldfp[NF_FINGERPRINT_LEN];
	char got[NF_FINGERPRINT_LEN], *names[] = { "cp-01" };
	uint8_t priv[32], nonce[16], old[1024];
	json_t *rot;
	int status, fd, ws;
	pid_t pid;
	(void)state;

	fd = open(P("secrets/munge.key"), O_RDONLY);
	assert_int_equal(read(fd, old, sizeof(old)), 1024);
	close(fd);
	nf_fingerprint(old, sizeof(old), oldfp);
	assert_int_equal(nf_enroll_open(e, names, 1, 600, 0), 0);
	assert_int_equal(nf_enroll_claim_make(ctx, &c, "cp-01", NULL, &body), 0);
	json_decref(claim(e, "127.0.0.1", body, &status));
	free(body);
	assert_int_equal(nf_rotate_begin(e, fp), 0);

	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		setenv("NODEFORGE_TEST_CRASH_AT", "finish-key", 1);
		nf_rotate_finish(e);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	assert_true(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
	assert_int_equal(nf_munge_fingerprint_file(ctx, P("secrets/munge.key"),
						   got), 0);
	assert_string_equal(got, fp);
	assert_int_equal(nf_munge_fingerprint_file(
				 ctx, P("state10/munge.key.previous"), got), 0);
	assert_string_equal(got, oldfp);
	/* the node still holds the old key: proved, handed the new one */
	body = rot_body("cp-01", old, sizeof(old), priv, nonce, 0);
	assert_string_equal(rot_action(e, "127.0.0.1", body, &status), "stage");
	assert_int_equal(status, 200);
	free(body);

	for (int run = 0; run < 2; run++) {
		assert_int_equal(nf_rotate_finish(e), 0);
		assert_int_equal(nf_munge_fingerprint_file(
					 ctx, P("state10/munge.key.previous"),
					 got), 0);
		assert_string_equal(got, oldfp);
		assert_int_equal(nf_munge_fingerprint_file(
					 ctx, P("secrets/munge.key"), got), 0);
		assert_string_equal(got, fp);
		assert_int_equal(access(P("state10/munge.key.next"), F_OK), -1);
		assert_int_equal(nf_rotate_status(e, &rot), 0);
		assert_true(json_is_true(json_object_get(rot, "finished")));
		json_decref(rot);
	}
	/* a straggler on the old key is still answered */
	body = rot_body("cp-01", old, sizeof(old), priv, nonce, 0);
	assert_string_equal(rot_action(e, "127.0.0.1", body, &status), "switch");
	free(body);
	/* the later tests sign with the site's key */
	fd = open(P("secrets/munge.key"), O_RDONLY);
	assert_int_equal(read(fd, munge_key, sizeof(munge_key)), 1024);
	close(fd);
	nf_enroll_free(e);
}

/* A node enrolled while a rotation runs joins its last group */
static void test_rotation_late_join(void **state)
{
	struct nf_enroll *e = server("state8");
	struct nf_enroll_claim c;
	char *body, fp[NF_FINGERPRINT_LEN], *names[] = { "cp-01" };
	uint8_t priv[32], nonce[16];
	json_t *rot, *groups;
	int status;
	(void)state;

	assert_int_equal(nf_enroll_open(e, names, 1, 600, 0), 0);
	assert_int_equal(nf_enroll_claim_make(ctx, &c, "cp-01", NULL, &body), 0);
	json_decref(claim(e, "127.0.0.1", body, &status));
	free(body);
	assert_int_equal(nf_rotate_begin(e, fp), 0);
	/* gpu-02 enrolls now, with the (old) key of the site */
	names[0] = "gpu-02";
	assert_int_equal(nf_enroll_open(e, names, 1, 600, 0), 0);
	assert_int_equal(nf_enroll_claim_make(ctx, &c, "gpu-02", NULL, &body), 0);
	json_decref(claim(e, "127.0.0.2", body, &status));
	assert_int_equal(status, 200);
	free(body);
	body = rot_body("gpu-02", munge_key, 1024, priv, nonce, 0);
	assert_string_equal(rot_action(e, "127.0.0.2", body, &status), "stage");
	free(body);
	assert_int_equal(nf_rotate_status(e, &rot), 0);
	groups = json_object_get(rot, "groups");
	assert_int_equal(json_array_size(groups), 1);
	assert_int_equal(json_array_size(json_array_get(groups, 0)), 2);
	assert_non_null(json_object_get(json_object_get(rot, "nodes"), "gpu-02"));
	json_decref(rot);
	/* a node that never enrolled does not join */
	body = rot_body("gpu-01", munge_key, 1024, priv, nonce, 0);
	assert_string_equal(rot_action(e, "127.0.0.1", body, &status),
			    "not-in-rotation");
	free(body);
	nf_enroll_free(e);
}

/* The longest node name the server takes (255 bytes) is answered during
 * a rotation like any other: the answer's proof prefix is longer than the
 * claim's */
static void test_rotation_longest_name(void **state)
{
	struct nf_enroll *e = server("state9");
	struct nf_enroll_node n = { NULL, "compute", "r2", NULL, 0x7f000003 };
	struct nf_enroll_claim c;
	char name[256], *body, fp[NF_FINGERPRINT_LEN], *names[1];
	uint8_t priv[32], nonce[16];
	int status;
	(void)state;

	memset(name, 'n', 255);
	name[255] = '\0';
	n.name = name;
	names[0] = name;
	assert_int_equal(nf_enroll_add_node(e, &n), 0);
	assert_int_equal(nf_enroll_open(e, names, 1, 600, 0), 0);
	assert_int_equal(nf_enroll_claim_make(ctx, &c, name, NULL, &body), 0);
	json_decref(claim(e, "127.0.0.3", body, &status));
	assert_int_equal(status, 200);
	free(body);
	assert_int_equal(nf_rotate_begin(e, fp), 0);
	body = rot_body(name, munge_key, 1024, priv, nonce, 0);
	assert_string_equal(rot_action(e, "127.0.0.3", body, &status), "stage");
	free(body);
	nf_enroll_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_enroll_compute),
		cmocka_unit_test(test_enroll_controller_password),
		cmocka_unit_test(test_enroll_password_command),
		cmocka_unit_test(test_enroll_credentials),
		cmocka_unit_test(test_enroll_profile_key_place),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_refusals_log),
		cmocka_unit_test(test_oversized_claim),
		cmocka_unit_test(test_tampered_and_replayed_response),
		cmocka_unit_test(test_state_dir_rules),
		cmocka_unit_test(test_server_refuses_open_key),
		cmocka_unit_test(test_fingerprint_verdict),
		cmocka_unit_test(test_secret_write_refuses_escape),
		cmocka_unit_test(test_rotation_late_join),
		cmocka_unit_test(test_rotation_finish_killed),
		cmocka_unit_test(test_rotation),
		cmocka_unit_test(test_rotation_longest_name),
		cmocka_unit_test(test_enroll_leaves_no_message),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
