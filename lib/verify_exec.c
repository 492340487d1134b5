/* SPDX-License-Identifier: MIT */
/*
 * The verifier's commands: run with a deadline in their own process
 * group, or answered from the run's fixture (tests, CI without hardware).
 */
#include "verify_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Fixture answer for a command: the longest "argv joined by spaces" prefix
 * listed in fixture.commands, then the program's base name */
static const json_t *fixture_command(const json_t *fx, const char *const *argv)
{
	const json_t *cmds = json_object_get(fx, "commands");
	const json_t *best = NULL;
	char key[1024] = "";
	size_t len = 0;
	const char *b = strrchr(argv[0], '/');

	for (size_t i = 0; argv[i]; i++) {
		int k = snprintf(key + len, sizeof(key) - len, "%s%s", i ? " " : "",
				 argv[i]);
		const json_t *v;

		if (k < 0 || (size_t)k >= sizeof(key) - len)
			break;
		len += (size_t)k;
		if ((v = json_object_get(cmds, key)))
			best = v;
	}
	if (!best)
		best = json_object_get(cmds, b ? b + 1 : argv[0]);
	return best;
}

static void fixture_log(const json_t *fx, const char *const *argv)
{
	const char *log = json_string_value(json_object_get(fx, "exec_log"));
	FILE *f;

	if (!log || !(f = fopen(log, "ae")))
		return;
	for (size_t i = 0; argv[i]; i++)
		fprintf(f, "%s%s", i ? " " : "", argv[i]);
	fputc('\n', f);
	fclose(f);
}

/* Programs the fixture lets through to the real system ("passthrough"):
 * a test with recorded hardware and a real scontrol */
static int fixture_passthrough(const json_t *fx, const char *prog)
{
	const char *b = strrchr(prog, '/');
	size_t i;
	json_t *p;

	json_array_foreach(json_object_get(fx, "passthrough"), i, p)
		if (json_is_string(p) && !strcmp(json_string_value(p), b ? b + 1 : prog))
			return 1;
	return 0;
}

/* {"hang_once": PATH}: the first call (PATH absent) creates PATH and
 * hangs; the later ones answer as the rest of the entry says */
static int hang_once(const json_t *a)
{
	const char *p = json_string_value(json_object_get(a, "hang_once"));
	int fd;

	if (!p || (fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
		return 0;
	close(fd);
	return 1;
}

/* argv runs as given; the fixture answers for argv + skip (argv less a
 * wrapper such as setpriv) */
static int exec_wrapped(struct nf_vcheck *c, const char *const *argv,
			size_t skip, const char *in, char **out, int *status)
{
	const json_t *fx = c->run->fixture;

	if (fx && !fixture_passthrough(fx, argv[skip])) {
		const json_t *a;

		fixture_log(fx, argv);
		a = fixture_command(fx, argv + skip);
		if (!a)
			return -ENOENT;
		if (json_is_true(json_object_get(a, "hang")) || hang_once(a)) {
			/* a real process that never answers: exercises the
			 * deadline and the kill */
			static const char *const sl[] = { "sleep", "3600", NULL };

			return nf_spawn_capture_watched(sl, NULL, &c->deadline,
							nf_vrun_probe_watch, c->run,
							out, status);
		}
		*status = (int)json_integer_value(json_object_get(a, "rc"));
		if (out) {
			const char *s = json_string_value(json_object_get(a, "out"));

			*out = strdup(s ? s : "");
			if (!*out)
				return -ENOMEM;
		}
		return 0;
	}
	return nf_spawn_capture_watched(argv, in, &c->deadline, nf_vrun_probe_watch,
					c->run, out, status);
}

int nf_v_exec(struct nf_vcheck *c, const char *const *argv, const char *in,
	      char **out, int *status)
{
	return exec_wrapped(c, argv, 0, in, out, status);
}

int nf_v_exec_unprivileged(struct nf_vcheck *c, const char *const *argv,
			   char **out, int *status)
{
	/* NF_V_NOBODY */
	static const char *const wrap[] = {
		"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
		"--reset-env", "--",
	};
	const char *v[NF_ARRAY_SIZE(wrap) + 16];
	char prog[4096];
	size_t n = NF_ARRAY_SIZE(wrap), i;

	if (geteuid() != 0)
		return nf_v_exec(c, argv, NULL, out, status);
	memcpy(v, wrap, sizeof(wrap));
	for (i = 0; argv[i] && n + i < NF_ARRAY_SIZE(v) - 1; i++)
		v[n + i] = argv[i];
	if (argv[i])
		return -E2BIG;
	v[n + i] = NULL;
	/* the program's full path from the verifier's PATH: setpriv
	 * --reset-env gives the user a PATH of its own */
	if ((!c->run->fixture || fixture_passthrough(c->run->fixture, argv[0])) &&
	    !(v[n] = nf_which(argv[0], prog, sizeof(prog))))
		v[n] = argv[0];
	return exec_wrapped(c, v, n, NULL, out, status);
}

int nf_v_service_active(struct nf_vcheck *c, const char *unit, char *state,
			size_t statesz)
{
	const char *argv[] = { "systemctl", "is-active", unit, NULL };
	const json_t *fx = c->run->fixture;
	char *out = NULL;
	int st = 0, r;

	/* the service manager over its bus, one connection for the run;
	 * where it cannot be reached (no systemd: a container, a chroot),
	 * systemctl says why, as it would to the operator */
	if (!fx || fixture_passthrough(fx, "systemctl")) {
		r = nf_unit_active_state(unit, &c->deadline, state, statesz);
		if (r >= 0 || r == NF_E_TIMEOUT)
			return r;
	}
	if ((r = nf_v_exec(c, argv, NULL, &out, &st)))
		return r;
	out[strcspn(out, "\n")] = '\0';
	snprintf(state, statesz, "%s", *out ? out : "unknown");
	free(out);
	return !strcmp(state, "active");
}
