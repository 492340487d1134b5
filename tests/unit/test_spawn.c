/* SPDX-License-Identifier: MIT */
/* The child process runner (lib/spawn.c) and the callers' messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "build_int.h"
#include "verify_int.h"

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void in_ms(struct timespec *t, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, t);
	t->tv_sec += ms / 1000;
	t->tv_nsec += (ms % 1000) * 1000000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

/* gone, or a zombie that nobody has reaped yet: it runs no more */
static int process_dead(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return 1;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p || !(p = strrchr(buf, ')')))
		return 1;
	return p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

static void test_exit_status(void **state)
{
	const char *argv[] = { "sh", "-c", "exit 3", NULL };
	struct nf_spawn s = { .argv = argv };

	(void)state;
	assert_int_equal(nf_spawn_run(&s), 0);
	assert_true(WIFEXITED(s.status));
	assert_int_equal(WEXITSTATUS(s.status), 3);
	assert_int_equal(s.exec_errno, 0);
	assert_int_equal(s.pid, -1);
	assert_null(s.cap);
}

static void test_exec_failure(void **state)
{
	const char *missing[] = { "nf-no-such-program", NULL };
	const char *abs[] = { "/nonexistent/nf-no-such-program", NULL };
	const char *dir[] = { "/", NULL };
	struct nf_spawn s = { .argv = missing, .out = NF_SPAWN_CAPTURE };

	(void)state;
	assert_int_equal(nf_spawn_run(&s), -ENOENT);
	assert_int_equal(s.exec_errno, ENOENT);
	assert_null(s.cap);
	s = (struct nf_spawn){ .argv = abs };
	assert_int_equal(nf_spawn_run(&s), -ENOENT);
	assert_int_equal(s.exec_errno, ENOENT);
	s = (struct nf_spawn){ .argv = dir };
	assert_int_equal(nf_spawn_run(&s), -EACCES);
	assert_int_equal(s.exec_errno, EACCES);
	/* a program that exits 127 is not one that could not be executed */
	{
		const char *e127[] = { "sh", "-c", "exit 127", NULL };

		s = (struct nf_spawn){ .argv = e127 };
		assert_int_equal(nf_spawn_run(&s), 0);
		assert_int_equal(s.exec_errno, 0);
		assert_int_equal(WEXITSTATUS(s.status), 127);
	}
}

/* The build's tools name the program and the package that brings it */
static void test_build_tool_missing(void **state)
{
	char *argv[] = { "nf-no-such-tool", "--version", NULL };
	char *sh[] = { "sh", "-c", "exit 7", NULL };
	struct nf_ctx *ctx;

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	assert_int_equal(nf_bld_run_tool(ctx, argv, NULL, NULL), NF_E_EXTERNAL);
	assert_string_equal(nf_errmsg(ctx),
			    "cannot run 'nf-no-such-tool': No such file or directory "
			    "(is the Debian package 'nf-no-such-tool' installed?)");
	assert_int_equal(nf_bld_run_tool(ctx, sh, NULL, NULL), 7);
	nf_ctx_free(ctx);
}

static void test_capture_bound(void **state)
{
	const char *big[] = { "sh", "-c", "head -c 300000 /dev/zero | tr '\\0' x; echo; echo end", NULL };
	const char *both[] = { "sh", "-c", "echo out; echo err >&2", NULL };
	struct nf_spawn s = { .argv = big, .out = NF_SPAWN_CAPTURE, .cap_max = 1000 };

	(void)state;
	/* the child is drained past the bound: it never blocks on a full pipe */
	assert_int_equal(nf_spawn_run(&s), 0);
	assert_int_equal(WEXITSTATUS(s.status), 0);
	assert_int_equal(s.caplen, 1000);
	assert_int_equal(strlen(s.cap), 1000);
	assert_int_equal(strspn(s.cap, "x"), 1000);
	free(s.cap);

	s = (struct nf_spawn){ .argv = big, .out = NF_SPAWN_CAPTURE, .cap_max = 10,
			       .flags = NF_SPAWN_CAP_TAIL };
	assert_int_equal(nf_spawn_run(&s), 0);
	assert_string_equal(s.cap, "xxxxx\nend\n");
	free(s.cap);

	/* stdout and stderr into one capture; or stderr alone */
	s = (struct nf_spawn){ .argv = both, .out = NF_SPAWN_CAPTURE, .err = NF_SPAWN_CAPTURE };
	assert_int_equal(nf_spawn_run(&s), 0);
	assert_string_equal(s.cap, "out\nerr\n");
	free(s.cap);
	s = (struct nf_spawn){ .argv = both, .err = NF_SPAWN_CAPTURE };
	assert_int_equal(nf_spawn_run(&s), 0);
	assert_string_equal(s.cap, "err\n");
	free(s.cap);
}

static void test_stdin(void **state)
{
	const char *cat[] = { "cat", NULL };
	const char *wc[] = { "wc", "-c", NULL };
	const char *no_read[] = { "true", NULL };
	size_t n = 1u << 20;
	char *big = malloc(n);
	struct nf_spawn s = { .argv = cat, .in = "hello\n", .inlen = 6,
			      .out = NF_SPAWN_CAPTURE };

	(void)state;
	assert_non_null(big);
	assert_int_equal(nf_spawn_run(&s), 0);
	assert_string_equal(s.cap, "hello\n");
	free(s.cap);

	/* more than a pipe holds, while the output is read back: no deadlock */
	memset(big, 'y', n);
	s = (struct nf_spawn){ .argv = cat, .in = big, .inlen = n,
			       .out = NF_SPAWN_CAPTURE, .cap_max = 16 };
	assert_int_equal(nf_spawn_run(&s), 0);
	assert_string_equal(s.cap, "yyyyyyyyyyyyyyyy");
	free(s.cap);
	s = (struct nf_spawn){ .argv = wc, .in = big, .inlen = n,
			       .out = NF_SPAWN_CAPTURE };
	assert_int_equal(nf_spawn_run(&s), 0);
	assert_int_equal(atol(s.cap), (long)n);
	free(s.cap);

	/* a child that never reads its stdin: EPIPE, not a SIGPIPE here */
	s = (struct nf_spawn){ .argv = no_read, .in = big, .inlen = n };
	assert_int_equal(nf_spawn_run(&s), 0);
	assert_int_equal(WEXITSTATUS(s.status), 0);
	free(big);

	/* without `in`: /dev/null, so a reader sees end of file at once */
	s = (struct nf_spawn){ .argv = wc, .out = NF_SPAWN_CAPTURE };
	assert_int_equal(nf_spawn_run(&s), 0);
	assert_int_equal(atol(s.cap), 0);
	free(s.cap);
}

static void test_deadline_kills_group(void **state)
{
	/* the grandchild keeps the output open: only the deadline ends it */
	const char *argv[] = { "sh", "-c", "sleep 100 & echo $!; wait", NULL };
	struct timespec dl;
	struct nf_spawn s = { .argv = argv, .out = NF_SPAWN_CAPTURE,
			      .deadline = &dl, .flags = NF_SPAWN_PGROUP };
	double t0 = now_s();
	pid_t grand;
	int i;

	(void)state;
	in_ms(&dl, 300);
	assert_int_equal(nf_spawn_run(&s), NF_E_TIMEOUT);
	assert_true(now_s() - t0 < 10.0); /* not the child's 100 s */
	assert_int_equal(s.pid, -1);
	assert_true(WIFSIGNALED(s.status));
	assert_int_equal(WTERMSIG(s.status), SIGKILL);
	assert_non_null(s.cap);
	grand = (pid_t)atoi(s.cap);
	free(s.cap);
	assert_true(grand > 1);
	for (i = 0; i < 200 && !process_dead(grand); i++)
		usleep(10 * 1000);
	assert_true(process_dead(grand));

	/* a child that closed its output and then hangs: the deadline too */
	{
		const char *quiet[] = { "sh", "-c", "exec >/dev/null 2>&1; sleep 100", NULL };

		s = (struct nf_spawn){ .argv = quiet, .out = NF_SPAWN_CAPTURE,
				       .deadline = &dl, .flags = NF_SPAWN_PGROUP };
		t0 = now_s();
		in_ms(&dl, 300);
		assert_int_equal(nf_spawn_run(&s), NF_E_TIMEOUT);
		assert_true(now_s() - t0 < 10.0); /* not the child's 100 s */
		free(s.cap);
	}
}

/* A probe abandoned as hung (its check's thread still waiting on it) does
 * not outlive the verifier's run: the run's end kills its group, and one
 * started after the end is killed at once */
struct probe {
	struct nf_vrun *run;
	pthread_t th;
	int rc, status;
};

static void *probe_thread(void *arg)
{
	struct probe *p = arg;
	const char *argv[] = { "sh", "-c", "sleep 3600 & wait", NULL };
	struct timespec dl;

	in_ms(&dl, 60 * 1000);
	p->rc = nf_spawn_capture_watched(argv, NULL, &dl, nf_vrun_probe_watch,
					 p->run, NULL, &p->status);
	return NULL;
}

static void test_run_end_kills_probes(void **state)
{
	json_t *prof = json_object();
	struct nf_verify_opts o = { 0 };
	struct probe p = { 0 };
	double t0;
	int i;

	(void)state;
	assert_int_equal(nf_vrun_new(NULL, prof, &o, &p.run), 0);
	t0 = now_s();
	assert_int_equal(pthread_create(&p.th, NULL, probe_thread, &p), 0);
	for (i = 0; i < 500; i++) {
		pthread_mutex_lock(&p.run->lock);
		size_t n = p.run->nprobes;
		pthread_mutex_unlock(&p.run->lock);
		if (n)
			break;
		usleep(10 * 1000);
	}
	assert_int_equal(p.run->nprobes, 1);
	nf_vrun_end(p.run);
	assert_int_equal(pthread_join(p.th, NULL), 0);
	assert_true(now_s() - t0 < 30.0);	/* not its 60 s deadline */
	assert_int_equal(p.rc, 0);
	assert_int_equal(p.status, 128 + SIGKILL);
	assert_int_equal(p.run->nprobes, 0);	/* reaped: no longer watched */

	/* started after the end: killed at once */
	t0 = now_s();
	probe_thread(&p);
	assert_true(now_s() - t0 < 30.0);
	assert_int_equal(p.status, 128 + SIGKILL);
	nf_vrun_unref(p.run);
	json_decref(prof);
}

static void test_capture_wrapper(void **state)
{
	const char *argv[] = { "sh", "-c", "cat; kill -TERM $$", NULL };
	struct timespec dl;
	char *out = NULL;
	int st = -1;

	(void)state;
	in_ms(&dl, 5000);
	assert_int_equal(nf_spawn_capture(argv, "in\n", &dl, &out, &st), 0);
	assert_string_equal(out, "in\n");
	assert_int_equal(st, 128 + SIGTERM);
	free(out);
}

static void test_output_to_fd(void **state)
{
	const char *argv[] = { "sh", "-c", "echo out; echo err >&2", NULL };
	char path[] = "/tmp/nf-spawn-test.XXXXXX", buf[64] = "";
	struct nf_spawn s = { .argv = argv, .out = NF_SPAWN_FD, .err = NF_SPAWN_FD };
	ssize_t n;

	(void)state;
	s.fd = mkstemp(path);
	assert_true(s.fd >= 0);
	assert_int_equal(nf_spawn_run(&s), 0);
	assert_null(s.cap);
	close(s.fd);
	s.fd = open(path, O_RDONLY | O_CLOEXEC);
	n = read(s.fd, buf, sizeof(buf) - 1);
	close(s.fd);
	unlink(path);
	assert_true(n > 0);
	assert_string_equal(buf, "out\nerr\n");
}

static void test_env_cwd(void **state)
{
	const char *argv[] = { "sh", "-c", "echo \"$NF_SPAWN_T\"; pwd", NULL };
	const char *env[] = { "NF_SPAWN_T=added", NULL };
	const char *tool[] = { "nf-spawn-tool", NULL };
	char dir[] = "/tmp/nf-spawn-path.XXXXXX", file[64], path[96];
	struct nf_spawn s = { .argv = argv, .env = env, .cwd = "/",
			      .out = NF_SPAWN_CAPTURE };
	int fd;

	(void)state;
	setenv("NF_SPAWN_T", "caller's", 1);
	assert_int_equal(nf_spawn_run(&s), 0);
	assert_string_equal(s.cap, "added\n/\n");
	free(s.cap);
	unsetenv("NF_SPAWN_T");

	/* the program is looked up in the PATH the environment gives it */
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/nf-spawn-tool", dir);
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "#!/bin/sh\necho found\n", 21), 21);
	close(fd);
	snprintf(path, sizeof(path), "PATH=/nonexistent:%s", dir);
	{
		const char *penv[] = { path, NULL };

		s = (struct nf_spawn){ .argv = tool, .env = penv, .out = NF_SPAWN_CAPTURE };
		assert_int_equal(nf_spawn_run(&s), 0);
		assert_string_equal(s.cap, "found\n");
		free(s.cap);
	}
	s = (struct nf_spawn){ .argv = tool };
	assert_int_equal(nf_spawn_run(&s), -ENOENT);
	unlink(file);
	rmdir(dir);

	/* a working directory that is not there: the start fails */
	s = (struct nf_spawn){ .argv = argv, .cwd = "/nonexistent/nf" };
	assert_int_equal(nf_spawn_run(&s), -ENOENT);
	assert_int_equal(s.exec_errno, ENOENT);
}

static void test_background(void **state)
{
	const char *sleeper[] = { "sleep", "100", NULL };
	const char *quick[] = { "sh", "-c", "exit 5", NULL };
	const char *stubborn[] = { "sh", "-c", "trap '' TERM; echo ready; sleep 100", NULL };
	struct nf_spawn s = { .argv = sleeper };
	struct nf_spawn never = { 0 };
	double t0;
	int i, r = 0;

	(void)state;
	/* a struct never started: nothing to stop, stdin left alone */
	nf_spawn_kill(&never, 1000);
	assert_true(fcntl(0, F_GETFD) >= 0);

	assert_int_equal(nf_spawn_start(&s), 0);
	assert_true(s.pid > 0);
	assert_int_equal(nf_spawn_poll(&s), 0);
	nf_spawn_kill(&s, 5000);
	assert_int_equal(s.pid, -1);
	assert_true(WIFSIGNALED(s.status));
	assert_int_equal(WTERMSIG(s.status), SIGTERM);

	s = (struct nf_spawn){ .argv = quick };
	assert_int_equal(nf_spawn_start(&s), 0);
	for (i = 0; i < 500 && !(r = nf_spawn_poll(&s)); i++)
		usleep(10 * 1000);
	assert_int_equal(r, 1);
	assert_int_equal(WEXITSTATUS(s.status), 5);
	nf_spawn_kill(&s, 5000);

	/* SIGTERM ignored: SIGKILL after the grace time */
	s = (struct nf_spawn){ .argv = stubborn, .out = NF_SPAWN_CAPTURE };
	assert_int_equal(nf_spawn_start(&s), 0);
	{
		char c;

		/* the trap is set once it says so */
		assert_int_equal(read(s.cap_fd, &c, 1), 1);
	}
	t0 = now_s();
	nf_spawn_kill(&s, 200);
	assert_true(now_s() - t0 >= 0.15);
	assert_true(now_s() - t0 < 10.0); /* not the child's 100 s */
	assert_true(WIFSIGNALED(s.status));
	assert_int_equal(WTERMSIG(s.status), SIGKILL);
	free(s.cap);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_status),
		cmocka_unit_test(test_exec_failure),
		cmocka_unit_test(test_build_tool_missing),
		cmocka_unit_test(test_capture_bound),
		cmocka_unit_test(test_stdin),
		cmocka_unit_test(test_deadline_kills_group),
		cmocka_unit_test(test_run_end_kills_probes),
		cmocka_unit_test(test_capture_wrapper),
		cmocka_unit_test(test_output_to_fd),
		cmocka_unit_test(test_env_cwd),
		cmocka_unit_test(test_background),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
