/* SPDX-License-Identifier: MIT */
/* Single checks on a copy of the passing fixture sysroot, changed the way
 * a node gets them wrong: each passes on the fixture and fails, with its
 * own text, on the change. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "internal.h"

static char srcdir[1024];

struct scratch {
	char dir[64];           /* the copy of tests/fixtures/sysroot/pass */
	char fixture[128];      /* its hardware-ops fixture, changed by tests */
	struct nf_ctx *ctx;
	struct nf_profile *p;
	struct nf_verify *v;
};

static void sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

static void put(const struct scratch *s, const char *path, const char *text)
{
	char full[512];
	FILE *f;

	snprintf(full, sizeof(full), "%s%s", s->dir, path);
	assert_non_null(f = fopen(full, "w"));
	fputs(text, f);
	fclose(f);
}

/* The pass fixture with the key and munge's account as the verify tests
 * set them (git keeps no modes, and munge is whoever runs the test) */
static void scratch_new(struct scratch *s, const char *profile)
{
	char path[1200], pw[128];

	snprintf(s->dir, sizeof(s->dir), "/tmp/nf-checks.XXXXXX");
	assert_non_null(mkdtemp(s->dir));
	sh("cp -a '%s/tests/fixtures/sysroot/pass/.' '%s/'", srcdir, s->dir);
	snprintf(path, sizeof(path), "%s/etc/munge/munge.key", s->dir);
	assert_int_equal(chmod(path, 0400), 0);
	snprintf(pw, sizeof(pw), "daemon:x:1:1::/:/bin/false\nmunge:x:%u:%u::/:/bin/false\n",
		 (unsigned)getuid(), (unsigned)getgid());
	put(s, "/etc/passwd", pw);
	snprintf(s->fixture, sizeof(s->fixture), "%s/fixture.json", s->dir);
	assert_int_equal(nf_ctx_new(&s->ctx), 0);
	snprintf(path, sizeof(path), "%s/tests/fixtures/%s", srcdir, profile);
	assert_int_equal(nf_profile_load_json(s->ctx, path, &s->p), 0);
}

static void scratch_free(struct scratch *s)
{
	nf_verify_free(s->v);
	nf_profile_free(s->p);
	nf_ctx_free(s->ctx);
	sh("rm -rf '%s'", s->dir);
	memset(s, 0, sizeof(*s));
}

/* The fixture's answer for commands starting with `prefix` */
static void answer(const struct scratch *s, const char *prefix, int rc, const char *out)
{
	json_t *fx = json_load_file(s->fixture, 0, NULL);

	assert_non_null(fx);
	json_object_set_new(json_object_get(fx, "commands"), prefix,
			    json_pack("{s:i,s:s}", "rc", rc, "out", out));
	assert_int_equal(json_dump_file(fx, s->fixture, 0), 0);
	json_decref(fx);
}

/* Verify the checks `only` selects; the result of check `id` */
static const struct nf_check_result *run(struct scratch *s, const char *only,
					 const char *id)
{
	struct nf_verify_opts o = { .sysroot = s->dir, .fixture = s->fixture, .only = only };

	nf_verify_free(s->v);
	s->v = NULL;
	assert_int_equal(nf_verify_run(s->ctx, s->p, &o, &s->v), 0);
	for (size_t i = 0; i < nf_verify_count(s->v); i++)
		if (!strcmp(nf_verify_result(s->v, i)->id, id))
			return nf_verify_result(s->v, i);
	fail_msg("no check %s", id);
	return NULL;
}

static void test_munge_key_group(void **state)
{
	const struct nf_check_result *r;
	struct scratch s = { 0 };
	char want[64], group[128];

	(void)state;
	scratch_new(&s, "sysroot/pass/etc/nodeforge/profile.json");
	r = run(&s, "munge.key", "munge.key.group");
	snprintf(want, sizeof(want), "group %u", (unsigned)getgid());
	assert_int_equal(r->verdict, NF_V_PASS);
	assert_string_equal(r->seen, want);

	/* munge's login group is another one, named in /etc/group */
	snprintf(group, sizeof(group), "munge:x:%u:4242::/:/bin/false\n", (unsigned)getuid());
	put(&s, "/etc/passwd", group);
	snprintf(group, sizeof(group), "munge:x:4242:\nwheel:x:%u:\n", (unsigned)getgid());
	put(&s, "/etc/group", group);
	r = run(&s, "munge.key", "munge.key.group");
	assert_int_equal(r->verdict, NF_V_FAIL);
	assert_string_equal(r->expected, "group munge (munge's login group)");
	assert_string_equal(r->seen, "group wheel");
	assert_string_equal(r->remedy,
			    "chown munge:munge /etc/munge/munge.key && systemctl restart munge");

	/* without munge in /etc/passwd the owner check says it, not this one */
	put(&s, "/etc/passwd", "daemon:x:1:1::/:/bin/false\n");
	r = run(&s, "munge.key", "munge.key.group");
	assert_int_equal(r->verdict, NF_V_SKIP);
	assert_string_equal(r->cause, "munge.key.owner");
	scratch_free(&s);
}

static void test_chrony_rtcsync_iburst(void **state)
{
	const struct nf_check_result *r;
	struct scratch s = { 0 };

	(void)state;
	scratch_new(&s, "sysroot/pass/etc/nodeforge/profile.json");
	r = run(&s, "time.chrony.conf", "time.chrony.conf");
	assert_int_equal(r->verdict, NF_V_PASS);
	put(&s, "/etc/chrony/chrony.conf",
	    "server 10.0.0.1\nmaxdistance 1\nmakestep 1 3\nrtcsync2\n");
	r = run(&s, "time.chrony.conf", "time.chrony.conf");
	assert_int_equal(r->verdict, NF_V_FAIL);
	assert_string_equal(r->seen, "/etc/chrony/chrony.conf: server 10.0.0.1 without "
			    "iburst, 'rtcsync' missing");
	put(&s, "/etc/chrony/chrony.conf",
	    "server 10.0.0.1 iburst maxpoll 6\nmaxdistance 1\nmakestep 1 3\nrtcsync\n");
	r = run(&s, "time.chrony.conf", "time.chrony.conf");
	assert_int_equal(r->verdict, NF_V_PASS);
	scratch_free(&s);
}

/* The controller's MariaDB, answered by the fixture: secured (nothing
 * listed) or not; its sync_binlog */
static void test_mariadb_secure(void **state)
{
	const struct nf_check_result *r;
	struct scratch s = { 0 };

	(void)state;
	scratch_new(&s, "apply/controller/etc/nodeforge/profile.json");
	sh("mkdir -p '%s/etc/systemd/system' && cp '%s/tests/fixtures/apply/controller/etc/"
	   "systemd/system/nodeforge-dbinit.service' '%s/etc/systemd/system/'",
	   s.dir, srcdir, s.dir);
	answer(&s, "mariadb", 0, "sync_binlog\t0\n");
	answer(&s, "mariadb --batch --skip-column-names --raw", 0, "");
	r = run(&s, "mariadb.secure", "mariadb.secure");
	assert_int_equal(r->verdict, NF_V_PASS);
	assert_string_equal(r->seen, "none");
	assert_int_equal(run(&s, "mariadb", "mariadb.sync_binlog")->verdict,
			 NF_V_PASS);

	answer(&s, "mariadb --batch --skip-column-names --raw", 0,
	       "anonymous user ''@'localhost'\nroot from another host 'root'@'%'\n"
	       "database test\ngrants on test\\_%\n");
	r = run(&s, "mariadb.secure", "mariadb.secure");
	assert_int_equal(r->verdict, NF_V_FAIL);
	assert_string_equal(r->seen, "anonymous user ''@'localhost', root from another "
			    "host 'root'@'%', database test, grants on test\\_%");
	assert_non_null(strstr(r->remedy, "systemctl restart nodeforge-dbinit"));

	answer(&s, "mariadb --batch --skip-column-names --raw", 1,
	       "ERROR 1142: SELECT command denied\n");
	r = run(&s, "mariadb.secure", "mariadb.secure");
	assert_int_equal(r->verdict, NF_V_FAIL);
	assert_string_equal(r->seen, "exit 1: ERROR 1142: SELECT command denied");

	answer(&s, "mariadb", 0, "sync_binlog\t1\n");
	r = run(&s, "mariadb", "mariadb.sync_binlog");
	assert_int_equal(r->verdict, NF_V_FAIL);
	assert_string_equal(r->seen, "sync_binlog = 1");
	assert_string_equal(r->expected, "sync_binlog = 0");

	/* a server nodeforge does not set up is not this check's to judge */
	sh("rm '%s/etc/systemd/system/nodeforge-dbinit.service'", s.dir);
	r = run(&s, "mariadb.secure", "mariadb.secure");
	assert_int_equal(r->verdict, NF_V_SKIP);
	assert_string_equal(r->reason, "no nodeforge-dbinit.service on this node");
	scratch_free(&s);
}

/* The node's line in cluster.conf against its online CPUs and MemTotal,
 * as slurmctld compares what slurmd registers */
static void test_slurm_node_shape(void **state)
{
	const struct nf_check_result *r;
	struct scratch s = { 0 };

	(void)state;
	scratch_new(&s, "sysroot/pass/etc/nodeforge/profile.json");
	/* the fixture: 2 x 64 x 2 CPUs online, a little more memory than its
	 * line declares */
	r = run(&s, "slurm", "slurm.node.shape");
	assert_int_equal(r->verdict, NF_V_PASS);
	assert_string_equal(r->seen, "256 CPUs online, 2015232 MiB of memory");
	/* a line that declares no shape: nothing to compare */
	put(&s, "/etc/slurm/cluster.conf", "SlurmctldHost=ctl-01(10.0.0.2)\n"
	    "NodeName=gpu-[001-004] State=UNKNOWN\n");
	r = run(&s, "slurm", "slurm.node.shape");
	assert_int_equal(r->verdict, NF_V_SKIP);
	assert_string_equal(r->reason, "cluster.conf declares no CPUs or memory for this node");

	put(&s, "/etc/slurm/cluster.conf", "SlurmctldHost=ctl-01(10.0.0.2)\n"
	    "NodeName=cpu-[01-02] Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=1\n"
	    "NodeName=gpu-[001-004] Sockets=2 CoresPerSocket=4 ThreadsPerCore=2 "
	    "RealMemory=2000 Gres=gpu:h100:8 State=UNKNOWN\n");
	sh("mkdir -p '%s/sys/devices/system/cpu' && echo 0-15 > "
	   "'%s/sys/devices/system/cpu/online'", s.dir, s.dir);
	put(&s, "/proc/meminfo", "MemTotal:        2048000 kB\nMemFree: 1 kB\n");
	r = run(&s, "slurm", "slurm.node.shape");
	assert_int_equal(r->verdict, NF_V_PASS);
	assert_string_equal(r->expected, "at least the 16 CPUs (Sockets=2 x CoresPerSocket=4 "
			    "x ThreadsPerCore=2) and RealMemory=2000 MiB that gpu-001's "
			    "NodeName= line declares");
	assert_string_equal(r->seen, "16 CPUs online, 2000 MiB of memory");

	/* CPUs offline and less memory than declared: both named */
	sh("echo 0-7,9 > '%s/sys/devices/system/cpu/online'", s.dir);
	put(&s, "/proc/meminfo", "MemTotal:        2047000 kB\n");
	r = run(&s, "slurm", "slurm.node.shape");
	assert_int_equal(r->verdict, NF_V_FAIL);
	assert_string_equal(r->seen, "9 CPUs online, 1999 MiB of memory: slurmctld marks "
			    "the node INVAL (Low CPUs, Low RealMemory)");
	assert_non_null(strstr(r->remedy, "slurmd -C"));

	scratch_free(&s);

	/* a role without slurmd has no line to answer to */
	scratch_new(&s, "apply/controller/etc/nodeforge/profile.json");
	r = run(&s, "slurm", "slurm.node.shape");
	assert_int_equal(r->verdict, NF_V_SKIP);
	assert_string_equal(r->reason, "this role runs no slurmd");
	scratch_free(&s);
}

/* pam_limits' view for SSH sessions: limits.conf, then limits.d by name */
static void test_limits_pam(void **state)
{
	const struct nf_check_result *r;
	struct scratch s = { 0 };

	(void)state;
	scratch_new(&s, "sysroot/pass/etc/nodeforge/profile.json");
	r = run(&s, "limits.pam", "limits.pam");
	assert_int_equal(r->verdict, NF_V_PASS);
	assert_string_equal(r->seen, "all 4 limits match");
	put(&s, "/etc/security/limits.d/95-local.conf", "*\thard\tstack\t8192\n"
	    "@users - nproc 100\n");
	put(&s, "/etc/security/limits.d/99-local.conf.dpkg-old", "* - nofile 1\n");
	r = run(&s, "limits.pam", "limits.pam");
	assert_int_equal(r->verdict, NF_V_FAIL);
	assert_string_equal(r->seen, "stack soft unlimited hard 8192 "
			    "(/etc/security/limits.d/95-local.conf)");
	assert_non_null(strstr(r->remedy, "90-nodeforge.conf"));
	sh("rm '%s/etc/security/limits.d/90-nodeforge.conf'", s.dir);
	r = run(&s, "limits.pam", "limits.pam");
	assert_int_equal(r->verdict, NF_V_FAIL);
	assert_string_equal(r->seen, "nofile soft unset hard unset, memlock soft unset "
			    "hard unset, stack soft unset hard 8192 "
			    "(/etc/security/limits.d/95-local.conf), nproc soft unset hard unset");
	scratch_free(&s);
}

/* The Prolog and Epilog slurm.conf names: files slurmd can execute */
static void test_slurm_prolog(void **state)
{
	const struct nf_check_result *r;
	struct scratch s = { 0 };
	char path[128];

	(void)state;
	scratch_new(&s, "sysroot/pass/etc/nodeforge/profile.json");
	r = run(&s, "slurm.prolog", "slurm.prolog");
	assert_int_equal(r->verdict, NF_V_PASS);
	assert_string_equal(r->seen, "2 scripts, each executable");
	snprintf(path, sizeof(path), "%s/etc/slurm/epilog.sh", s.dir);
	assert_int_equal(chmod(path, 0644), 0);
	sh("rm '%s/etc/slurm/prolog.sh'", s.dir);
	r = run(&s, "slurm.prolog", "slurm.prolog");
	assert_int_equal(r->verdict, NF_V_FAIL);
	assert_string_equal(r->seen, "Prolog=/etc/slurm/prolog.sh: No such file or directory, "
			    "Epilog=/etc/slurm/epilog.sh: mode 0644, not executable");
	assert_non_null(strstr(r->remedy, "nodeforge build compute"));
	/* a list and a glob, as Slurm takes them: the glob is slurmd's */
	sh("sed -i 's|^Prolog=.*|Prolog=/etc/slurm/prolog.d/*,/etc/slurm/epilog.sh|; "
	   "/^Epilog=/d' '%s/etc/slurm/slurm.conf'", s.dir);
	assert_int_equal(chmod(path, 0755), 0);
	r = run(&s, "slurm.prolog", "slurm.prolog");
	assert_int_equal(r->verdict, NF_V_PASS);
	assert_string_equal(r->seen, "1 script, each executable");
	scratch_free(&s);
}

/* The profile's sysctl of the pass fixture, plus settings */
static void sysctl_add(struct scratch *s, const char *json)
{
	char path[128];
	json_t *prof, *add;

	snprintf(path, sizeof(path), "%s/etc/nodeforge/profile.json", s->dir);
	assert_non_null(prof = json_load_file(path, 0, NULL));
	assert_non_null(add = json_loads(json, 0, NULL));
	assert_int_equal(json_object_update(json_object_get(prof, "sysctl"), add), 0);
	snprintf(path, sizeof(path), "%s/p.json", s->dir);
	assert_int_equal(json_dump_file(prof, path, 0), 0);
	json_decref(add);
	json_decref(prof);
	nf_profile_free(s->p);
	assert_int_equal(nf_profile_load_json(s->ctx, path, &s->p), 0);
}

/* Each sysctl against its /proc/sys file, as sysctl.d(5) names it: a
 * '/' in a dotted key is a dot of an interface's name; the kernel's
 * tabs between a vector's fields compare as the profile's spaces */
static void test_sysctl(void **state)
{
	const struct nf_check_result *r;
	struct scratch s = { 0 };

	(void)state;
	scratch_new(&s, "sysroot/pass/etc/nodeforge/profile.json");
	r = run(&s, "sysctl", "sysctl.kernel.numa_balancing");
	assert_int_equal(r->verdict, NF_V_PASS);
	assert_string_equal(r->seen, "0");
	sysctl_add(&s, "{\"net.ipv4.ip_local_port_range\": \"32768  60999\","
		   "\"net.ipv4.conf.eth0/100.rp_filter\": 2,"
		   "\"net/ipv4/conf/eth0.100/forwarding\": 1,"
		   "\"vm.max_map_count\": 262144}");
	sh("mkdir -p '%s/proc/sys/net/ipv4/conf/eth0.100'", s.dir);
	put(&s, "/proc/sys/net/ipv4/ip_local_port_range", "32768\t60999\n");
	put(&s, "/proc/sys/net/ipv4/conf/eth0.100/rp_filter", "2\n");
	put(&s, "/proc/sys/net/ipv4/conf/eth0.100/forwarding", "0\n");
	r = run(&s, "sysctl", "sysctl.net.ipv4.ip_local_port_range");
	assert_int_equal(r->verdict, NF_V_PASS);
	assert_string_equal(r->seen, "32768 60999");
	r = run(&s, "sysctl", "sysctl.net.ipv4.conf.eth0/100.rp_filter");
	assert_int_equal(r->verdict, NF_V_PASS);
	assert_string_equal(r->expected, "net.ipv4.conf.eth0/100.rp_filter = 2");
	r = run(&s, "sysctl", "sysctl.net/ipv4/conf/eth0.100/forwarding");
	assert_int_equal(r->verdict, NF_V_FAIL);
	assert_string_equal(r->expected, "net/ipv4/conf/eth0.100/forwarding = 1");
	assert_string_equal(r->seen, "0");
	assert_string_equal(r->remedy, "sysctl -w net/ipv4/conf/eth0.100/forwarding='1'   "
			    "# /etc/sysctl.d/90-nodeforge.conf sets it at boot");
	r = run(&s, "sysctl", "sysctl.vm.max_map_count");
	assert_int_equal(r->verdict, NF_V_FAIL);
	assert_string_equal(r->expected, "vm.max_map_count = 262144");
	assert_string_equal(r->seen, "no /proc/sys/vm/max_map_count: No such file or directory");
	assert_non_null(strstr(r->remedy, "vm.max_map_count"));
	scratch_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_munge_key_group),
		cmocka_unit_test(test_chrony_rtcsync_iburst),
		cmocka_unit_test(test_mariadb_secure),
		cmocka_unit_test(test_slurm_node_shape),
		cmocka_unit_test(test_limits_pam),
		cmocka_unit_test(test_slurm_prolog),
		cmocka_unit_test(test_sysctl),
	};
	const char *sd = getenv("NF_SRCDIR");

	snprintf(srcdir, sizeof(srcdir), "%s", sd ? sd : ".");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
