/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd.h"

#define NF_EXIT_INTERRUPTED 4

static int cmd_reimage(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_reimage = {
	.name = "reimage",
	.summary = "replace the image of Slurm nodes, batch by batch, without killing jobs",
	.help = "usage: nodeforge reimage HOSTLIST --image IMAGE\n"
		"                         --tree DIR [--images DIR] [--server URL]\n"
		"                         [--batch N] [--max-down N] [--max-failed N]\n"
		"                         [--run-dir DIR] [--enroll-state DIR] [--json]\n"
		"       nodeforge reimage --resume [RUN-ID] [--max-failed N] [--json]\n"
		"\n"
		"Reimage the nodes of HOSTLIST (gpu-[01-04],cpu-01) batch by batch: drain\n"
		"each in Slurm (reason 'nodeforge reimage to ROLE@SHA12'), wait until it\n"
		"is IDLE+DRAIN (running jobs end, none is killed), point its boot entry\n"
		"in the tree at the image, set its boot device to PXE once and power\n"
		"cycle it through its BMC, wait for its verdict on the boot server and\n"
		"for its slurmd to register again after the cycle, then resume it.  A\n"
		"node that fails stays drained with its root cause as the reason and\n"
		"the run goes on.  A node comes back without its munge key: when the\n"
		"site hands out keys (secrets.munge_key), its enrollment is opened again\n"
		"(as 'nodeforge enroll open --reenroll') for --boot-timeout just before\n"
		"its power cycle.  One line per step, or with --json one JSON object\n"
		"per line (events: start, batch, drain, idle, point, enroll, power,\n"
		"verdict, resume, fail, warning, stop, end).  Interrupted (Ctrl-C, SIGTERM),\n"
		"the run saves its state: --resume continues it.  A node is locked for\n"
		"the run: a second reimage of it is refused.\n"
		"\n"
		"  -I, --image IMAGE      ROLE@SHA (12 to 64 hex digits of the rootfs\n"
		"                         sha256: the role's current image or an older\n"
		"                         one still in --images, a rollback),\n"
		"                         ROLE@current, or current (each node's own role)\n"
		"      --tree DIR         the boot tree 'nodeforge pxe --out' rendered\n"
		"      --images DIR       build output with ROLE/ROLE.current (default: out)\n"
		"  -S, --server URL       the boot server (default: the site's server.url,\n"
		"                         else http://127.0.0.1:8080)\n"
		"  -i, --inventory FILE   inventory (default: racks.yaml)\n"
		"      --batch N          nodes reimaged together (default: 1)\n"
		"      --max-down N       at most N nodes out of service at once: the\n"
		"                         batch and the failed nodes, which stay drained\n"
		"                         (default: no limit beyond --batch)\n"
		"      --max-failed N     start no batch after N nodes failed (default:\n"
		"                         never stop)\n"
		"      --run-dir DIR      run state and node locks (default: the site's\n"
		"                         server.state_dir, else /var/lib/nodeforge, with\n"
		"                         /reimage)\n"
		"      --enroll-state DIR  the boot server's enrollment state, where each\n"
		"                         node's enrollment is opened again before its\n"
		"                         power cycle when the site hands out munge keys\n"
		"                         (default: the site's server.state_dir, else\n"
		"                         /var/lib/nodeforge)\n"
		"      --resume [RUN-ID]  continue the run RUN-ID, or the one unfinished\n"
		"                         run, with the options it was started with\n"
		"      --poll SECONDS     between looks at Slurm and the server (default 5)\n"
		"      --drain-timeout SECONDS  fail a node whose jobs still run then\n"
		"                         (default: wait for them)\n"
		"      --boot-timeout SECONDS  fail a node without a verdict and a\n"
		"                         registered slurmd this long after its power\n"
		"                         cycle (default 1800)\n"
		"\n"
		"Exit status: 0 every node was reimaged and resumed, 1 a node failed, the\n"
		"run stopped at --max-failed or --max-down, or it could not start,\n"
		"2 usage error, 3 the inventory has errors, 4 interrupted (resume it).\n",
	.run = cmd_reimage,
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static const char *s_of(const json_t *ev, const char *k)
{
	return json_string_value(json_object_get(ev, k));
}

/* Each event as one JSON line, or as one text line made from it */
static void show_event(void *userdata, const json_t *ev)
{
	struct nf_global *g = userdata;
	const char *what = s_of(ev, "event"), *t = s_of(ev, "time");
	const char *node = s_of(ev, "node");
	char detail[1024] = "";

	if (g->json) {
		char *s = json_dumps(ev, JSON_COMPACT | JSON_SORT_KEYS);

		if (s)
			printf("%s\n", s);
		free(s);
		fflush(stdout);
		return;
	}
	if (!strcmp(what, "start") || !strcmp(what, "resume-run") ||
	    !strcmp(what, "end")) {
		if (!strcmp(what, "end"))
			snprintf(detail, sizeof(detail), "%s: %lld resumed, %lld "
				 "failed, %lld pending", s_of(ev, "status"),
				 json_integer_value(json_object_get(ev, "resumed")),
				 json_integer_value(json_object_get(ev, "failed")),
				 json_integer_value(json_object_get(ev, "pending")));
		else
			snprintf(detail, sizeof(detail), "%zu node(s), state %s",
				 json_array_size(json_object_get(ev, "nodes")),
				 s_of(ev, "state"));
		printf("%.8s run %s %s %s\n", t + 11, s_of(ev, "run"), what, detail);
	} else if (!strcmp(what, "batch")) {
		size_t i;
		json_t *v;

		json_array_foreach(json_object_get(ev, "nodes"), i, v)
			snprintf(detail + strlen(detail), sizeof(detail) -
				 strlen(detail), "%s%s", i ? "," : "",
				 json_string_value(v));
		printf("%.8s batch %s\n", t + 11, detail);
	} else if (!strcmp(what, "enroll")) {
		printf("%.8s %-20s %-8s open for %lld s\n", t + 11, node, what,
		       json_integer_value(json_object_get(ev, "seconds")));
	} else if (!strcmp(what, "stop")) {
		printf("%.8s stop: %lld node(s) failed (--%s)\n", t + 11,
		       json_integer_value(json_object_get(ev, "failed")),
		       s_of(ev, "why"));
	} else {
		const char *keys[] = { "reason", "state", "image", "action",
				       "result", "root_cause", "message" };

		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (s_of(ev, keys[i]))
				snprintf(detail + strlen(detail), sizeof(detail) -
					 strlen(detail), "%s%s", *detail ? ": " : "",
					 s_of(ev, keys[i]));
		printf("%.8s %-20s %-8s %s\n", t + 11, node ? node : "-", what,
		       detail);
	}
	fflush(stdout);
}

static int num(const char *opt, const char *v, long lo, long hi, long *out)
{
	char *end;
	long x = strtol(v, &end, 10);

	if (!*v || *end || x < lo || x > hi)
		return nf_usage_error("reimage", "invalid --%s '%s' (%ld to %ld)",
				      opt, v, lo, hi);
	*out = x;
	return 0;
}

static const char *site_server(struct nf_global *g, const char *key)
{
	return g->site ? json_string_value(json_object_get(json_object_get(
		nf_site_json(g->site), "server"), key)) : NULL;
}

/* The site's boot server hands out munge keys to the nodes it enrolls */
static int hands_out_keys(struct nf_global *g)
{
	return g->site && json_object_get(json_object_get(
		nf_site_json(g->site), "secrets"), "munge_key");
}

/* before a node's power cycle: let it claim its key again */
static int reenroll(void *userdata, const char *node, long long seconds)
{
	char *names[] = { (char *)node };

	return nf_enroll_open(userdata, names, 1, seconds, 1);
}

static int cmd_reimage(struct nf_global *g, int argc, char **argv)
{
	enum { O_TREE = 256, O_IMAGES, O_BATCH, O_MAXDOWN, O_MAXFAILED, O_RUNDIR,
	       O_RESUME, O_POLL, O_DRAIN, O_BOOT, O_ENROLL };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "image", required_argument, NULL, 'I' },
		{ "inventory", required_argument, NULL, 'i' },
		{ "server", required_argument, NULL, 'S' },
		{ "tree", required_argument, NULL, O_TREE },
		{ "images", required_argument, NULL, O_IMAGES },
		{ "batch", required_argument, NULL, O_BATCH },
		{ "max-down", required_argument, NULL, O_MAXDOWN },
		{ "max-failed", required_argument, NULL, O_MAXFAILED },
		{ "run-dir", required_argument, NULL, O_RUNDIR },
		{ "resume", no_argument, NULL, O_RESUME },
		{ "poll", required_argument, NULL, O_POLL },
		{ "drain-timeout", required_argument, NULL, O_DRAIN },
		{ "boot-timeout", required_argument, NULL, O_BOOT },
		{ "enroll-state", required_argument, NULL, O_ENROLL },
		{ 0 }
	};
	const char *pos[1] = { NULL }, *inv_path = "racks.yaml";
	struct nf_args args = { pos, 1, 0, " (name several nodes as one "
				 "hostlist: gpu-[01-04],cpu-01)" };
	struct nf_reimage_opts o = { .images_dir = "out" };
	struct nf_reimage_summary sum;
	struct nf_enroll *en = NULL;
	const char *enroll_state = NULL;
	struct sigaction sa = { .sa_handler = on_signal };
	char **names = NULL, *run_dir = NULL;
	size_t nnames = 0;
	long v;
	int oc, r;

	while ((oc = nf_getopt_args(&nf_cmd_reimage, argc, argv, "I:i:S:", opts,
				    &args)) != -1) {
		switch (oc) {
		case -2: return 0;
		case -3: return NF_EXIT_USAGE;
		case 'I': o.image = optarg; break;
		case 'i': inv_path = optarg; break;
		case 'S': o.server = optarg; break;
		case O_TREE: o.tree = optarg; break;
		case O_IMAGES: o.images_dir = optarg; break;
		case O_RUNDIR: o.run_dir = optarg; break;
		case O_ENROLL: enroll_state = optarg; break;
		case O_RESUME: o.resume = 1; break;
		case O_BATCH:
			if ((r = num("batch", optarg, 1, 10000, &v)))
				return r;
			o.batch = (unsigned)v;
			break;
		case O_MAXDOWN:
			if ((r = num("max-down", optarg, 1, 100000, &v)))
				return r;
			o.max_down = (unsigned)v;
			break;
		case O_MAXFAILED:
			if ((r = num("max-failed", optarg, 1, 100000, &v)))
				return r;
			o.max_failed = (unsigned)v;
			break;
		case O_POLL:
			if ((r = num("poll", optarg, 1, 600, &v)))
				return r;
			o.poll_ms = v * 1000;
			break;
		case O_DRAIN:
			if ((r = num("drain-timeout", optarg, 1, 30 * 86400, &v)))
				return r;
			o.drain_timeout_ms = v * 1000;
			break;
		case O_BOOT:
			if ((r = num("boot-timeout", optarg, 1, 86400, &v)))
				return r;
			o.boot_timeout_ms = v * 1000;
			break;
		}
	}
	if (o.resume) {
		if (o.image || o.tree)
			return nf_usage_error("reimage", "--resume continues a run "
					      "with its own image and tree: it "
					      "takes no --image or --tree");
		o.run_id = pos[0];
	} else {
		if (!pos[0])
			return nf_usage_error("reimage", "no nodes named (a "
					      "HOSTLIST such as gpu-[01-04])");
		if (!o.image)
			return nf_usage_error("reimage", "no image named: --image "
					      "ROLE@SHA, ROLE@current or current");
		if (!o.tree)
			return nf_usage_error("reimage", "no boot tree named: "
					      "--tree DIR ('nodeforge pxe --out')");
		if (nf_hostlist_expand(pos[0], &names, &nnames,
				       NF_INVENTORY_MAX_NODES) || !nnames) {
			nf_strv_free(names, nnames);
			return nf_usage_error("reimage", "'%s' is not a node name "
					      "or a hostlist", pos[0]);
		}
		if (nf_cmd_path_arg("reimage", "--tree", o.tree, 0) ||
		    nf_cmd_path_arg("reimage", "--images", o.images_dir, 0)) {
			nf_strv_free(names, nnames);
			return NF_EXIT_FAILURE;
		}
	}
	if ((r = nf_cmd_setup(g, inv_path))) {
		nf_strv_free(names, nnames);
		return r;
	}
	if (!o.server && !o.resume)
		o.server = site_server(g, "url") ?: "http://127.0.0.1:8080";
	if (!o.run_dir) {
		const char *sd = site_server(g, "state_dir");

		if (asprintf(&run_dir, "%s/reimage", sd ? sd : "/var/lib/nodeforge") < 0) {
			nf_strv_free(names, nnames);
			return NF_EXIT_FAILURE;
		}
		o.run_dir = run_dir;
	}
	if (hands_out_keys(g) &&
	    (r = nf_enroll_from_site(g->ctx, g->site, g->inv, enroll_state, o.tree,
				     &en))) {
		nf_strv_free(names, nnames);
		free(run_dir);
		return nf_cmd_fail(g, "reimage", r);
	}
	if (en) {
		o.before_cycle = reenroll;
		o.cycle_userdata = en;
	}
	o.event = show_event;
	o.userdata = g;
	o.stop = &stop_flag;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	r = nf_reimage_run(g->ctx, g->site, g->inv, names, nnames, &o, &sum);
	nf_strv_free(names, nnames);
	nf_enroll_free(en);
	free(run_dir);
	if (r == -EINTR) {
		if (!g->quiet)
			fprintf(stderr, "nodeforge reimage: %s\n", nf_error_text(g->ctx, r));
		return NF_EXIT_INTERRUPTED;
	}
	if (r)
		return nf_cmd_fail(g, "reimage", r);
	if ((sum.failed || sum.stopped) && !g->quiet)
		fprintf(stderr, "nodeforge reimage: %zu of %zu node(s) failed%s; "
			"they stay drained (state '%s')\n", sum.failed, sum.nodes,
			sum.stopped ? ", the run stopped" : "", sum.state_path);
	return sum.failed || sum.stopped ? NF_EXIT_FAILURE : 0;
}
