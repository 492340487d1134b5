/* SPDX-License-Identifier: MIT */
/* libnodeforge's public API: disks, EFI boot entries, the stateful install.  Included by nodeforge.h,
 * which every user includes; not meant to be included alone. */
#ifndef NF_DISK_H
#define NF_DISK_H

/* ================================================ disks, EFI, install
 * (lib/diskrule.c, lib/install.c, lib/mounts.c; lib/adapters/blkid.c,
 * efi.c) */

/* One partition of a disk; sizes in bytes.  Strings may be NULL. */
struct nf_part {
	unsigned number;
	unsigned long long start;
	unsigned long long size;
	char *type;     /* GPT type GUID, or MBR type as "0x83" */
	char *uuid;     /* PARTUUID */
	char *name;     /* PARTLABEL */
	char *fstype;   /* filesystem found on it ("ext4", "vfat", ...) */
	char *label;
	char *fsuuid;
};

/* One block device or disk image file */
struct nf_disk {
	char *name;       /* "nvme0n1", or the image file's base name */
	char *path;       /* "/dev/nvme0n1", or the path given */
	unsigned long long size;
	char *model;
	char *transport;  /* nvme, sata, usb, virtio, scsi, mmc, file, unknown */
	int rotational;   /* 1, 0, -1 unknown */
	int removable;    /* 1, 0, -1 unknown */
	char *pttype;     /* "gpt", "dos", NULL: no partition table */
	char *ptuuid;
	char *fstype;     /* a filesystem on the whole disk */
	char *label;
	char *fsuuid;
	char *probe_error; /* why the contents could not be probed, or NULL */
	struct nf_part *parts;
	size_t nparts;
};

struct nf_disks {
	struct nf_disk *v;
	size_t n;
};

/* Block devices under <sysroot>/sys/block (whole disks with a device;
 * loop, ram, zram, dm and md are left out); contents are probed from
 * <sysroot>/dev/NAME, sorted by name */
int nf_disk_scan(struct nf_ctx *ctx, struct nf_disks *out);
/* Probe one block device or image file and append it to `out` */
int nf_disk_probe(struct nf_ctx *ctx, const char *path, struct nf_disks *out);
void nf_disks_free(struct nf_disks *d);
/* No partition table and no filesystem signature */
int nf_disk_is_empty(const struct nf_disk *d);

/* Disk selection rules ("transport=nvme,removable=0,empty,smallest"),
 * documented in docs/nodeforge-disk.md */
struct nf_diskrule;

int nf_diskrule_parse(struct nf_ctx *ctx, const char *text,
		      struct nf_diskrule **out);
void nf_diskrule_free(struct nf_diskrule *r);
int nf_diskrule_match(const struct nf_diskrule *r, const struct nf_disk *d);
/* The one disk the rule selects (index into d->v); NF_E_NOTFOUND when
 * none matches, NF_E_CONFLICT when several match and nothing breaks the
 * tie */
int nf_disk_pick(struct nf_ctx *ctx, const struct nf_diskrule *r,
		 const struct nf_disks *d, size_t *idx);

/* Where a path lives: the mount holding it, from
 * <sysroot>/proc/self/mountinfo */
struct nf_mount_info {
	char *mountpoint;
	char *source;     /* "/dev/nvme0n1p1" */
	char *fstype;
	char *root;       /* root of the mount within its filesystem */
	unsigned major, minor;
	char *disk;       /* whole disk name from sysfs ("nvme0n1"), or NULL */
};

int nf_mount_find(struct nf_ctx *ctx, const char *path,
		  struct nf_mount_info *out);
void nf_mount_info_clear(struct nf_mount_info *m);

/* EFI boot entries.  Variables are read from and written to
 * <sysroot>/sys/firmware/efi/efivars (or a directory given to
 * nf_efi_open_dir); without /sys/firmware/efi: NF_E_NOHW. */
struct nf_efi;

struct nf_efi_entry {
	unsigned num;       /* Boot#### */
	int active;
	uint32_t attributes; /* load option attributes */
	char *description;
	char *device_path;  /* text form */
	int network;        /* the device path boots from the network */
};

int nf_efi_open(struct nf_ctx *ctx, struct nf_efi **out);
int nf_efi_open_dir(struct nf_ctx *ctx, const char *dir, struct nf_efi **out);
void nf_efi_free(struct nf_efi *efi);
/* Entries sorted by number */
int nf_efi_entries(struct nf_efi *efi, struct nf_efi_entry **v, size_t *n);
void nf_efi_entries_free(struct nf_efi_entry *v, size_t n);
/* BootOrder; *n = 0 when absent */
int nf_efi_boot_order(struct nf_efi *efi, unsigned **v, size_t *n);
/* BootCurrent / BootNext: -1 when absent */
int nf_efi_boot_current(struct nf_efi *efi, int *num);
int nf_efi_boot_next(struct nf_efi *efi, int *num);
int nf_efi_set_boot_next(struct nf_efi *efi, unsigned num);
int nf_efi_set_boot_order(struct nf_efi *efi, const unsigned *v, size_t n);
/* "0003", "Boot0003", "pxe" (the first network entry in boot order) or
 * an exact description; the entry must exist */
int nf_efi_resolve(struct nf_efi *efi, const char *spec, unsigned *num);
/* Create a Boot#### entry for `loader` (a path on the ESP such as
 * "\\EFI\\BOOT\\BOOTX64.EFI") on GPT partition `partnum` of the disk,
 * at the partition's start/size (bytes) with its PARTUUID; returns its
 * number (the lowest free) */
int nf_efi_add(struct nf_efi *efi, const char *description, unsigned partnum,
	       unsigned long long part_start, unsigned long long part_size,
	       const char *partuuid, const char *loader, unsigned *num);
/* Parse "0003" / "Boot0003" */
int nf_efi_parse_num(const char *s, unsigned *num);

/* *yes = 1 when BootNext is set and names an active network entry (the
 * next reboot boots from the network); *num = that entry or -1 */
int nf_efi_next_boot_is_network(struct nf_efi *efi, int *yes, int *num);
/* Remove BootNext (no-op when absent) */
int nf_efi_clear_boot_next(struct nf_efi *efi);

/* Stateful install of a signed image onto a disk (lib/install.c):
 * verify, GPT (ESP + root), mkfs, unpack, fstab by UUID, GRUB for UEFI,
 * the installed manifest, EFI boot order.  docs/nodeforge-install.md */
struct nf_install_opts {
	const char *image;       /* archive; IMAGE.manifest.json (+ .sig) */
	const char *pubkey;      /* Ed25519 public key (PEM) */
	const char *disk;        /* a whole block device */
	int wipe;                /* allow erasing a disk that holds data */
	unsigned long long esp_size; /* bytes; 0: 512 MiB */
	const char *efivars;     /* EFI variables directory; NULL: the system's */
	int no_efi;              /* leave the boot variables alone */
	const char *label;       /* boot entry description; NULL: "nodeforge" */
	const char *kernel_args; /* appended to the kernel command line */
	/* Called at each step (may be NULL) */
	void (*progress)(void *data, const char *step);
	void *progress_data;
};

/* What install calls for the parts other modules own; tests may replace
 * them */
struct nf_install_ops {
	int (*verify)(struct nf_ctx *ctx, const char *manifest,
		      const char *pubkey);
	int (*unpack)(struct nf_ctx *ctx, const char *archive,
		      const char *dir);
};

extern const struct nf_install_ops nf_install_default_ops;

struct nf_install_result {
	char esp_dev[64], root_dev[64];
	char esp_uuid[64], root_uuid[64];
	int boot_entry;          /* Boot#### created, -1 when EFI was skipped */
};

int nf_install(struct nf_ctx *ctx, const struct nf_install_opts *o,
	       const struct nf_install_ops *ops, struct nf_install_result *res);

#endif
