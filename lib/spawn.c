/* SPDX-License-Identifier: MIT */
/*
 * Child processes: the distro's tools of a build, the installer's disk
 * tools, the verifier's commands, CI's QEMU.  One way to start them (stdin
 * bytes, output captured, to a log or discarded, added environment, a
 * working directory, a process group), to wait for them with a deadline,
 * and to stop them.
 *
 * fork + execve rather than posix_spawn: a build's tools must die with it
 * (PR_SET_PDEATHSIG, which posix_spawn cannot set), and a build's tools
 * are looked up in the PATH it gives them.  Between fork and exec the
 * child makes async-signal-safe calls only; whatever it needs (the
 * environment, the PATH) is prepared before the fork.  Every descriptor
 * the parent opens is close-on-exec, so a child started by another thread
 * inherits none of this one's pipes.
 */
#include "internal.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* execvp's search path when PATH is unset */
#define DEFAULT_PATH "/bin:/usr/bin"

static size_t cap_max(const struct nf_spawn *s)
{
	return s->cap_max ? s->cap_max : NF_SPAWN_CAP_DEFAULT;
}

static long long ms_left(const struct timespec *t)
{
	struct timespec n;

	clock_gettime(CLOCK_MONOTONIC, &n);
	return (t->tv_sec - n.tv_sec) * 1000LL + (t->tv_nsec - n.tv_nsec) / 1000000;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* The caller's environment with `add` in place of same-named entries */
static char **env_merge(const char *const *add)
{
	size_t n = 0, k = 0, j = 0;
	char **v;

	while (environ && environ[n])
		n++;
	while (add[k])
		k++;
	if (!(v = calloc(n + k + 1, sizeof(*v))))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		size_t len = strcspn(environ[i], "=");
		size_t a = 0;

		while (add[a] && !(strncmp(add[a], environ[i], len) == 0 &&
				   add[a][len] == '='))
			a++;
		if (!add[a])
			v[j++] = environ[i];
	}
	for (size_t i = 0; i < k; i++)
		v[j++] = (char *)add[i];
	return v;
}

static const char *env_path(char *const *envp)
{
	const char *path = NULL;

	for (size_t i = 0; envp && envp[i]; i++)
		if (!strncmp(envp[i], "PATH=", 5))
			path = envp[i] + 5;
	return path ? path : DEFAULT_PATH;
}

/* execvp's search with an environment of its own; returns with errno
 * set when nothing could be executed (EACCES when a candidate was found
 * but refused, as execvp says) */
static void exec_path(const char *const *argv, char *const envp[],
		      const char *path)
{
	const char *prog = argv[0];
	size_t pl = strlen(prog);
	char buf[PATH_MAX];
	int eacces = 0;

	if (!*prog) {
		errno = ENOENT;
		return;
	}
	if (strchr(prog, '/')) {
		execve(prog, (char *const *)argv, envp);
		return;
	}
	for (const char *p = path;;) {
		const char *c = strchr(p, ':');
		size_t n = c ? (size_t)(c - p) : strlen(p);

		if (n + 1 + pl < sizeof(buf)) {
			memcpy(buf, p, n);
			/* an empty entry is the working directory */
			if (n)
				buf[n++] = '/';
			memcpy(buf + n, prog, pl + 1);
			execve(buf, (char *const *)argv, envp);
			if (errno == EACCES)
				eacces = 1;
			else if (errno != ENOENT && errno != ENOTDIR)
				return;
		}
		if (!c)
			break;
		p = c + 1;
	}
	errno = eacces ? EACCES : ENOENT;
}

/* The child, between fork and exec: async-signal-safe calls only.  src:
 * what becomes its stdin, stdout and stderr; ep: where the errno of a
 * failed exec goes */
static void __attribute__((noreturn))
child(const struct nf_spawn *s, const int src[3], char *const envp[],
      const char *path, int ep, pid_t parent)
{
	int tmp[3], e;

	if (s->flags & NF_SPAWN_PGROUP)
		setpgid(0, 0);
	if (s->flags & NF_SPAWN_PARENT_DEATH) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* the parent died before the request took effect */
		if (getppid() != parent)
			_exit(127);
	}
	/* above 2 first: a source that is itself 0, 1 or 2 survives, and
	 * dup2 onto a different number clears close-on-exec */
	for (int i = 0; i < 3; i++)
		if ((tmp[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 3)) < 0)
			goto fail;
	for (int i = 0; i < 3; i++)
		if (dup2(tmp[i], i) < 0)
			goto fail;
	if (s->cwd && chdir(s->cwd) < 0)
		goto fail;
	exec_path(s->argv, envp, path);
fail:
	e = errno;
	(void)!write(ep, &e, sizeof(e));
	_exit(127);
}

static int out_fd(const struct nf_spawn *s, enum nf_spawn_to to, int cap,
		  int nul)
{
	return to == NF_SPAWN_CAPTURE ? cap : to == NF_SPAWN_FD ? s->fd : nul;
}

int nf_spawn_start(struct nf_spawn *s)
{
	int ep[2] = { -1, -1 }, ip[2] = { -1, -1 }, cp[2] = { -1, -1 };
	int nul = -1, src[3], e = 0, r;
	char **envp = environ;
	pid_t pid, parent = getpid();
	ssize_t n;

	s->started = false;
	s->pid = -1;
	s->status = 0;
	s->exec_errno = 0;
	s->cap = NULL;
	s->caplen = 0;
	s->in_fd = s->cap_fd = -1;
	s->inoff = 0;
	if (s->env && !(envp = env_merge(s->env)))
		return -ENOMEM;
	if (s->out == NF_SPAWN_CAPTURE || s->err == NF_SPAWN_CAPTURE) {
		if (!(s->cap = malloc(cap_max(s) + 1))) {
			r = -ENOMEM;
			goto fail;
		}
		s->cap[0] = '\0';
	}
	if (pipe2(ep, O_CLOEXEC) < 0 || (s->in && pipe2(ip, O_CLOEXEC) < 0) ||
	    (s->cap && pipe2(cp, O_CLOEXEC) < 0) ||
	    (nul = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0) {
		r = -errno;
		goto fail;
	}
	src[0] = s->in ? ip[0] : nul;
	src[1] = out_fd(s, s->out, cp[1], nul);
	src[2] = out_fd(s, s->err, cp[1], nul);
	pid = fork();
	if (pid < 0) {
		r = -errno;
		goto fail;
	}
	if (pid == 0)
		child(s, src, envp, env_path(envp), ep[1], parent);
	/* also here: a kill of the group right after the start finds it */
	if (s->flags & NF_SPAWN_PGROUP)
		setpgid(pid, pid);
	close_fd(&ep[1]);
	close_fd(&ip[0]);
	close_fd(&cp[1]);
	close_fd(&nul);
	while ((n = read(ep[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close_fd(&ep[0]);
	if (n == (ssize_t)sizeof(e)) {
		while (waitpid(pid, &s->status, 0) < 0 && errno == EINTR)
			;
		s->exec_errno = e;
		r = -e;
		goto fail;
	}
	s->started = true;
	s->pid = pid;
	s->in_fd = ip[1];
	s->cap_fd = cp[0];
	if (s->in_fd >= 0)
		fcntl(s->in_fd, F_SETFL, O_NONBLOCK);
	if (envp != environ)
		free(envp);
	return 0;
fail:
	close_fd(&ep[0]);
	close_fd(&ep[1]);
	close_fd(&ip[0]);
	close_fd(&ip[1]);
	close_fd(&cp[0]);
	close_fd(&cp[1]);
	close_fd(&nul);
	free(s->cap);
	s->cap = NULL;
	if (envp != environ)
		free(envp);
	return r;
}

/* Write what the child's stdin takes now.  SIGPIPE is blocked in this
 * thread only (the verifier runs commands from several) and a pending one
 * from this write is taken back */
static void feed(struct nf_spawn *s)
{
	sigset_t pipe, old;
	ssize_t k;

	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, &old);
	k = write(s->in_fd, s->in + s->inoff, s->inlen - s->inoff);
	if (k > 0) {
		s->inoff += (size_t)k;
	} else if (k < 0 && errno != EAGAIN && errno != EINTR) {
		/* the child stopped reading: the rest is not wanted */
		s->inoff = s->inlen;
		if (errno == EPIPE && !sigismember(&old, SIGPIPE)) {
			struct timespec zero = { 0, 0 };

			sigtimedwait(&pipe, NULL, &zero);
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void keep(struct nf_spawn *s, const char *p, size_t k)
{
	size_t max = cap_max(s);

	if (s->flags & NF_SPAWN_CAP_TAIL) {
		if (k >= max) {
			p += k - max;
			k = max;
			s->caplen = 0;
		} else if (s->caplen + k > max) {
			size_t drop = s->caplen + k - max;

			memmove(s->cap, s->cap + drop, s->caplen - drop);
			s->caplen -= drop;
		}
	} else if (k > max - s->caplen) {
		k = max - s->caplen;
	}
	memcpy(s->cap + s->caplen, p, k);
	s->caplen += k;
	s->cap[s->caplen] = '\0';
}

static void drain(struct nf_spawn *s)
{
	char tmp[4096];
	ssize_t k = read(s->cap_fd, tmp, sizeof(tmp));

	if (k < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (k <= 0)
		close_fd(&s->cap_fd);
	else
		keep(s, tmp, (size_t)k);
}

static void signal_child(const struct nf_spawn *s, int sig)
{
	if (s->flags & NF_SPAWN_PGROUP)
		kill(-s->pid, sig);
	kill(s->pid, sig);
}

int nf_spawn_wait(struct nf_spawn *s)
{
	useconds_t us = 1000;
	int r;

	if (!s->started)
		return -EINVAL;
	while (s->in_fd >= 0 || s->cap_fd >= 0) {
		struct pollfd pf[2] = { { s->cap_fd, POLLIN, 0 },
					{ s->in_fd, POLLOUT, 0 } };
		long long left = s->deadline ? ms_left(s->deadline) : -1;

		if (s->deadline && left <= 0)
			goto timeout;
		if (s->in_fd >= 0 && s->inoff >= s->inlen) {
			close_fd(&s->in_fd);
			continue;
		}
		if (poll(pf, 2, left > INT_MAX ? INT_MAX : (int)left) < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto kill;
		}
		if (pf[1].revents)
			feed(s);
		if (pf[0].revents)
			drain(s);
	}
	while (s->pid > 0) {
		pid_t w = waitpid(s->pid, &s->status, s->deadline ? WNOHANG : 0);

		if (w == s->pid) {
			s->pid = -1;
		} else if (w < 0 && errno != EINTR) {
			/* not a child to signal any more */
			r = -errno;
			s->pid = -1;
			goto kill;
		} else if (w == 0) {
			/* output closed, the child still running */
			long long left = ms_left(s->deadline);

			if (left <= 0)
				goto timeout;
			if ((long long)us / 1000 > left)
				us = (useconds_t)left * 1000;
			usleep(us);
			if (us < 50000)
				us *= 2;
		}
	}
	s->started = false;
	return 0;
timeout:
	r = NF_E_TIMEOUT;
kill:
	nf_spawn_kill(s, 0);
	return r;
}

int nf_spawn_poll(struct nf_spawn *s)
{
	pid_t w;

	if (!s->started || s->pid <= 0)
		return 1;
	while ((w = waitpid(s->pid, &s->status, WNOHANG)) < 0 && errno == EINTR)
		;
	if (w < 0)
		return -errno;
	if (w == 0)
		return 0;
	s->pid = -1;
	return 1;
}

void nf_spawn_kill(struct nf_spawn *s, unsigned grace_ms)
{
	if (!s->started)
		return;
	if (s->pid > 0 && grace_ms) {
		signal_child(s, SIGTERM);
		for (unsigned t = 0; t < grace_ms && s->pid > 0; t += 10) {
			if (waitpid(s->pid, &s->status, WNOHANG) == s->pid)
				s->pid = -1;
			else
				usleep(10 * 1000);
		}
	}
	if (s->pid > 0) {
		signal_child(s, SIGKILL);
		while (waitpid(s->pid, &s->status, 0) < 0 && errno == EINTR)
			;
		s->pid = -1;
	}
	close_fd(&s->in_fd);
	close_fd(&s->cap_fd);
	s->started = false;
}

int nf_spawn_run(struct nf_spawn *s)
{
	int r = nf_spawn_start(s);

	return r ? r : nf_spawn_wait(s);
}

int nf_spawn_capture(const char *const *argv, const char *in,
		     const struct timespec *deadline, char **out, int *status)
{
	return nf_spawn_capture_watched(argv, in, deadline, NULL, NULL, out, status);
}

int nf_spawn_capture_watched(const char *const *argv, const char *in,
			     const struct timespec *deadline,
			     void (*watch)(void *arg, pid_t pgid, int alive),
			     void *arg, char **out, int *status)
{
	struct nf_spawn s = {
		.argv = argv,
		.in = in,
		.inlen = in ? strlen(in) : 0,
		.out = NF_SPAWN_CAPTURE,
		.err = NF_SPAWN_CAPTURE,
		.deadline = deadline,
		.flags = NF_SPAWN_PGROUP,
	};
	int r = nf_spawn_start(&s);
	pid_t pgid = s.pid;

	if (!r) {
		if (watch)
			watch(arg, pgid, 1);
		r = nf_spawn_wait(&s);
		if (watch)
			watch(arg, pgid, 0);
	}
	if (r) {
		free(s.cap);
		return r;
	}
	*status = WIFEXITED(s.status) ? WEXITSTATUS(s.status)
				      : 128 + WTERMSIG(s.status);
	if (out)
		*out = s.cap;
	else
		free(s.cap);
	return 0;
}
