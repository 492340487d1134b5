/* SPDX-License-Identifier: MIT */
/*
 * The boot tree's files: a file whose content is unchanged is not
 * touched; a changed one is staged as a temporary next to its target,
 * made durable with one syncfs() and renamed into place; what no longer
 * belongs to the tree is pruned.  Every path is opened relative to the
 * tree's directory fd with O_NOFOLLOW.
 */
#include "pxe_int.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>


/* Open (creating) a subdirectory of the tree: one level, no symlinks */
int nf_pxe_dir_fd(struct pxe *p, const char *sub)
{
	int fd;

	for (size_t i = 0; i < p->ndirs; i++)
		if (!strcmp(p->dirs[i].path, sub))
			return p->dirs[i].fd;
	if (p->ndirs == NF_ARRAY_SIZE(p->dirs))
		return nf_fail(p->ctx, NF_E_LIMIT, "too many directories");
	if (!*sub) {
		fd = dup(p->root);
	} else {
		char *copy = nf_strdup(sub), *slash;
		int parent = p->root;

		if (!copy)
			return -ENOMEM;
		/* make parents first, each through its own fd */
		slash = strrchr(copy, '/');
		if (slash) {
			*slash = '\0';
			parent = nf_pxe_dir_fd(p, copy);
			if (parent < 0) {
				free(copy);
				return parent;
			}
		}
		if (mkdirat(parent, slash ? slash + 1 : copy, 0755) < 0 &&
		    errno != EEXIST) {
			int e = errno;

			free(copy);
			return nf_fail(p->ctx, -e, "cannot create '%s/%s': %s",
				       p->o->out_dir, sub, strerror(e));
		}
		fd = openat(parent, slash ? slash + 1 : copy,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		free(copy);
	}
	if (fd < 0)
		return nf_fail(p->ctx, -errno, "cannot open '%s/%s': %s",
			       p->o->out_dir, sub, strerror(errno));
	p->dirs[p->ndirs].path = nf_strdup(sub);
	p->dirs[p->ndirs].fd = fd;
	p->ndirs++;
	return fd;
}

/* Does dfd/name hold exactly buf? */
static int same_content(int dfd, const char *name, const char *buf,
			size_t len)
{
	struct stat st;
	char *cur;
	int fd, same = 0;
	size_t got = 0;

	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size != len || len > NF_PXE_CMP_MAX) {
		close(fd);
		return 0;
	}
	cur = malloc(len + 1);
	if (cur) {
		while (got < len) {
			ssize_t r = read(fd, cur + got, len - got);

			if (r <= 0)
				break;
			got += (size_t)r;
		}
		same = got == len && !memcmp(cur, buf, len);
		free(cur);
	}
	close(fd);
	return same;
}

int nf_pxe_keep(struct pxe *p, const char *dir, const char *name)
{
	json_t *d = json_object_get(p->keep, dir);

	if (!d) {
		d = json_object();
		if (!d || json_object_set_new(p->keep, dir, d))
			return -ENOMEM;
	}
	return json_object_set_new(d, name, json_true()) ? -ENOMEM : 0;
}

/* Render one file of the tree: stage it unless it is unchanged */
int nf_pxe_put(struct pxe *p, const char *dir, const char *name,
	       const char *buf, size_t len)
{
	struct staged *s;
	char tmp[320];
	int dfd, fd, r;

	if ((r = nf_pxe_keep(p, dir, name)))
		return r;
	p->st->files++;
	dfd = nf_pxe_dir_fd(p, dir);
	if (dfd < 0)
		return dfd;
	if (same_content(dfd, name, buf, len)) {
		p->st->unchanged++;
		return 0;
	}
	snprintf(tmp, sizeof(tmp), ".%s.tmp.%ld.%lu", name, (long)getpid(),
		 p->seq++);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			      O_CLOEXEC, 0644);
	if (fd < 0)
		return nf_fail(p->ctx, -errno, "cannot write '%s/%s/%s': %s",
			       p->o->out_dir, dir, name, strerror(errno));
	/* 0644 whatever the umask: serve refuses a file that is not
	 * world-readable (a private file in the tree) */
	if ((r = nf_write_full(fd, buf, len)) ||
	    (fchmod(fd, 0644) < 0 && (r = -errno))) {
		close(fd);
		unlinkat(dfd, tmp, 0);
		return nf_fail(p->ctx, r, "cannot write '%s/%s/%s': %s",
			       p->o->out_dir, dir, name, strerror(-r));
	}
	close(fd);
	if (p->nstg == p->capstg) {
		size_t cap = p->capstg ? p->capstg * 2 : 256;
		struct staged *v = realloc(p->stg, cap * sizeof(*v));

		if (!v) {
			unlinkat(dfd, tmp, 0);
			return -ENOMEM;
		}
		p->stg = v;
		p->capstg = cap;
	}
	s = &p->stg[p->nstg];
	s->dfd = dfd;
	s->tmp = nf_strdup(tmp);
	s->name = nf_strdup(name);
	if (!s->tmp || !s->name) {
		free(s->tmp);
		free(s->name);
		unlinkat(dfd, tmp, 0);
		return -ENOMEM;
	}
	p->nstg++;
	p->st->written++;
	return 0;
}

void nf_pxe_unstage(struct pxe *p)
{
	for (size_t i = 0; i < p->nstg; i++) {
		unlinkat(p->stg[i].dfd, p->stg[i].tmp, 0);
		free(p->stg[i].tmp);
		free(p->stg[i].name);
	}
	p->nstg = 0;
}

void nf_pxe_release(struct pxe *p)
{
	nf_pxe_unstage(p);
	free(p->stg);
	p->stg = NULL;
	for (size_t i = 0; i < p->ndirs; i++) {
		close(p->dirs[i].fd);
		free(p->dirs[i].path);
	}
	p->ndirs = 0;
	if (p->root >= 0)
		close(p->root);
	p->root = -1;
	json_decref(p->keep);
	p->keep = NULL;
}

int nf_pxe_publish(struct pxe *p)
{
	if (!p->nstg)
		return 0;
	/* one flush for every staged file instead of one fsync each */
	if (syncfs(p->root) < 0)
		return nf_fail(p->ctx, -errno, "cannot sync '%s': %s",
			       p->o->out_dir, strerror(errno));
	for (size_t i = 0; i < p->nstg; i++) {
		struct staged *s = &p->stg[i];

		if (renameat(s->dfd, s->tmp, s->dfd, s->name) < 0)
			return nf_fail(p->ctx, -errno,
				       "cannot publish '%s': %s", s->name,
				       strerror(errno));
		free(s->tmp);
		free(s->name);
		s->tmp = s->name = NULL;
	}
	p->nstg = 0;
	for (size_t i = 0; i < p->ndirs; i++)
		fsync(p->dirs[i].fd);
	return 0;
}

/* Remove files of a generated directory that this render did not produce */
int nf_pxe_prune(struct pxe *p, const char *dir, const char *prefix,
		 const char *suffix)
{
	json_t *k = json_object_get(p->keep, dir);
	int dfd = nf_pxe_dir_fd(p, dir), fd;
	DIR *d;
	struct dirent *de;

	if (dfd < 0)
		return dfd;
	fd = dup(dfd);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return nf_fail(p->ctx, -errno, "cannot list '%s/%s'",
			       p->o->out_dir, dir);
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name), ls = strlen(suffix);

		if (de->d_name[0] == '.' ||
		    strncmp(de->d_name, prefix, strlen(prefix)) ||
		    n < ls || strcmp(de->d_name + n - ls, suffix) ||
		    json_object_get(k, de->d_name))
			continue;
		if (unlinkat(dfd, de->d_name, 0) == 0)
			p->st->removed++;
	}
	closedir(d);
	return 0;
}

/* ---------------------------------------------------------- buffers */

int nf_pxe_bput(struct pxe *p, const char *dir, const char *name,
		struct nf_buf *b)
{
	int r;

	if (b->err)
		return -ENOMEM;
	r = nf_pxe_put(p, dir, name, b->s ? b->s : "", b->len);
	b->len = 0;
	return r;
}

