/* SPDX-License-Identifier: MIT */
/*
 * libblkid adapter: what is on a disk (partition table, partitions,
 * filesystems, labels, UUIDs), plus what sysfs says about the device
 * (size, model, transport, rotational, removable).  sysfs and /dev are read
 * under the context's sysroot, so tests run against fixture trees whose
 * dev/ entries are plain image files.  blkid's 0/1/-1 results stay in here.
 */
#include "internal.h"
#include "internal/storage.h"

#include <blkid.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* A disk with more partitions than this is refused (GPT allows 128 by
 * default; anything larger is a hostile or corrupt table) */
#define NF_MAX_PARTS 256
#define NF_MAX_DISKS 4096

static void part_clear(struct nf_part *p)
{
	free(p->type);
	free(p->uuid);
	free(p->name);
	free(p->fstype);
	free(p->label);
	free(p->fsuuid);
}

static void disk_clear(struct nf_disk *d)
{
	free(d->name);
	free(d->path);
	free(d->model);
	free(d->transport);
	free(d->pttype);
	free(d->ptuuid);
	free(d->fstype);
	free(d->label);
	free(d->fsuuid);
	free(d->probe_error);
	for (size_t i = 0; i < d->nparts; i++)
		part_clear(&d->parts[i]);
	free(d->parts);
	memset(d, 0, sizeof(*d));
}

void nf_disks_free(struct nf_disks *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		disk_clear(&d->v[i]);
	free(d->v);
	d->v = NULL;
	d->n = 0;
}

int nf_disk_is_empty(const struct nf_disk *d)
{
	return !d->pttype && !d->fstype && !d->probe_error;
}

static char *lookup(blkid_probe pr, const char *name)
{
	const char *v = NULL;

	if (blkid_probe_lookup_value(pr, name, &v, NULL) == 0 && v && *v)
		return nf_strdup(v);
	return NULL;
}

static void enable_superblocks(blkid_probe pr)
{
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_LABEL |
				      BLKID_SUBLKS_UUID | BLKID_SUBLKS_TYPE);
}

/* The filesystem inside [off, off+size) of fd */
static void probe_fs_at(int fd, unsigned long long off, unsigned long long size,
			struct nf_part *p)
{
	blkid_probe pr = blkid_new_probe();

	if (!pr)
		return;
	if (blkid_probe_set_device(pr, fd, (blkid_loff_t)off,
				   (blkid_loff_t)size) == 0) {
		enable_superblocks(pr);
		if (blkid_do_safeprobe(pr) == 0) {
			p->fstype = lookup(pr, "TYPE");
			p->label = lookup(pr, "LABEL");
			p->fsuuid = lookup(pr, "UUID");
		}
	}
	blkid_free_probe(pr);
}

static int probe_contents(struct nf_ctx *ctx, struct nf_disk *d,
			  const char *devpath)
{
	blkid_probe pr;
	blkid_partlist pl;
	int fd, r, n;

	fd = open(devpath, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		d->probe_error = nf_asprintf("cannot open '%s': %s", devpath,
					     strerror(errno));
		return 0;
	}
	pr = blkid_new_probe();
	if (!pr) {
		close(fd);
		return -ENOMEM;
	}
	if (blkid_probe_set_device(pr, fd, 0, 0) != 0) {
		d->probe_error = nf_asprintf("cannot probe '%s'", devpath);
		goto out;
	}
	if (!d->size)
		d->size = (unsigned long long)blkid_probe_get_size(pr);
	enable_superblocks(pr);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_ENTRY_DETAILS);
	r = blkid_do_safeprobe(pr);
	if (r < 0) {
		/* -2: several signatures that contradict each other */
		d->probe_error = nf_asprintf(
			r == -2 ? "ambivalent signatures on '%s'"
				: "cannot probe '%s'", devpath);
		goto out;
	}
	d->fstype = lookup(pr, "TYPE");
	d->label = lookup(pr, "LABEL");
	d->fsuuid = lookup(pr, "UUID");
	pl = blkid_probe_get_partitions(pr);
	if (!pl)
		goto out;
	{
		blkid_parttable tab = blkid_partlist_get_table(pl);

		if (tab) {
			const char *t = blkid_parttable_get_type(tab);
			const char *id = blkid_parttable_get_id(tab);

			d->pttype = t ? nf_strdup(t) : NULL;
			d->ptuuid = id && *id ? nf_strdup(id) : NULL;
		}
	}
	n = blkid_partlist_numof_partitions(pl);
	if (n <= 0)
		goto out;
	if (n > NF_MAX_PARTS) {
		d->probe_error = nf_asprintf("'%s' has %d partitions (at most %d)",
					     devpath, n, NF_MAX_PARTS);
		goto out;
	}
	d->parts = calloc((size_t)n, sizeof(*d->parts));
	if (!d->parts) {
		blkid_free_probe(pr);
		close(fd);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		blkid_partition bp = blkid_partlist_get_partition(pl, i);
		struct nf_part *p = &d->parts[d->nparts];
		const char *s;

		if (!bp)
			continue;
		p->number = (unsigned)blkid_partition_get_partno(bp);
		p->start = (unsigned long long)blkid_partition_get_start(bp) * 512;
		p->size = (unsigned long long)blkid_partition_get_size(bp) * 512;
		if ((s = blkid_partition_get_type_string(bp)) && *s)
			p->type = nf_strdup(s);
		else
			p->type = nf_asprintf("0x%x",
					      blkid_partition_get_type(bp));
		if ((s = blkid_partition_get_uuid(bp)) && *s)
			p->uuid = nf_strdup(s);
		if ((s = blkid_partition_get_name(bp)) && *s)
			p->name = nf_strdup(s);
		d->nparts++;
		/* An extended partition is a container, not a filesystem */
		if (blkid_partition_is_extended(bp))
			continue;
		if (d->size && p->start + p->size <= d->size)
			probe_fs_at(fd, p->start, p->size, p);
	}
out:
	blkid_free_probe(pr);
	close(fd);
	(void)ctx;
	return 0;
}

/* Transport from where the device sits in the device tree: the target of
 * the /sys/block/NAME link (a fixture tree carries the same relative
 * link) */
static char *transport_of(const struct nf_ctx *ctx, const char *name)
{
	char *p, link[PATH_MAX];
	ssize_t n;

	if (!strncmp(name, "nvme", 4))
		return nf_strdup("nvme");
	if (!strncmp(name, "vd", 2))
		return nf_strdup("virtio");
	if (!strncmp(name, "mmcblk", 6))
		return nf_strdup("mmc");
	p = nf_sr_path(ctx, "/sys/block/%s", name);
	if (!p)
		return NULL;
	n = readlink(p, link, sizeof(link) - 1);
	free(p);
	if (n > 0) {
		link[n] = '\0';
		if (strstr(link, "/usb"))
			return nf_strdup("usb");
		if (strstr(link, "/nvme"))
			return nf_strdup("nvme");
		if (strstr(link, "/virtio"))
			return nf_strdup("virtio");
		if (strstr(link, "/ata"))
			return nf_strdup("sata");
		if (strstr(link, "/host"))
			return nf_strdup("scsi");
	}
	return nf_strdup("unknown");
}

static int attr_int(const struct nf_ctx *ctx, const char *name,
		    const char *attr)
{
	char *v = nf_sr_read_attr(ctx, "/sys/block/%s/%s", name, attr);
	int r = -1;

	if (v && (!strcmp(v, "0") || !strcmp(v, "1")))
		r = v[0] - '0';
	free(v);
	return r;
}

/* Fill what sysfs knows about block device NAME */
static int sysfs_fill(struct nf_ctx *ctx, struct nf_disk *d, const char *name)
{
	char *v;

	if (!(d->name = nf_strdup(name)))
		return -ENOMEM;
	v = nf_sr_read_attr(ctx, "/sys/block/%s/size", name);
	if (v) {
		char *end;
		unsigned long long sectors = strtoull(v, &end, 10);

		if (*end == '\0' && sectors < (1ULL << 54))
			d->size = sectors * 512;
		free(v);
	}
	d->model = nf_sr_read_attr(ctx, "/sys/block/%s/device/model", name);
	d->transport = transport_of(ctx, name);
	d->rotational = attr_int(ctx, name, "queue/rotational");
	d->removable = attr_int(ctx, name, "removable");
	return d->transport ? 0 : -ENOMEM;
}

static int disks_push(struct nf_disks *out, struct nf_disk **slot)
{
	struct nf_disk *nv;

	if (out->n >= NF_MAX_DISKS)
		return NF_E_LIMIT;
	nv = realloc(out->v, (out->n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	out->v = nv;
	*slot = &nv[out->n];
	memset(*slot, 0, sizeof(**slot));
	out->n++;
	return 0;
}

static int skip_name(const char *n)
{
	static const char *const virt[] = { "loop", "ram", "zram", "dm-",
					    "md", "nbd", "sr" };

	if (n[0] == '.')
		return 1;
	for (size_t i = 0; i < NF_ARRAY_SIZE(virt); i++)
		if (!strncmp(n, virt[i], strlen(virt[i])))
			return 1;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct nf_disk *)a)->name,
		      ((const struct nf_disk *)b)->name);
}

static int scan(struct nf_ctx *ctx, int probe, struct nf_disks *out)
{
	char *dir = nf_sr_path(ctx, "/sys/block");
	struct dirent *de;
	DIR *dp;
	int r = 0;

	out->v = NULL;
	out->n = 0;
	if (!dir)
		return -ENOMEM;
	dp = opendir(dir);
	if (!dp) {
		r = nf_fail(ctx, -errno, "cannot read '%s': %s", dir,
			    strerror(errno));
		free(dir);
		return r;
	}
	while ((de = readdir(dp))) {
		struct nf_disk *d;
		char *devpath;

		if (skip_name(de->d_name) || strchr(de->d_name, '/'))
			continue;
		if ((r = disks_push(out, &d)) < 0) {
			if (r == NF_E_LIMIT)
				nf_fail(ctx, r, "more than %d block devices in '%s'",
					NF_MAX_DISKS, dir);
			break;
		}
		if ((r = sysfs_fill(ctx, d, de->d_name)) < 0)
			break;
		if (!(d->path = nf_asprintf("/dev/%s", de->d_name))) {
			r = -ENOMEM;
			break;
		}
		if (!probe) {
			if (!(d->probe_error = nf_strdup("contents not probed"))) {
				r = -ENOMEM;
				break;
			}
			continue;
		}
		if (!(devpath = nf_sr_path(ctx, "/dev/%s", de->d_name))) {
			r = -ENOMEM;
			break;
		}
		r = probe_contents(ctx, d, devpath);
		free(devpath);
		if (r < 0)
			break;
	}
	closedir(dp);
	free(dir);
	if (r < 0) {
		nf_disks_free(out);
		return r;
	}
	if (out->n)
		qsort(out->v, out->n, sizeof(*out->v), by_name);
	return 0;
}

int nf_disk_scan(struct nf_ctx *ctx, struct nf_disks *out)
{
	return scan(ctx, 1, out);
}

int nf_disk_scan_hw(struct nf_ctx *ctx, struct nf_disks *out)
{
	return scan(ctx, 0, out);
}

int nf_disk_probe(struct nf_ctx *ctx, const char *path, struct nf_disks *out)
{
	struct nf_disk *d;
	struct stat st;
	int r;

	if (stat(path, &st) < 0)
		return nf_fail(ctx, -errno, "cannot read '%s': %s", path,
			       strerror(errno));
	if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode))
		return nf_fail(ctx, NF_E_INVALID,
			       "'%s' is neither a block device nor a file", path);
	if ((r = disks_push(out, &d)) < 0)
		return r == NF_E_LIMIT ? nf_fail(ctx, r, "too many disks") : r;
	if (S_ISBLK(st.st_mode)) {
		/* /sys/dev/block/MAJ:MIN names the device; a partition is
		 * probed as it is, without the whole disk's attributes */
		char *l = nf_sr_path(ctx, "/sys/dev/block/%u:%u",
				     major(st.st_rdev), minor(st.st_rdev));
		char buf[PATH_MAX];
		ssize_t n = l ? readlink(l, buf, sizeof(buf) - 1) : -1;

		free(l);
		if (n > 0) {
			buf[n] = '\0';
			const char *base = strrchr(buf, '/');

			r = sysfs_fill(ctx, d, base ? base + 1 : buf);
		} else {
			const char *base = strrchr(path, '/');

			d->name = nf_strdup(base ? base + 1 : path);
			d->transport = nf_strdup("unknown");
			d->rotational = d->removable = -1;
			r = d->name && d->transport ? 0 : -ENOMEM;
		}
	} else {
		const char *base = strrchr(path, '/');

		d->name = nf_strdup(base ? base + 1 : path);
		d->transport = nf_strdup("file");
		d->size = (unsigned long long)st.st_size;
		d->rotational = d->removable = -1;
		r = d->name && d->transport ? 0 : -ENOMEM;
	}
	if (r == 0 && !(d->path = nf_strdup(path)))
		r = -ENOMEM;
	if (r == 0)
		r = probe_contents(ctx, d, path);
	if (r < 0) {
		disk_clear(d);
		out->n--;
	}
	return r;
}
