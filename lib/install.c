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

int nf_install(struct nf_ctx *ctx, const struct nf_install_opts *o,
	       const struct nf_install_ops *ops, struct nf_install_result *res)
{
	char manifest[PATH_MAX], sig[PATH_MAX], what[PATH_MAX], mnt[] =
		"/tmp/nodeforge-install.XXXXXX";
	char kernel[PATH_MAX], initrd[PATH_MAX], grub_img[PATH_MAX] = "";
	unsigned long long esp = o->esp_size ? o->esp_size : 512ULL << 20;
	struct nf_disks d = { 0 };
	const struct nf_part *pe, *pr;
	struct nf_efi *efi = NULL;
	const char *disk_name;
	struct stat st;
	char *script = NULL, *text = NULL;
	int r, mounted = 0, rootfd = -1;

	if (!ops)
		ops = &nf_install_default_ops;
	memset(res, 0, sizeof(*res));
	res->boot_entry = -1;
	if (!o->image || !o->disk || !o->pubkey)
		return nf_fail(ctx, NF_E_USAGE, "install needs an image, a disk and a public key");
	if (esp < (32ULL << 20) || esp % (1 << 20))
		return nf_fail(ctx, NF_E_INVALID,
			       "ESP size must be a whole number of MiB, at least 32 MiB");
	snprintf(manifest, sizeof(manifest), "%s.manifest.json", o->image);
	snprintf(sig, sizeof(sig), "%s.sig", manifest);

	/* 1. trust */
	step(o, ctx, "verifying the image's manifest signature");
	if ((r = ops->verify(ctx, manifest, o->pubkey)) < 0)
		return r;

	/* 2. the disk */
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
	if ((r = nf_disk_probe(ctx, o->disk, &d)) < 0)
		return r;
	if (!nf_disk_is_empty(&d.v[0]) && !o->wipe) {
		const struct nf_disk *x = &d.v[0];
		const char *fs = x->fstype;

		for (size_t i = 0; !fs && i < x->nparts; i++)
			fs = x->parts[i].fstype;
		r = nf_fail(ctx, NF_E_CONFLICT,
			    "'%s' holds %s%s%s; give --wipe to erase it",
			    o->disk, fs ? "a filesystem (" : "a partition table",
			    fs ? fs : "", fs ? ")" : "");
		nf_disks_free(&d);
		return r;
	}
	if (d.v[0].size < esp + (256ULL << 20)) {
		r = nf_fail(ctx, NF_E_INVALID,
			    "'%s' is too small (%llu bytes) for an install",
			    o->disk, d.v[0].size);
		nf_disks_free(&d);
		return r;
	}
	disk_name = strrchr(d.v[0].name, '/');
	disk_name = disk_name ? disk_name + 1 : d.v[0].name;

	/* 3. from here on the disk is not bootable: next boot goes to the
	 * network until the new entry is in place */
	if (!o->no_efi) {
		r = o->efivars ? nf_efi_open_dir(ctx, o->efivars, &efi)
			       : nf_efi_open(ctx, &efi);
		if (r < 0)
			goto out;
		if ((r = set_network_next(ctx, efi)) < 0)
			goto out;
	}

	/* 4. partitions and filesystems */
	step(o, ctx, "partitioning");
	{
		const char *wipe[] = { "wipefs", "--all", "--quiet", o->disk, NULL };

		if ((r = run_tool(ctx, NULL, wipe)) < 0)
			goto out;
	}
	script = nf_asprintf("label: gpt\n"
			     "size=%lluKiB, type=" ESP_TYPE ", name=\"ESP\"\n"
			     "type=" ROOT_X86_64_TYPE ", name=\"root\"\n",
			     esp / 1024);
	if (!script) {
		r = -ENOMEM;
		goto out;
	}
	{
		const char *sfdisk[] = { "sfdisk", "--quiet", "--wipe", "always",
					 "--wipe-partitions", "always",
					 o->disk, NULL };
		const char *partx[] = { "partx", "--update", o->disk, NULL };

		if ((r = run_tool(ctx, script, sfdisk)) < 0)
			goto out;
		/* sfdisk asks the kernel to re-read the table; partx covers
		 * devices where that is not enough */
		run_tool(ctx, NULL, partx);
	}
	if ((r = part_dev(ctx, disk_name, 1, res->esp_dev,
			  sizeof(res->esp_dev))) < 0 ||
	    (r = part_dev(ctx, disk_name, 2, res->root_dev,
			  sizeof(res->root_dev))) < 0)
		goto out;
	step(o, ctx, "making filesystems");
	{
		const char *vfat[] = { "mkfs.vfat", "-F", "32", "-n", "ESP",
				       res->esp_dev, NULL };
		const char *ext4[] = { "mkfs.ext4", "-q", "-F", "-L", "root",
				       res->root_dev, NULL };

		if ((r = run_tool(ctx, NULL, vfat)) < 0 ||
		    (r = run_tool(ctx, NULL, ext4)) < 0)
			goto out;
	}
	nf_disks_free(&d);
	if ((r = nf_disk_probe(ctx, o->disk, &d)) < 0)
		goto out;
	if (find_part(&d, 1, &pe) < 0 || find_part(&d, 2, &pr) < 0 ||
	    !pe->fsuuid || !pr->fsuuid || !pe->uuid) {
		r = nf_fail(ctx, NF_E_EXTERNAL,
			    "the new partitions of '%s' are not readable",
			    o->disk);
		goto out;
	}
	snprintf(res->esp_uuid, sizeof(res->esp_uuid), "%s", pe->fsuuid);
	snprintf(res->root_uuid, sizeof(res->root_uuid), "%s", pr->fsuuid);

	/* 5. the root filesystem */
	if (!mkdtemp(mnt)) {
		r = nf_fail(ctx, -errno, "cannot create a mount point: %s",
			    strerror(errno));
		goto out;
	}
	if (mount(res->root_dev, mnt, "ext4", MS_NOATIME, NULL) < 0) {
		r = nf_fail(ctx, -errno, "cannot mount '%s': %s", res->root_dev,
			    strerror(errno));
		rmdir(mnt);
		goto out;
	}
	mounted = 1;
	rootfd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		r = -errno;
		goto out;
	}
	step(o, ctx, "unpacking the image");
	{
		char *dest = nf_asprintf("%s/.nodeforge-rootfs", mnt);

		if (!dest) {
			r = -ENOMEM;
			goto out;
		}
		/* unpack next to its final place (same filesystem), then move
		 * the tree up: the unpacker wants a fresh directory */
		r = ops->unpack(ctx, o->image, dest);
		free(dest);
		if (r < 0 || (r = hoist(ctx, rootfd, ".nodeforge-rootfs")) < 0)
			goto out;
	}

	/* 6. fstab, installed manifest, boot configuration */
	step(o, ctx, "writing fstab, manifest and boot configuration");
	text = nf_asprintf("# /etc/fstab: written by nodeforge install\n"
			   "UUID=%s\t/\text4\tdefaults,errors=remount-ro\t0\t1\n"
			   "UUID=%s\t/boot/efi\tvfat\tumask=0077\t0\t2\n",
			   res->root_uuid, res->esp_uuid);
	if (!text) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = write_file_in(ctx, rootfd, "etc", "fstab", text,
			       strlen(text), 0644)) < 0)
		goto out;
	free(text);
	text = NULL;
	{
		int efd = nf_root_opendir(ctx, rootfd, "boot/efi", NF_ROOT_CREATE);

		if (efd < 0) {
			r = efd;
			goto out;
		}
		close(efd);
	}
	if ((r = copy_file_in(ctx, rootfd, "etc/nodeforge",
			      "installed.manifest.json", manifest)) < 0 ||
	    (r = copy_file_in(ctx, rootfd, "etc/nodeforge",
			      "installed.manifest.json.sig", sig)) < 0)
		goto out;
	if ((r = nf_root_find_kernel(ctx, rootfd, kernel, sizeof(kernel),
				     initrd, sizeof(initrd))) < 0)
		goto out;
	text = nf_asprintf("# written by nodeforge install\n"
			   "set timeout=1\n"
			   "set default=0\n"
			   "menuentry 'nodeforge' {\n"
			   "\tsearch --no-floppy --fs-uuid --set=root %s\n"
			   "\tlinux %s root=UUID=%s ro%s%s\n"
			   "%s%s%s"
			   "}\n",
			   res->root_uuid, kernel, res->root_uuid,
			   o->kernel_args && *o->kernel_args ? " " : "",
			   o->kernel_args ? o->kernel_args : "",
			   initrd[0] ? "\tinitrd " : "", initrd,
			   initrd[0] ? "\n" : "");
	if (!text) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = write_file_in(ctx, rootfd, "boot/grub", "grub.cfg", text,
			       strlen(text), 0644)) < 0)
		goto out;

	/* 7. the boot loader, onto the ESP without mounting it */
	step(o, ctx, "installing the boot loader");
	snprintf(grub_img, sizeof(grub_img), "%s.BOOTX64.EFI", mnt);
	if ((r = build_grub(ctx, res->root_uuid, grub_img)) < 0)
		goto out;
	{
		char img[PATH_MAX + 8];
		const char *mmd[] = { "mmd", "-i", img, "::/EFI", "::/EFI/BOOT",
				      NULL };
		const char *mcopy[] = { "mcopy", "-i", img, "-o", grub_img,
					"::/EFI/BOOT/BOOTX64.EFI", NULL };

		snprintf(img, sizeof(img), "%s", res->esp_dev);
		if ((r = run_tool(ctx, NULL, mmd)) < 0 ||
		    (r = run_tool(ctx, NULL, mcopy)) < 0)
			goto out;
	}
	syncfs(rootfd);
	close(rootfd);
	rootfd = -1;
	if (umount(mnt) < 0) {
		r = nf_fail(ctx, -errno, "cannot unmount '%s': %s", mnt,
			    strerror(errno));
		goto out;
	}
	mounted = 0;
	rmdir(mnt);
	sync();

	/* 8. boot from the disk: new entry first, BootNext gone */
	if (efi) {
		unsigned num, *order = NULL, *nv;
		size_t no = 0, k = 1;

		step(o, ctx, "setting the EFI boot order");
		if ((r = nf_efi_add(efi, o->label ? o->label : "nodeforge",
				    1, pe->start, pe->size, pe->uuid,
				    "\\EFI\\BOOT\\BOOTX64.EFI", &num)) < 0)
			goto out;
		res->boot_entry = (int)num;
		if ((r = nf_efi_boot_order(efi, &order, &no)) < 0)
			goto out;
		nv = calloc(no + 1, sizeof(*nv));
		if (!nv) {
			free(order);
			r = -ENOMEM;
			goto out;
		}
		nv[0] = num;
		for (size_t i = 0; i < no; i++)
			if (order[i] != num)
				nv[k++] = order[i];
		free(order);
		r = nf_efi_set_boot_order(efi, nv, k);
		free(nv);
		if (r < 0 || (r = nf_efi_clear_boot_next(efi)) < 0)
			goto out;
	}
	r = 0;
out:
	if (rootfd >= 0)
		close(rootfd);
	if (mounted) {
		if (umount(mnt) == 0)
			rmdir(mnt);
	}
	if (grub_img[0])
		unlink(grub_img);
	free(script);
	free(text);
	nf_disks_free(&d);
	nf_efi_free(efi);
	return r;
}
