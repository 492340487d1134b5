/* SPDX-License-Identifier: MIT */
/*
 * The build's tools: running the distro's own tools (mmdebstrap, dnf,
 * chroot, patch) with their output in a log, their versions (part of the
 * bootstrap's key), a package list entry's name, and the reason a failed
 * tool gives in its log.
 */
#include "build_int.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* --------------------------------------------------------------- tools */

/* Run argv with stdout+stderr into `log` (NULL: /dev/null); env entries
 * are added.  Returns the exit status, or a negative errno.  A tool that
 * cannot be started at all is told apart from one that exits 127 (a
 * build line inside chroot whose command is missing). */
int nf_bld_run_tool(struct nf_ctx *ctx, char *const argv[], const char *log,
		    char *const env[])
{
	struct nf_spawn s = {
		.argv = (const char *const *)argv,
		.env = (const char *const *)env,
		.out = NF_SPAWN_FD,
		.err = NF_SPAWN_FD,
		/* a killed build takes its tool with it */
		.flags = NF_SPAWN_PARENT_DEATH,
	};
	int r;

	s.fd = open(log ? log : "/dev/null",
		    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (s.fd < 0)
		return nf_fail(ctx, NF_E_EXTERNAL, "cannot run '%s': cannot "
			       "open '%s': %s", argv[0], log ? log : "/dev/null",
			       strerror(errno));
	if ((r = nf_spawn_start(&s)) < 0 && !s.exec_errno) {
		close(s.fd);
		return nf_fail(ctx, r, "cannot run '%s': %s", argv[0],
			       strerror(-r));
	}
	close(s.fd);
	if (s.exec_errno) {
		int e = s.exec_errno;
		const char *bn = strrchr(argv[0], '/');

		return nf_fail(ctx, NF_E_EXTERNAL, "cannot run '%s': %s%s%s%s",
			       argv[0], strerror(e),
			       e == ENOENT ? " (is the Debian package '" : "",
			       e == ENOENT ? (bn ? bn + 1 : argv[0]) : "",
			       e == ENOENT ? "' installed?)" : "");
	}
	if ((r = nf_spawn_wait(&s)) < 0)
		return nf_fail(ctx, r, "cannot wait for '%s': %s", argv[0],
			       strerror(-r));
	if (WIFEXITED(s.status))
		return WEXITSTATUS(s.status);
	return nf_fail(ctx, NF_E_EXTERNAL, "'%s' was killed by signal %d",
		       argv[0], WIFSIGNALED(s.status) ? WTERMSIG(s.status) : 0);
}

size_t nf_bld_package_name(const char *s, int el)
{
	size_t n = 0;

	for (const char *c = s; c && *c; c++) {
		if (*c == '=' && !n)
			n = (size_t)(c - s);
		else if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
			   *c == '+' || *c == '-' || *c == '.' || *c == ':' ||
			   *c == '_' || (*c >= 'A' && *c <= 'Z' && !el)))
			return 0;
	}
	if (!s || !*s || (n == 0 && strchr(s, '=')))
		return 0;
	return n ? n : strlen(s);
}

/* First line of a tool's output (its --version) */
int nf_bld_tool_version(struct nf_ctx *ctx, const char *tool, char *out,
			size_t outsz)
{
	char log[] = "/tmp/nf-version.XXXXXX";
	char *argv[] = { (char *)tool, "--version", NULL };
	char *buf = NULL;
	int fd, r;

	fd = mkstemp(log);
	if (fd < 0)
		return nf_fail(ctx, -errno, "cannot create a temporary file: %s",
			       strerror(errno));
	close(fd);
	r = nf_bld_run_tool(ctx, argv, log, NULL);
	if (r == 0 && !(r = nf_read_file(ctx, log, NF_TOOL_OUT_MAX, &buf, NULL))) {
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(out, outsz, "%s", buf);
		free(buf);
	} else if (r > 0) {
		r = nf_fail(ctx, NF_E_EXTERNAL, "'%s --version' failed", tool);
	}
	unlink(log);
	return r;
}

/* The most telling line of a failed tool's log: apt's "E:" line, else
 * the first compiler, linker or patch error ("error:", "undefined
 * reference", "Hunk #1 FAILED at"), else the last line (make's "*** ... Error 1" says only that it failed) */
void nf_bld_log_reason(const char *log, char *out, size_t outsz)
{
	char *buf = NULL, *line, *save = NULL, *last = NULL, *apt = NULL;
	char *cc = NULL;

	snprintf(out, outsz, "see '%s'", log);
	if (nf_read_file(NULL, log, 8u << 20, &buf, NULL))
		return;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!apt && !strncmp(line, "E: ", 3))
			apt = line;
		if (!cc && (strstr(line, "error:") ||
			    strstr(line, "undefined reference to") ||
			    /* patch(1) */
			    strstr(line, " FAILED at ") ||
			    strstr(line, "can't find file to patch") ||
			    strstr(line, "Reversed (or previously applied)")))
			cc = line;
		if (*line)
			last = line;
	}
	line = apt ? apt : cc ? cc : last;
	if (line)
		snprintf(out, outsz, "%s (log: '%s')", line, log);
	free(buf);
}
