/* SPDX-License-Identifier: MIT */
/*
 * sd-bus adapter (libsystemd): the only file that sees sd-bus.  It asks
 * the service manager for a unit's ActiveState, what `systemctl
 * is-active UNIT` prints, without a process per unit: one connection per
 * process, opened on first use and shared by the verifier's threads.
 *
 * As root the connection is systemd's private socket
 * (/run/systemd/private, as systemctl's own), which needs no D-Bus daemon
 * (a minimal node image may have none); otherwise, or where that socket
 * is absent, the system bus.  A call is bounded by the caller's deadline:
 * waiting for the connection (another thread's call) and the call
 * itself.
 */
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-bus.h>

static pthread_mutex_t bus_lock = PTHREAD_MUTEX_INITIALIZER;
static sd_bus *bus;
static pid_t bus_pid;
static int bus_err; /* a connection that failed is not tried again */

static int connect_private(sd_bus **out)
{
	sd_bus *b = NULL;
	int r;

	if (access("/run/systemd/private", F_OK) < 0)
		return -errno;
	if ((r = sd_bus_new(&b)) < 0)
		return r;
	if ((r = sd_bus_set_address(b, "unix:path=/run/systemd/private")) < 0 ||
	    (r = sd_bus_start(b)) < 0) {
		sd_bus_unref(b);
		return r;
	}
	*out = b;
	return 0;
}

/* with bus_lock held */
static int bus_get(sd_bus **out)
{
	int r;

	if (bus && bus_pid == getpid()) {
		*out = bus;
		return 0;
	}
	if (bus_pid == getpid() && bus_err)
		return bus_err;
	bus = NULL; /* a forked child's copy is its parent's: never used */
	bus_pid = getpid();
	r = -EPERM;
	if (geteuid() == 0)
		r = connect_private(&bus);
	if (r < 0)
		r = sd_bus_open_system(&bus);
	if (r < 0) {
		bus = NULL;
		bus_err = r;
		return r;
	}
	*out = bus;
	return 0;
}

static long long us_left(const struct timespec *t)
{
	struct timespec n;

	clock_gettime(CLOCK_MONOTONIC, &n);
	return (t->tv_sec - n.tv_sec) * 1000000LL + (t->tv_nsec - n.tv_nsec) / 1000;
}

int nf_unit_active_state(const char *unit, const struct timespec *deadline,
			 char *state, size_t statesz)
{
	sd_bus_error err = SD_BUS_ERROR_NULL;
	char name[512], *path = NULL, *s = NULL;
	struct timespec until;
	long long left;
	sd_bus *b = NULL;
	int r;

	/* systemctl's name mangling for the names a profile holds: a name
	 * without a unit type is a service */
	if (snprintf(name, sizeof(name), "%s%s", unit,
		     strchr(unit, '.') ? "" : ".service") >= (int)sizeof(name))
		return -ENAMETOOLONG;
	/* pthread_mutex_timedlock waits by CLOCK_REALTIME */
	if ((left = us_left(deadline)) <= 0)
		return NF_E_TIMEOUT;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(left / 1000000);
	until.tv_nsec += (long)(left % 1000000) * 1000;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	if ((r = pthread_mutex_timedlock(&bus_lock, &until)))
		return r == ETIMEDOUT ? NF_E_TIMEOUT : -r;
	if ((r = bus_get(&b)) < 0)
		goto out;
	if ((left = us_left(deadline)) <= 0) {
		r = NF_E_TIMEOUT;
		goto out;
	}
	sd_bus_set_method_call_timeout(b, (uint64_t)left);
	if ((r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", name, &path)) < 0)
		goto out;
	r = sd_bus_get_property_string(b, "org.freedesktop.systemd1", path,
				       "org.freedesktop.systemd1.Unit", "ActiveState",
				       &err, &s);
	if (r < 0) {
		if (r == -ETIMEDOUT) {
			r = NF_E_TIMEOUT;
		} else if (!sd_bus_is_open(b)) {
			/* the manager went away (daemon-reexec): the next
			 * call connects again */
			sd_bus_flush_close_unref(bus);
			bus = NULL;
		}
		goto out;
	}
	snprintf(state, statesz, "%s", *s ? s : "unknown");
	r = !strcmp(s, "active");
out:
	pthread_mutex_unlock(&bus_lock);
	sd_bus_error_free(&err);
	free(path);
	free(s);
	return r;
}
