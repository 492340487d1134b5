/* SPDX-License-Identifier: MIT */
/* Files of the image that facet apply parses: /etc/passwd (owner lookup)
 * and /etc/pam.d/sshd (pam_slurm_adopt insertion), from arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[] = "/tmp/nf-fuzz-apply.XXXXXX";
static struct nf_ctx *ctx;
static json_t *prof, *sec;
static int rootfd = -1;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nf_apply a;
	uid_t uid;
	gid_t gid;

	if (rootfd < 0) {
		if (!mkdtemp(root) || nf_ctx_new(&ctx) ||
		    nf_apply_open_root(ctx, root, &rootfd))
			abort();
		prof = json_pack("{s:{s:[s]}}", "slurm", "daemons", "slurmd");
		sec = json_pack("{s:b,s:b}", "slurm_adopt", 1, "use_pam", 1);
	}
	memset(&a, 0, sizeof(a));
	a.ctx = ctx;
	a.rootfd = rootfd;
	a.prof = prof;
	if (nf_apply_write(&a, "/etc/passwd", data, size, 0644, getuid(),
			   getgid()) ||
	    nf_apply_write(&a, "/etc/pam.d/sshd", data, size, 0644, getuid(),
			   getgid()))
		return 0;
	nf_apply_user(&a, "munge", &uid, &gid);
	nf_apply_user(&a, "slurm", &uid, &gid);
	nf_facet_find("pam")->apply(&a, sec);
	return 0;
}
