/* SPDX-License-Identifier: MIT */
/* libnodeforge's public API: a node's verdict as people read it.  Included
 * by nodeforge.h, which every user includes; not meant to be included
 * alone. */
#ifndef NF_VERDICT_H
#define NF_VERDICT_H

/* ------------------------------------------------------ verdict report */

/* How a report is laid out: the width it fits, colour (a terminal), every
 * check (-v) or the root causes only; role names the tally line when the
 * verdict has none */
struct nf_verdict_view {
	int width;
	int colour;
	int verbose;
	const char *role;
};

/*
 * The report of a verdict document (nf_verify_json()'s form, the one a
 * node posts to 'nodeforge serve'), whichever command shows it: root
 * causes first, each as "FAIL id: seen (expected ...)" wrapped at words,
 * its remedy wrapped as a command that still works as pasted, the failures
 * that follow from it folded under it, then the tally.  A control byte
 * in the verdict's strings is shown as \xNN (nf_text_defang), so a node
 * cannot write to the reader's terminal.  In
 * JSON mode: "counts" and "root_causes" (id, verdict, expected, seen,
 * remedy of each).
 */
void nf_verdict_render(struct nf_emit *e, const json_t *verdict,
		       const struct nf_verdict_view *view);

#endif
