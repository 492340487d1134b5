/* SPDX-License-Identifier: MIT */
/*
 * nodeforge __complete WORD... CUR: what the shell completes CUR to, after
 * the words before it (dist/nodeforge.bash calls it).  Hidden: no entry in
 * the command table, so no line in --help.
 *
 * Everything comes from what the CLI knows: the commands from the command
 * table; each command's options, their values and its positional arguments
 * from its own --help text (the usage lines and the option lines); roles
 * from the profiles directory (-C); node names and racks from the
 * inventory (-i, else racks.yaml).  Prints the candidates that start with
 * CUR, one a line, or one line "@file" / "@dir" for the shell to complete
 * a path itself.
 */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "nodeforge/boot.h"

#define MAX_OPTS 96
#define MAX_FORMS 8
#define MAX_SLOTS 8

struct copt {
	char name[40];      /* "--out", "-o" */
	char meta[40];      /* "DIR": takes a value; "" none */
};

/* One usage line: its positional slots, each literal words ("on|off") or
 * a metavar ("HOSTLIST"); the last may repeat ("ROLE...") */
struct cform {
	char slot[MAX_SLOTS][64];
	size_t n;
	bool repeat;
};

struct cspec {
	struct copt o[MAX_OPTS];
	size_t no;
	struct cform f[MAX_FORMS];
	size_t nf;
};

struct cstate {
	const char *cur;
	const char *profiles;
	const char *inventory;
	const char *help;       /* the command's, for KIND's words */
};

static const char *const global_help =
	"  -C DIR\n  -s, --site FILE\n  --json\n  -q, --quiet\n"
	"  -v, --verbose\n  -h, --help\n  --version\n";

static void say(const struct cstate *st, const char *w)
{
	if (!strncmp(w, st->cur, strlen(st->cur)))
		printf("%s\n", w);
}

/* A value's name: "DIR", "FILE", "ROLE[+]=ARGS", "tcg|kvm", racks.yaml */
static bool is_meta(const char *t)
{
	return isupper((unsigned char)*t) || strchr(t, '|') || strchr(t, '.');
}

static struct copt *find_opt(struct cspec *s, const char *name)
{
	for (size_t i = 0; i < s->no; i++)
		if (!strcmp(s->o[i].name, name))
			return &s->o[i];
	return NULL;
}

static struct copt *add_opt(struct cspec *s, const char *name, size_t len)
{
	struct copt *o;
	char buf[40];

	if (len >= sizeof(buf))
		return NULL;
	memcpy(buf, name, len);
	buf[len] = '\0';
	if ((o = find_opt(s, buf)))
		return o;
	if (s->no == MAX_OPTS)
		return NULL;
	o = &s->o[s->no++];
	snprintf(o->name, sizeof(o->name), "%s", buf);
	o->meta[0] = '\0';
	return o;
}

/* The options a help text names: "-o, --out DIR", "[--state STATE]";
 * a value follows after one space or '=' (two spaces: the description) */
static void parse_opts(struct cspec *s, const char *h)
{
	for (const char *p = h; *p; p++) {
		struct copt *o, *alias = NULL;
		size_t len;

		if (*p != '-' || (p > h && !strchr(" [|(\n", p[-1])))
			continue;
		len = strspn(p + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") + 1;
		if (len < 2 || (p[1] == '-' && len < 4) || (p[1] != '-' && len != 2))
			continue;
		if (!(o = add_opt(s, p, len)))
			continue;
		p += len;
		/* "-o, --out DIR": the short one is the long one's alias */
		if (len == 2 && p[0] == ',' && p[1] == ' ' && p[2] == '-' && p[3] == '-') {
			alias = o;
			p += 2;
			len = strspn(p + 2, "abcdefghijklmnopqrstuvwxyz0123456789-") + 2;
			if (!(o = add_opt(s, p, len)))
				continue;
			p += len;
		}
		if ((*p == ' ' || *p == '=') && p[1] != ' ' && p[1] != '-') {
			char t[40];
			size_t n = strcspn(p + 1, " ]\n,");

			if (n && n < sizeof(t)) {
				memcpy(t, p + 1, n);
				t[n] = '\0';
				if (is_meta(t) && !o->meta[0])
					snprintf(o->meta, sizeof(o->meta), "%s", t);
			}
		}
		if (alias && o->meta[0])
			snprintf(alias->meta, sizeof(alias->meta), "%s", o->meta);
		p--;
	}
}

/* The usage lines: "usage: nodeforge CMD ..." and "       nodeforge CMD ..."
 * up to the first blank line; the words that are not options (nor an
 * option's value) are the positional slots */
static void parse_forms(struct cspec *s, const char *cmd, const char *h)
{
	char pat[64];
	const char *p = h;

	snprintf(pat, sizeof(pat), "nodeforge %s", cmd);
	while (*p && *p != '\n' && s->nf < MAX_FORMS) {
		const char *eol = strchr(p, '\n'), *q = strstr(p, pat);
		struct cform *f = &s->f[s->nf];
		bool value = false;

		if (!eol)
			eol = p + strlen(p);
		if (q && q < eol) {
			q += strlen(pat);
			memset(f, 0, sizeof(*f));
			while (q < eol) {
				char t[64];
				size_t n;

				q += strspn(q, " ");
				n = strcspn(q, " \n");
				if (!n || n >= sizeof(t))
					break;
				memcpy(t, q, n);
				t[n] = '\0';
				q += n;
				/* strip the brackets of an optional part */
				char *b = t;
				while (*b == '[')
					b++;
				b[strcspn(b, "]")] = '\0';
				if (value) {
					value = false;
					continue;
				}
				if (*b == '-') {
					struct copt *o = find_opt(s, b);

					/* its value follows unless it closes its brackets */
					value = o && o->meta[0] && !strchr(t, ']');
					continue;
				}
				if (!*b || !strcmp(b, "|") || !strcmp(b, "<") || !strcmp(b, "options"))
					continue;
				/* "[NODE | HOSTLIST]": one slot, its first name */
				if (q[0] == ' ' && q[1] == '|' && q[2] == ' ')
					q += 3 + strcspn(q + 3, " \n");
				if (f->n < MAX_SLOTS) {
					size_t l = strlen(b);

					if (l > 3 && !strcmp(b + l - 3, "...")) {
						b[l - 3] = '\0';
						f->repeat = true;
					}
					snprintf(f->slot[f->n++], sizeof(f->slot[0]), "%s", b);
				}
				if (f->repeat || !strcmp(b, "--"))
					break;
			}
			s->nf++;
		}
		p = *eol ? eol + 1 : eol;
	}
}

/* Each role, with SUFFIX appended ("@current" for reimage's --image) */
static void say_roles_as(const struct cstate *st, const char *suffix)
{
	struct nf_ctx *ctx = NULL;
	char **v = NULL;
	size_t n = 0;

	if (nf_ctx_new(&ctx) < 0)
		return;
	if (!nf_ctx_set_profiles_dir(ctx, st->profiles) && !nf_profile_roles(ctx, &v, &n)) {
		for (size_t i = 0; i < n; i++) {
			char w[128];

			snprintf(w, sizeof(w), "%s%s", v[i], suffix);
			say(st, w);
		}
		nf_strv_free(v, n);
	}
	nf_ctx_free(ctx);
}

static void say_roles(const struct cstate *st)
{
	say_roles_as(st, "");
}

/* Node names, or (racks) the racks, of the inventory */
static void say_inventory(const struct cstate *st, bool racks)
{
	struct nf_ctx *ctx = NULL;
	struct nf_inventory *inv = NULL;
	struct nf_diags d;

	if (nf_ctx_new(&ctx) < 0)
		return;
	nf_ctx_set_profiles_dir(ctx, st->profiles);
	nf_diags_init(&d);
	if (!nf_inventory_load(ctx, st->inventory, NULL, &inv, &d)) {
		size_t n = nf_inventory_count(inv);

		for (size_t i = 0; i < n; i++) {
			const struct nf_node *x = nf_inventory_node(inv, i);
			bool seen = false;

			if (!racks) {
				say(st, x->name);
				continue;
			}
			for (size_t k = 0; k < i && !seen; k++)
				seen = !strcmp(nf_inventory_node(inv, k)->rack, x->rack);
			if (*x->rack && !seen)
				say(st, x->rack);
		}
		nf_inventory_free(inv);
	}
	nf_diags_free(&d);
	nf_ctx_free(ctx);
}

/* The words under the "Kinds:" heading of a help text */
static void say_kinds(const struct cstate *st)
{
	const char *p = st->help ? strstr(st->help, "\nKinds:\n") : NULL;

	if (!p)
		return;
	for (p += 8; p[0] == ' ' && p[1] == ' ' && isalpha((unsigned char)p[2]);) {
		char w[32];
		size_t n = strcspn(p + 2, " \n");

		if (n < sizeof(w)) {
			memcpy(w, p + 2, n);
			w[n] = '\0';
			say(st, w);
		}
		/* the next entry: the next line indented by exactly two */
		do {
			p = strchr(p, '\n');
			p = p ? p + 1 : "";
		} while (p[0] == ' ' && p[1] == ' ' && p[2] == ' ');
	}
}

/* What a value named META (of option OPT, or positional: NULL) takes */
static void say_value(const struct cstate *st, const char *opt, const char *meta)
{
	static const char *const files[] = { "FILE", "MANIFEST", "ARCHIVE", "PUB",
					     "KEY", "IMAGE", "SITE", "CLAIM", NULL };
	char m[40];

	snprintf(m, sizeof(m), "%s", meta);
	m[strcspn(m, "[+=")] = '\0';
	if ((opt && !strcmp(opt, "--node")) || !strcmp(m, "NODE") || !strcmp(m, "HOSTLIST"))
		return say_inventory(st, false);
	if (!strcmp(m, "RACK"))
		return say_inventory(st, true);
	if (!strcmp(m, "ROLE") || !strcmp(m, "R"))
		return say_roles(st);
	if (!strcmp(m, "STATE")) {
		for (size_t i = 0; nf_status_state_args[i]; i++)
			say(st, nf_status_state_args[i]);
		return;
	}
	if (!strcmp(m, "KIND"))
		return say_kinds(st);
	/* an image by its role (reimage --image): current, ROLE@current */
	if (strstr(meta, "ROLE@current") ||
	    (!strcmp(m, "IMAGE") && st->help && strstr(st->help, "ROLE@current"))) {
		say(st, "current");
		return say_roles_as(st, "@current");
	}
	if (!strcmp(m, "DIR") || !strcmp(m, "ROOT")) {
		printf("@dir\n");
		return;
	}
	for (size_t i = 0; files[i]; i++)
		if (strstr(m, files[i]) || strchr(m, '.')) {
			printf("@file\n");
			return;
		}
	/* literal alternatives: "tcg|kvm", "on|off|cycle" */
	if (islower((unsigned char)*m)) {
		char *save = NULL;

		for (char *w = strtok_r(m, "|", &save); w; w = strtok_r(NULL, "|", &save))
			say(st, w);
	}
	/* URL, N, SECONDS, ADDR...: nothing to offer */
}

static bool slot_takes(const char *slot, const char *w)
{
	char m[64], *save = NULL;

	if (!islower((unsigned char)*slot))
		return true;  /* a metavar: any word */
	snprintf(m, sizeof(m), "%s", slot);
	for (char *x = strtok_r(m, "|", &save); x; x = strtok_r(NULL, "|", &save))
		if (!strcmp(x, w))
			return true;
	return false;
}

int nf_cmd_complete(int argc, char **argv)
{
	static struct cspec spec, globals;
	const struct nf_cmd *cmd = NULL;
	const char *pos[64];
	size_t npos = 0, ncmds;
	const struct nf_cmd *const *cmds = nf_cmd_table(&ncmds);
	char defdir[PATH_MAX + 64];
	struct cstate st = { .cur = argc > 0 ? argv[argc - 1] : "",
			     .inventory = "racks.yaml" };
	const struct copt *want = NULL;

	st.profiles = getenv("NODEFORGE_PROFILES");
	if (!st.profiles || !*st.profiles) {
		nf_cmd_default_profiles(defdir, sizeof(defdir));
		st.profiles = defdir;
	}
	parse_opts(&globals, global_help);
	for (int i = 0; i < argc - 1; i++) {
		const char *w = argv[i];
		const struct copt *o = find_opt(&globals, w);

		if (!o && cmd)
			o = find_opt(&spec, w);
		/* the inventory the node names come from, whatever the
		 * command (status asks a server, but its nodes are these) */
		if (!o && (!strcmp(w, "-i") || !strcmp(w, "--inventory"))) {
			if (i + 1 < argc - 1)
				st.inventory = argv[++i];
			continue;
		}
		if (o && o->meta[0]) {
			if (i + 1 == argc - 1) {
				want = o;
				break;
			}
			if (!strcmp(w, "-C"))
				st.profiles = argv[i + 1];
			else if (!strcmp(w, "-i") || !strcmp(w, "--inventory"))
				st.inventory = argv[i + 1];
			i++;
			continue;
		}
		if (*w == '-' && w[1])
			continue;
		if (!cmd) {
			for (size_t k = 0; k < ncmds; k++)
				if (!strcmp(cmds[k]->name, w))
					cmd = cmds[k];
			if (!cmd)
				return 0;
			parse_opts(&spec, cmd->help);
			parse_forms(&spec, cmd->name, cmd->help);
			st.help = cmd->help;
			continue;
		}
		if (npos < sizeof(pos) / sizeof(*pos))
			pos[npos++] = w;
	}
	if (want) {
		say_value(&st, want->name, want->meta);
		return 0;
	}
	if (*st.cur == '-') {
		for (size_t i = 0; i < globals.no; i++)
			say(&st, globals.o[i].name);
		for (size_t i = 0; cmd && i < spec.no; i++)
			if (!find_opt(&globals, spec.o[i].name))
				say(&st, spec.o[i].name);
		return 0;
	}
	if (!cmd) {
		for (size_t k = 0; k < ncmds; k++)
			say(&st, cmds[k]->name);
		return 0;
	}
	/* the slot at npos of every usage line the words so far fit; a
	 * metavar offered once */
	{
		char done[MAX_FORMS][64];
		size_t nd = 0;

		for (size_t f = 0; f < spec.nf; f++) {
			const struct cform *fm = &spec.f[f];
			bool fits = true;
			const char *slot;

			for (size_t i = 0; i < npos && fits; i++) {
				size_t k = i < fm->n ? i : fm->n - 1;

				fits = fm->n && (i < fm->n || fm->repeat) &&
				       slot_takes(fm->slot[k], pos[i]);
			}
			if (!fits || (npos >= fm->n && !fm->repeat) || !fm->n)
				continue;
			slot = fm->slot[npos < fm->n ? npos : fm->n - 1];
			if (!strcmp(slot, "--"))
				continue;
			bool again = false;
			for (size_t k = 0; k < nd && !again; k++)
				again = !strcmp(done[k], slot);
			if (again || nd == MAX_FORMS)
				continue;
			snprintf(done[nd++], sizeof(done[0]), "%s", slot);
			say_value(&st, NULL, slot);
		}
	}
	return 0;
}
