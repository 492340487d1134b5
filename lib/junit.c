/* SPDX-License-Identifier: MIT */
/*
 * The one JUnit XML writer, for verify's checks and ci's cases: every
 * attribute and text escaped, published atomically.
 */
#include "internal.h"

#include <stdlib.h>

static size_t tally(const struct nf_junit_case *v, size_t n, int verdict)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += v[i].verdict == verdict;
	return k;
}

int nf_junit_write(struct nf_ctx *ctx, const char *path, const char *suite,
		   const char *hostname, const struct nf_junit_case *v, size_t n,
		   double secs)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int r;

	if (!f)
		return -ENOMEM;
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"", f);
	nf_xml_escape(f, suite);
	fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\" "
		   "time=\"%.3f\"", n, tally(v, n, NF_V_FAIL), tally(v, n, NF_V_HUNG),
		tally(v, n, NF_V_SKIP), secs);
	if (hostname) {
		fputs(" hostname=\"", f);
		nf_xml_escape(f, hostname);
		fputc('"', f);
	}
	fputs(">\n", f);
	for (size_t i = 0; i < n; i++) {
		const struct nf_junit_case *c = &v[i];
		const char *tag = c->verdict == NF_V_HUNG ? "error" : "failure";

		fputs("  <testcase classname=\"", f);
		nf_xml_escape(f, c->classname);
		fputs("\" name=\"", f);
		nf_xml_escape(f, c->name);
		fprintf(f, "\" time=\"%.6f\"", c->secs);
		/* JUnit has no warning: a passed case with its text as output */
		if ((c->verdict == NF_V_PASS || c->verdict == NF_V_WARN) && !c->text) {
			fputs("/>\n", f);
			continue;
		}
		fputs(">\n", f);
		if (c->verdict == NF_V_PASS || c->verdict == NF_V_WARN) {
			fputs("    <system-out>", f);
			nf_xml_escape(f, c->text);
			fputs("</system-out>\n", f);
		} else if (c->verdict == NF_V_SKIP) {
			fputs("    <skipped message=\"", f);
			nf_xml_escape(f, c->message);
			fputs("\"/>\n", f);
		} else {
			fprintf(f, "    <%s message=\"", tag);
			nf_xml_escape(f, c->message);
			fputs("\">", f);
			nf_xml_escape(f, c->text ? c->text : c->message);
			fprintf(f, "</%s>\n", tag);
		}
		fputs("  </testcase>\n", f);
	}
	fputs("</testsuite>\n", f);
	if (fclose(f)) {
		free(buf);
		return -ENOMEM;
	}
	r = nf_write_atomic(ctx, path, buf, len, 0644);
	free(buf);
	return r;
}
