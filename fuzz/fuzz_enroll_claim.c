/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the server side of enrollment: claim and rotation-poll bodies from
 * an untrusted peer (JSON, base64, names, MACs).  The first byte picks the
 * entry point and the peer address.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

static struct nf_ctx *ctx;
static struct nf_enroll *e;
static char dir[] = "/tmp/nf-fuzz-enroll.XXXXXX";

static void cleanup(void)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		return;
}

static void init(void)
{
	char state[128], key[128];
	struct nf_enroll_opts o = { 0 };
	struct nf_enroll_node n = { "gpu-01", "compute", "r1",
				    "52:54:00:00:00:02", 0x7f000002 };
	struct nf_enroll_node cp = { "cp-01", "controller", NULL, NULL,
				     0x7f000001 };
	char *names[] = { "gpu-01", "cp-01" };
	uint8_t k[64] = { 1 };
	FILE *f;

	if (nf_ctx_new(&ctx) || !mkdtemp(dir))
		abort();
	atexit(cleanup);
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(key, sizeof(key), "%s/munge.key", dir);
	f = fopen(key, "w");
	if (!f)
		abort();
	fwrite(k, 1, sizeof(k), f);
	fclose(f);
	chmod(key, 0400);
	o.state_dir = state;
	o.munge_key = key;
	if (nf_enroll_new(ctx, &o, &e) || nf_enroll_add_node(e, &n) ||
	    nf_enroll_add_node(e, &cp) || nf_enroll_open(e, names, 2, 86400, 1))
		abort();
	{
		char fp[NF_FINGERPRINT_LEN];

		/* a rotation under way, so polls reach the proof check */
		if (nf_rotate_begin(e, fp))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const peers[] = { "127.0.0.1", "127.0.0.2",
					     "::ffff:127.0.0.2", "bogus" };
	json_t *resp = NULL;
	int status = 0;

	if (!e)
		init();
	if (size < 1)
		return 0;
	if (data[0] & 4)
		nf_rotate_poll(e, peers[data[0] & 3], data + 1, size - 1, &resp,
			       &status);
	else
		nf_enroll_claim(e, peers[data[0] & 3], data + 1, size - 1,
				&resp, &status);
	json_decref(resp);
	/* keep the windows open and claims away so accepted paths recur */
	if (status == 200 && !(data[0] & 4)) {
		char *names[] = { "gpu-01", "cp-01" };

		nf_enroll_open(e, names, 2, 86400, 1);
	}
	return 0;
}
