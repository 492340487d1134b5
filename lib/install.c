/* SPDX-License-Identifier: MIT */
/*
 * Stateful install: a signed image onto a local disk.
 *
 *   verify manifest signature -> BootNext = network entry (an interrupted
 *   install boots from the network again) -> wipe, GPT (ESP + root) with
 *   sfdisk -> mkfs.vfat / mkfs.ext4 -> mount root -> safe unpack -> fstab
 *   by UUID -> installed manifest -> GRUB EFI image (grub-mkimage) copied
 *   onto the ESP with mtools -> unmount -> Boot#### for the disk, first in
 *   BootOrder, BootNext removed.
 *
 * The ESP is written with mtools, never mounted: the installer does not
 * need the kernel's vfat driver.  Everything written into the new root goes
 * through its directory fd with O_NOFOLLOW, so an image whose /etc is a
 * symlink cannot redirect the installer's writes.
 */
#include "internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ESP_TYPE "C12A7328-F81F-11D2-BA4B-00A0C93EC93B"
#define ROOT_X86_64_TYPE "4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709"
#define NF_GRUB_DIR "/usr/lib/grub/x86_64-efi"
#define NF_TOOL_ERR_MAX 4096

static int verify_default(struct nf_ctx *ctx, const char *manifest,
			  const char *pubkey)
{
	return nf_manifest_verify(ctx, manifest, pubkey);
}

static int unpack_default(struct nf_ctx *ctx, const char *archive,
			  const char *dir)
{
	struct nf_unpack_opts uo = { .devices = 1 };

	return nf_unpack(ctx, archive, dir, &uo);
}

const struct nf_install_ops nf_install_default_ops = {
	.verify = verify_default,
	.unpack = unpack_default,
};

static void step(const struct nf_install_opts *o, struct nf_ctx *ctx,
		 const char *what)
{
	nf_log(ctx, NF_LOG_INFO, "%s", what);
	if (o->progress)
		o->progress(o->progress_data, what);
}

/*
 * Run a tool; stdin from `input` (or /dev/null), stdout discarded, the
 * last line of stderr kept for the error message.
 */
static int run_tool(struct nf_ctx *ctx, const char *input,
		    const char *const argv[])
{
	struct nf_spawn s = {
		.argv = argv,
		.in = input,
		.inlen = input ? strlen(input) : 0,
		.err = NF_SPAWN_CAPTURE,
		.cap_max = NF_TOOL_ERR_MAX - 1,
		.flags = NF_SPAWN_CAP_TAIL,
	};
	const char *last;
	int r = nf_spawn_run(&s);

	if (s.exec_errno)
		return nf_fail(ctx, NF_E_EXTERNAL, "'%s' failed: cannot run "
			       "'%s': %s", argv[0], argv[0],
			       strerror(s.exec_errno));
	if (r < 0) {
		free(s.cap);
		return nf_fail(ctx, r, "cannot run '%s': %s", argv[0],
			       strerror(-r));
	}
	while (s.caplen && (s.cap[s.caplen - 1] == '\n' ||
			    s.cap[s.caplen - 1] == ' '))
		s.cap[--s.caplen] = '\0';
	if (WIFEXITED(s.status) && WEXITSTATUS(s.status) == 0) {
		free(s.cap);
		return 0;
	}
	last = strrchr(s.cap, '\n');
	r = nf_fail(ctx, NF_E_EXTERNAL, "'%s' failed: %s", argv[0],
		    s.caplen ? (last ? last + 1 : s.cap)
			     : WIFEXITED(s.status) ? "exit status" : "killed");
	free(s.cap);
	return r;
}

/* Is the disk or one of its partitions mounted? */
static int disk_mounted(struct nf_ctx *ctx, const char *dev, char *what,
			size_t whatsz)
{
	char *file = nf_sr_path(ctx, "/proc/self/mountinfo"), *buf, *line,
	     *save = NULL;
	size_t dl = strlen(dev), len;
	int r, hit = 0;

	if (!file)
		return -ENOMEM;
	r = nf_read_file(ctx, file, 4 << 20, &buf, &len);
	free(file);
	if (r < 0)
		return r;
	for (line = strtok_r(buf, "\n", &save); line && !hit;
	     line = strtok_r(NULL, "\n", &save)) {
		char *sep = strstr(line, " - "), src[PATH_MAX];

		if (!sep || sscanf(sep + 3, "%*s %4095s", src) != 1)
			continue;
		/* /dev/loop0 holds /dev/loop0p1; /dev/sda holds /dev/sda1 */
		if (!strncmp(src, dev, dl) &&
		    (src[dl] == '\0' || src[dl] == 'p' ||
		     (src[dl] >= '0' && src[dl] <= '9'))) {
			snprintf(what, whatsz, "%s", src);
			hit = 1;
		}
	}
	free(buf);
	return hit;
}

/* /dev/NAME of partition `num` of the disk with kernel name `disk`,
 * waiting (up to 10 s) for the kernel to create it */
static int part_dev(struct nf_ctx *ctx, const char *disk, unsigned num,
		    char *out, size_t outsz)
{
	for (int tries = 0; tries < 100; tries++) {
		char *dir = nf_sr_path(ctx, "/sys/block/%s", disk);
		struct dirent *de;
		DIR *dp = dir ? opendir(dir) : NULL;
		struct stat st;
		int found = 0;

		free(dir);
		if (dp) {
			while (!found && (de = readdir(dp))) {
				char *v;

				if (strncmp(de->d_name, disk, strlen(disk)))
					continue;
				v = nf_sr_read_attr(ctx, "/sys/block/%s/%s/partition",
						    disk, de->d_name);
				if (v && strtoul(v, NULL, 10) == num) {
					snprintf(out, outsz, "/dev/%s",
						 de->d_name);
					found = 1;
				}
				free(v);
			}
			closedir(dp);
		}
		if (found && stat(out, &st) == 0 && S_ISBLK(st.st_mode))
			return 0;
		struct timespec ts = { 0, 100 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	return nf_fail(ctx, NF_E_NOTFOUND,
		       "partition %u of '%s' did not appear under /dev", num,
		       disk);
}

/* Replace DIR/NAME in the new root, on disk before it returns */
static int write_file_in(struct nf_ctx *ctx, int rootfd, const char *dir,
			 const char *name, const void *buf, size_t len,
			 unsigned mode)
{
	int dfd = nf_root_opendir(ctx, rootfd, dir, NF_ROOT_CREATE), r;

	if (dfd < 0)
		return dfd;
	r = nf_root_write_in(ctx, dfd, name, name, buf, len, mode, -1, -1,
			     NF_ROOT_FSYNC);
	close(dfd);
	return r;
}

static int copy_file_in(struct nf_ctx *ctx, int rootfd, const char *dir,
			const char *name, const char *src)
{
	char *buf;
	size_t len;
	int r = nf_read_file(ctx, src, 64 << 20, &buf, &len);

	if (r < 0)
		return r;
	r = write_file_in(ctx, rootfd, dir, name, buf, len, 0644);
	free(buf);
	return r;
}

/* Move every entry of rootfd/sub up into rootfd, then remove sub.  An
 * empty directory already at the top (lost+found) gives way. */
static int hoist(struct nf_ctx *ctx, int rootfd, const char *sub)
{
	int sfd = openat(rootfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					      O_CLOEXEC);
	struct dirent *de;
	DIR *dp;
	int r = 0;

	if (sfd < 0)
		return nf_fail(ctx, -errno, "cannot open '%s': %s", sub,
			       strerror(errno));
	dp = fdopendir(sfd);
	if (!dp) {
		int e = errno;

		close(sfd);
		return nf_fail(ctx, -e, "cannot list '%s': %s", sub, strerror(e));
	}
	while ((de = readdir(dp))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (renameat(sfd, de->d_name, rootfd, de->d_name) < 0) {
			if ((errno == EEXIST || errno == ENOTEMPTY ||
			     errno == EISDIR || errno == ENOTDIR) &&
			    unlinkat(rootfd, de->d_name, AT_REMOVEDIR) == 0 &&
			    renameat(sfd, de->d_name, rootfd, de->d_name) == 0)
				continue;
			r = nf_fail(ctx, -errno, "cannot move '%s' into place: %s",
				    de->d_name, strerror(errno));
			break;
		}
	}
	closedir(dp);
	if (r == 0 && unlinkat(rootfd, sub, AT_REMOVEDIR) < 0)
		r = nf_fail(ctx, -errno, "cannot remove '%s': %s", sub,
			    strerror(errno));
	return r;
}

/* GRUB EFI image: its embedded config finds the root by UUID and loads
 * /boot/grub/grub.cfg from it */
static int build_grub(struct nf_ctx *ctx, const char *root_uuid,
		      const char *out)
{
	char early[] = "/tmp/nodeforge-grub-early.XXXXXX";
	char *cfg = nf_asprintf(
		"search --no-floppy --fs-uuid --set=root %s\n"
		"set prefix=($root)/boot/grub\n"
		"configfile ($root)/boot/grub/grub.cfg\n", root_uuid);
	int fd, r;
	const char *argv[] = {
		"grub-mkimage", "-O", "x86_64-efi", "-d", NF_GRUB_DIR,
		"-p", "/boot/grub", "-c", early, "-o", out,
		"part_gpt", "part_msdos", "ext2", "fat", "search",
		"search_fs_uuid", "normal", "linux", "configfile", "echo",
		"test", "all_video", "efi_gop", "boot", "gzio", NULL
	};

	if (!cfg)
		return -ENOMEM;
	fd = mkstemp(early);
	if (fd < 0) {
		free(cfg);
		return nf_fail(ctx, -errno, "cannot create a temporary file: %s",
			       strerror(errno));
	}
	r = write(fd, cfg, strlen(cfg)) == (ssize_t)strlen(cfg) ? 0 : -EIO;
	close(fd);
	free(cfg);
	if (r == 0)
		r = run_tool(ctx, NULL, argv);
	unlink(early);
	return r;
}

static int find_part(const struct nf_disks *d, unsigned num,
		     const struct nf_part **out)
{
	for (size_t i = 0; d->n && i < d->v[0].nparts; i++)
		if (d->v[0].parts[i].number == num) {
			*out = &d->v[0].parts[i];
			return 0;
		}
	return -ENOENT;
}

static int set_network_next(struct nf_ctx *ctx, struct nf_efi *efi)
{
	unsigned num;
	int r = nf_efi_resolve(efi, "pxe", &num);

	if (r == NF_E_NOTFOUND) {
		nf_log(ctx, NF_LOG_WARN,
		       "no network boot entry: an interrupted install may leave the node unbootable");
		return 0;
	}
	if (r < 0)
		return r;
	return nf_efi_set_boot_next(efi, num);
}

/* One install, handed from step to step */
struct install {
	struct nf_ctx *ctx;
	const struct nf_install_opts *o;
	const struct nf_install_ops *ops;
	struct nf_install_result *res;
	unsigned long long esp;          /* the ESP's size in bytes */
	char manifest[PATH_MAX], sig[PATH_MAX];
	struct nf_disks d;               /* the disk, probed again once made */
	const char *disk_name;           /* its name in /sys/block */
	const struct nf_part *esp_part;  /* in d, once the filesystems are made */
	struct nf_efi *efi;              /* NULL: the boot variables stay */
	char mnt[32];                    /* the root's mount point */
	int mounted, rootfd;
	char grub_img[PATH_MAX];         /* the GRUB image, before the ESP */
};

/* A block device, not mounted, empty or --wipe given, large enough */
static int check_disk(struct install *in)
{
	const struct nf_install_opts *o = in->o;
	struct nf_ctx *ctx = in->ctx;
	char what[PATH_MAX];
	struct stat st;
	int r;

	if (stat(o->disk, &st) < 0)
		return nf_fail(ctx, -errno, "cannot read '%s': %s", o->disk,
			       strerror(errno));
	if (!S_ISBLK(st.st_mode))
		return nf_fail(ctx, NF_E_INVALID,
			       "'%s' is not a block device", o->disk);
	if ((r = disk_mounted(ctx, o->disk, what, sizeof(what))) != 0)
		return r < 0 ? r : nf_fail(ctx, NF_E_CONFLICT,
					   "'%s' is in use: '%s' is mounted",
					   o->disk, what);
	if ((r = nf_disk_probe(ctx, o->disk, &in->d)) < 0)
		return r;
	if (!nf_disk_is_empty(&in->d.v[0]) && !o->wipe) {
		const struct nf_disk *x = &in->d.v[0];
		const char *fs = x->fstype;

		for (size_t i = 0; !fs && i < x->nparts; i++)
			fs = x->parts[i].fstype;
		return nf_fail(ctx, NF_E_CONFLICT,
			       "'%s' holds %s%s%s; give --wipe to erase it",
			       o->disk, fs ? "a filesystem (" : "a partition table",
			       fs ? fs : "", fs ? ")" : "");
	}
	if (in->d.v[0].size < in->esp + (256ULL << 20))
		return nf_fail(ctx, NF_E_INVALID,
			       "'%s' is too small (%llu bytes) for an install",
			       o->disk, in->d.v[0].size);
	in->disk_name = strrchr(in->d.v[0].name, '/');
	in->disk_name = in->disk_name ? in->disk_name + 1 : in->d.v[0].name;
	return 0;
}

/* From here on the disk is not bootable: the next boot goes to the
 * network until the new entry is in place */
static int boot_network_next(struct install *in)
{
	int r;

	if (in->o->no_efi)
		return 0;
	r = in->o->efivars ? nf_efi_open_dir(in->ctx, in->o->efivars, &in->efi)
			   : nf_efi_open(in->ctx, &in->efi);
	return r < 0 ? r : set_network_next(in->ctx, in->efi);
}

/* Wiped, then GPT: the ESP and the root, as res->esp_dev, res->root_dev */
static int partition(struct install *in)
{
	const char *disk = in->o->disk;
	const char *wipe[] = { "wipefs", "--all", "--quiet", disk, NULL };
	const char *sfdisk[] = { "sfdisk", "--quiet", "--wipe", "always",
				 "--wipe-partitions", "always", disk, NULL };
	const char *partx[] = { "partx", "--update", disk, NULL };
	char *script;
	int r;

	step(in->o, in->ctx, "partitioning");
	if ((r = run_tool(in->ctx, NULL, wipe)) < 0)
		return r;
	script = nf_asprintf("label: gpt\n"
			     "size=%lluKiB, type=" ESP_TYPE ", name=\"ESP\"\n"
			     "type=" ROOT_X86_64_TYPE ", name=\"root\"\n",
			     in->esp / 1024);
	if (!script)
		return -ENOMEM;
	r = run_tool(in->ctx, script, sfdisk);
	free(script);
	if (r < 0)
		return r;
	/* sfdisk asks the kernel to re-read the table; partx covers
	 * devices where that is not enough */
	run_tool(in->ctx, NULL, partx);
	if ((r = part_dev(in->ctx, in->disk_name, 1, in->res->esp_dev,
			  sizeof(in->res->esp_dev))) < 0)
		return r;
	return part_dev(in->ctx, in->disk_name, 2, in->res->root_dev,
			sizeof(in->res->root_dev));
}

/* vfat on the ESP, ext4 on the root, and their UUIDs read back */
static int make_filesystems(struct install *in)
{
	struct nf_install_result *res = in->res;
	const char *vfat[] = { "mkfs.vfat", "-F", "32", "-n", "ESP",
			       res->esp_dev, NULL };
	const char *ext4[] = { "mkfs.ext4", "-q", "-F", "-L", "root",
			       res->root_dev, NULL };
	const struct nf_part *pr;
	int r;

	step(in->o, in->ctx, "making filesystems");
	if ((r = run_tool(in->ctx, NULL, vfat)) < 0 ||
	    (r = run_tool(in->ctx, NULL, ext4)) < 0)
		return r;
	nf_disks_free(&in->d);
	if ((r = nf_disk_probe(in->ctx, in->o->disk, &in->d)) < 0)
		return r;
	if (find_part(&in->d, 1, &in->esp_part) < 0 ||
	    find_part(&in->d, 2, &pr) < 0 || !in->esp_part->fsuuid ||
	    !pr->fsuuid || !in->esp_part->uuid)
		return nf_fail(in->ctx, NF_E_EXTERNAL,
			       "the new partitions of '%s' are not readable",
			       in->o->disk);
	snprintf(res->esp_uuid, sizeof(res->esp_uuid), "%s",
		 in->esp_part->fsuuid);
	snprintf(res->root_uuid, sizeof(res->root_uuid), "%s", pr->fsuuid);
	return 0;
}

/* The root filesystem on a fresh directory, opened as in->rootfd */
static int mount_root(struct install *in)
{
	if (!mkdtemp(in->mnt))
		return nf_fail(in->ctx, -errno, "cannot create a mount point: %s",
			       strerror(errno));
	if (mount(in->res->root_dev, in->mnt, "ext4", MS_NOATIME, NULL) < 0) {
		int r = nf_fail(in->ctx, -errno, "cannot mount '%s': %s",
				in->res->root_dev, strerror(errno));

		rmdir(in->mnt);
		return r;
	}
	in->mounted = 1;
	in->rootfd = open(in->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return in->rootfd < 0 ? -errno : 0;
}

static int unpack_image(struct install *in)
{
	char *dest;
	int r;

	step(in->o, in->ctx, "unpacking the image");
	dest = nf_asprintf("%s/.nodeforge-rootfs", in->mnt);
	if (!dest)
		return -ENOMEM;
	/* unpack next to its final place (same filesystem), then move the
	 * tree up: the unpacker wants a fresh directory */
	r = in->ops->unpack(in->ctx, in->o->image, dest);
	free(dest);
	return r < 0 ? r : hoist(in->ctx, in->rootfd, ".nodeforge-rootfs");
}

/* /etc/fstab by UUID, and /boot/efi for it to mount */
static int write_fstab(struct install *in)
{
	char *text;
	int r, efd;

	step(in->o, in->ctx, "writing fstab, manifest and boot configuration");
	text = nf_asprintf("# /etc/fstab: written by nodeforge install\n"
			   "UUID=%s\t/\text4\tdefaults,errors=remount-ro\t0\t1\n"
			   "UUID=%s\t/boot/efi\tvfat\tumask=0077\t0\t2\n",
			   in->res->root_uuid, in->res->esp_uuid);
	if (!text)
		return -ENOMEM;
	r = write_file_in(in->ctx, in->rootfd, "etc", "fstab", text,
			  strlen(text), 0644);
	free(text);
	if (r < 0)
		return r;
	efd = nf_root_opendir(in->ctx, in->rootfd, "boot/efi", NF_ROOT_CREATE);
	if (efd < 0)
		return efd;
	close(efd);
	return 0;
}

/* The signed manifest the node was installed from, for manifest check */
static int write_manifest(struct install *in)
{
	int r;

	if ((r = copy_file_in(in->ctx, in->rootfd, "etc/nodeforge",
			      "installed.manifest.json", in->manifest)) < 0)
		return r;
	return copy_file_in(in->ctx, in->rootfd, "etc/nodeforge",
			    "installed.manifest.json.sig", in->sig);
}

/* /boot/grub/grub.cfg: the image's kernel on the new root */
static int write_grub_cfg(struct install *in)
{
	const struct nf_install_opts *o = in->o;
	const char *root_uuid = in->res->root_uuid;
	char kernel[PATH_MAX], initrd[PATH_MAX], *text;
	int r;

	if ((r = nf_root_find_kernel(in->ctx, in->rootfd, kernel, sizeof(kernel),
				     initrd, sizeof(initrd))) < 0)
		return r;
	text = nf_asprintf("# written by nodeforge install\n"
			   "set timeout=1\n"
			   "set default=0\n"
			   "menuentry 'nodeforge' {\n"
			   "\tsearch --no-floppy --fs-uuid --set=root %s\n"
			   "\tlinux %s root=UUID=%s ro%s%s\n"
			   "%s%s%s"
			   "}\n",
			   root_uuid, kernel, root_uuid,
			   o->kernel_args && *o->kernel_args ? " " : "",
			   o->kernel_args ? o->kernel_args : "",
			   initrd[0] ? "\tinitrd " : "", initrd,
			   initrd[0] ? "\n" : "");
	if (!text)
		return -ENOMEM;
	r = write_file_in(in->ctx, in->rootfd, "boot/grub", "grub.cfg", text,
			  strlen(text), 0644);
	free(text);
	return r;
}

/* The boot loader, onto the ESP without mounting it */
static int install_loader(struct install *in)
{
	char img[PATH_MAX + 8];
	const char *mmd[] = { "mmd", "-i", img, "::/EFI", "::/EFI/BOOT", NULL };
	const char *mcopy[] = { "mcopy", "-i", img, "-o", in->grub_img,
				"::/EFI/BOOT/BOOTX64.EFI", NULL };
	int r;

	step(in->o, in->ctx, "installing the boot loader");
	snprintf(in->grub_img, sizeof(in->grub_img), "%s.BOOTX64.EFI", in->mnt);
	if ((r = build_grub(in->ctx, in->res->root_uuid, in->grub_img)) < 0)
		return r;
	snprintf(img, sizeof(img), "%s", in->res->esp_dev);
	if ((r = run_tool(in->ctx, NULL, mmd)) < 0)
		return r;
	return run_tool(in->ctx, NULL, mcopy);
}

static int unmount_root(struct install *in)
{
	syncfs(in->rootfd);
	close(in->rootfd);
	in->rootfd = -1;
	if (umount(in->mnt) < 0)
		return nf_fail(in->ctx, -errno, "cannot unmount '%s': %s",
			       in->mnt, strerror(errno));
	in->mounted = 0;
	rmdir(in->mnt);
	sync();
	return 0;
}

/* Boot from the disk: the new entry first in BootOrder, BootNext gone */
static int boot_from_disk(struct install *in)
{
	const struct nf_part *pe = in->esp_part;
	unsigned num, *order = NULL, *nv;
	size_t no = 0, k = 1;
	int r;

	if (!in->efi)
		return 0;
	step(in->o, in->ctx, "setting the EFI boot order");
	if ((r = nf_efi_add(in->efi, in->o->label ? in->o->label : "nodeforge",
			    1, pe->start, pe->size, pe->uuid,
			    "\\EFI\\BOOT\\BOOTX64.EFI", &num)) < 0)
		return r;
	in->res->boot_entry = (int)num;
	if ((r = nf_efi_boot_order(in->efi, &order, &no)) < 0)
		return r;
	nv = calloc(no + 1, sizeof(*nv));
	if (!nv) {
		free(order);
		return -ENOMEM;
	}
	nv[0] = num;
	for (size_t i = 0; i < no; i++)
		if (order[i] != num)
			nv[k++] = order[i];
	free(order);
	r = nf_efi_set_boot_order(in->efi, nv, k);
	free(nv);
	return r < 0 ? r : nf_efi_clear_boot_next(in->efi);
}

int nf_install(struct nf_ctx *ctx, const struct nf_install_opts *o,
	       const struct nf_install_ops *ops, struct nf_install_result *res)
{
	struct install in = {
		.ctx = ctx, .o = o, .res = res,
		.ops = ops ? ops : &nf_install_default_ops,
		.esp = o->esp_size ? o->esp_size : 512ULL << 20,
		.mnt = "/tmp/nodeforge-install.XXXXXX",
		.rootfd = -1,
	};
	int r;

	memset(res, 0, sizeof(*res));
	res->boot_entry = -1;
	if (!o->image || !o->disk || !o->pubkey)
		return nf_fail(ctx, NF_E_USAGE, "install needs an image, a disk and a public key");
	if (in.esp < (32ULL << 20) || in.esp % (1 << 20))
		return nf_fail(ctx, NF_E_INVALID,
			       "ESP size must be a whole number of MiB, at least 32 MiB");
	snprintf(in.manifest, sizeof(in.manifest), "%s.manifest.json", o->image);
	snprintf(in.sig, sizeof(in.sig), "%s.sig", in.manifest);

	step(o, ctx, "verifying the image's manifest signature");
	if ((r = in.ops->verify(ctx, in.manifest, o->pubkey)) < 0)
		return r;
	if ((r = check_disk(&in)) >= 0 &&
	    (r = boot_network_next(&in)) >= 0 &&
	    (r = partition(&in)) >= 0 &&
	    (r = make_filesystems(&in)) >= 0 &&
	    (r = mount_root(&in)) >= 0 &&
	    (r = unpack_image(&in)) >= 0 &&
	    (r = write_fstab(&in)) >= 0 &&
	    (r = write_manifest(&in)) >= 0 &&
	    (r = write_grub_cfg(&in)) >= 0 &&
	    (r = install_loader(&in)) >= 0 &&
	    (r = unmount_root(&in)) >= 0)
		r = boot_from_disk(&in);

	if (in.rootfd >= 0)
		close(in.rootfd);
	if (in.mounted && umount(in.mnt) == 0)
		rmdir(in.mnt);
	if (in.grub_img[0])
		unlink(in.grub_img);
	nf_disks_free(&in.d);
	nf_efi_free(in.efi);
	return r < 0 ? r : 0;
}
