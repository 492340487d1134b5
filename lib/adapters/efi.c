/* SPDX-License-Identifier: MIT */
/*
 * efivar/efiboot adapter: Boot#### load options, BootOrder, BootNext,
 * BootCurrent.  libefiboot parses and builds the load options and device
 * paths; the variables themselves are read and written through the
 * store in lib/adapters/efi_vars.c, which can follow --sysroot.
 */
#include "efi_int.h"

#include <stdio.h>
#include <stdlib.h>

#include <efivar/efiboot.h>
#include <efivar/efivar.h>

#define NF_EFI_MAX_ENTRIES 4096
#define NF_EFI_GLOBAL "8be4df61-93ca-11d2-aa0d-00e098032b8c"

#define EFI_ATTR_NV 0x1
#define EFI_ATTR_BS 0x2
#define EFI_ATTR_RT 0x4
#define EFI_ATTR_DEFAULT (EFI_ATTR_NV | EFI_ATTR_BS | EFI_ATTR_RT)

#define LOAD_OPTION_ACTIVE 0x1

/* ------------------------------------------------------------ variables */

int nf_efi_parse_num(const char *s, unsigned *num)
{
	unsigned v = 0;

	if (!strncasecmp(s, "Boot", 4))
		s += 4;
	if (strlen(s) < 1 || strlen(s) > 4)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		int d;

		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			d = *p - 'A' + 10;
		else
			return -EINVAL;
		v = v * 16 + (unsigned)d;
	}
	*num = v;
	return 0;
}

static int get_u16_var(struct nf_efi *efi, const char *name, int *num)
{
	uint8_t *d;
	uint32_t attrs;
	size_t len;
	int r;

	*num = -1;
	r = efi->ops->get(efi, name, NF_EFI_GLOBAL, &attrs, &d, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	if (len != 2) {
		free(d);
		return nf_fail(efi->ctx, NF_E_PARSE,
			       "'%s' holds %zu bytes, not 2", name, len);
	}
	*num = d[0] | d[1] << 8;
	free(d);
	return 0;
}

int nf_efi_boot_current(struct nf_efi *efi, int *num)
{
	return get_u16_var(efi, "BootCurrent", num);
}

int nf_efi_boot_next(struct nf_efi *efi, int *num)
{
	return get_u16_var(efi, "BootNext", num);
}

static int read_order(struct nf_efi *efi, unsigned **v, size_t *n,
		      uint32_t *attrs)
{
	uint8_t *d;
	size_t len;
	int r;

	*v = NULL;
	*n = 0;
	*attrs = EFI_ATTR_DEFAULT;
	r = efi->ops->get(efi, "BootOrder", NF_EFI_GLOBAL, attrs, &d, &len);
	if (r == -ENOENT) {
		*attrs = EFI_ATTR_DEFAULT;
		return 0;
	}
	if (r < 0)
		return r;
	if (len % 2) {
		free(d);
		return nf_fail(efi->ctx, NF_E_PARSE,
			       "'BootOrder' has an odd length (%zu bytes)", len);
	}
	if (len) {
		*v = calloc(len / 2, sizeof(**v));
		if (!*v) {
			free(d);
			return -ENOMEM;
		}
		for (size_t i = 0; i < len / 2; i++)
			(*v)[i] = d[2 * i] | (unsigned)d[2 * i + 1] << 8;
		*n = len / 2;
	}
	free(d);
	return 0;
}

int nf_efi_boot_order(struct nf_efi *efi, unsigned **v, size_t *n)
{
	uint32_t attrs;

	return read_order(efi, v, n, &attrs);
}

static void entry_clear(struct nf_efi_entry *e)
{
	free(e->description);
	free(e->device_path);
}

void nf_efi_entries_free(struct nf_efi_entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		entry_clear(&v[i]);
	free(v);
}

static int parse_loadopt(struct nf_ctx *ctx, const char *name, uint8_t *d,
			 size_t len, struct nf_efi_entry *e);

/*
 * The bounds of a load option, checked before libefiboot sees it (its
 * parsers trust the lengths inside): attributes (4), FilePathListLength
 * (2), a NUL-terminated UCS-2 description, then device path nodes that
 * each fit, each at least a header long, ending with End Entire exactly
 * at FilePathListLength; optional data after that.
 */
static int loadopt_well_formed(const uint8_t *d, size_t len)
{
	size_t pathlen, off = 6, end;

	if (len < 6 + 2 + 4)
		return 0;
	pathlen = (size_t)d[4] | (size_t)d[5] << 8;
	for (;;) {
		if (off + 2 > len)
			return 0;
		off += 2;
		if (d[off - 2] == 0 && d[off - 1] == 0)
			break;
	}
	if (pathlen < 4 || pathlen > len - off)
		return 0;
	end = off + pathlen;
	while (off + 4 <= end) {
		size_t nl = (size_t)d[off + 2] | (size_t)d[off + 3] << 8;

		if (nl < 4 || nl > end - off)
			return 0;
		/* a File node's name must end inside the node */
		if (d[off] == 4 && d[off + 1] == 4 &&
		    (nl < 6 || nl % 2 || d[off + nl - 1] || d[off + nl - 2]))
			return 0;
		if (d[off] == 0x7f && d[off + 1] == 0xff)
			return nl == 4 && off + 4 == end;
		off += nl;
	}
	return 0;
}

/* Network boot: a MAC, IPv4, IPv6 or URI node anywhere in the path */
static int dp_is_network(const_efidp dp, ssize_t limit)
{
	const_efidp node = dp;

	while (limit >= (ssize_t)sizeof(efidp_header)) {
		ssize_t sz = efidp_node_size(node);

		if (sz < (ssize_t)sizeof(efidp_header) || sz > limit)
			return 0;
		if (efidp_type(node) == EFIDP_MESSAGE_TYPE &&
		    (efidp_subtype(node) == EFIDP_MSG_MAC_ADDR ||
		     efidp_subtype(node) == EFIDP_MSG_IPv4 ||
		     efidp_subtype(node) == EFIDP_MSG_IPv6 ||
		     efidp_subtype(node) == EFIDP_MSG_URI))
			return 1;
		if (efidp_type(node) == EFIDP_END_TYPE &&
		    efidp_subtype(node) == EFIDP_END_ENTIRE)
			return 0;
		limit -= sz;
		node = (const_efidp)((const uint8_t *)node + sz);
	}
	return 0;
}

int nf_efi_loadopt_parse(struct nf_ctx *ctx, const char *name,
			 const uint8_t *data, size_t len,
			 struct nf_efi_entry *e)
{
	uint8_t *d;
	int r;

	/* libefiboot takes a mutable buffer */
	if (len > NF_EFIVAR_MAX)
		return nf_fail(ctx, NF_E_LIMIT, "'%s' is larger than %d bytes",
			       name, NF_EFIVAR_MAX);
	d = malloc(len ? len : 1);
	if (!d)
		return -ENOMEM;
	if (len)
		memcpy(d, data, len);
	r = parse_loadopt(ctx, name, d, len, e);
	free(d);
	return r;
}

/*
 * libefivar's device path formatter trusts node lengths (a short vendor
 * node makes it loop, found by the fuzz target), so only paths made of
 * the node kinds below, each at least its structure's size, are handed
 * to it.
 */
static const struct {
	uint8_t type, subtype;
	uint16_t min;
	uint8_t exact;
} dp_known[] = {
	{ EFIDP_HARDWARE_TYPE, EFIDP_HW_PCI, sizeof(efidp_pci), 1 },
	{ EFIDP_HARDWARE_TYPE, EFIDP_HW_VENDOR, sizeof(efidp_hw_vendor), 0 },
	{ EFIDP_HARDWARE_TYPE, EFIDP_HW_CONTROLLER, sizeof(efidp_controller), 1 },
	{ EFIDP_ACPI_TYPE, EFIDP_ACPI_HID, sizeof(efidp_acpi_hid), 1 },
	{ EFIDP_MESSAGE_TYPE, EFIDP_MSG_SCSI, sizeof(efidp_scsi), 1 },
	{ EFIDP_MESSAGE_TYPE, EFIDP_MSG_USB, sizeof(efidp_usb), 1 },
	{ EFIDP_MESSAGE_TYPE, EFIDP_MSG_SATA, sizeof(efidp_sata), 1 },
	{ EFIDP_MESSAGE_TYPE, EFIDP_MSG_NVME, sizeof(efidp_nvme), 1 },
	{ EFIDP_MESSAGE_TYPE, EFIDP_MSG_MAC_ADDR, sizeof(efidp_mac_addr), 1 },
	{ EFIDP_MESSAGE_TYPE, EFIDP_MSG_IPv4, sizeof(efidp_ipv4_addr), 1 },
	{ EFIDP_MESSAGE_TYPE, EFIDP_MSG_IPv6, sizeof(efidp_ipv6_addr), 1 },
	{ EFIDP_MESSAGE_TYPE, EFIDP_MSG_VLAN, sizeof(efidp_vlan), 1 },
	{ EFIDP_MESSAGE_TYPE, EFIDP_MSG_VENDOR, sizeof(efidp_msg_vendor), 0 },
	{ EFIDP_MESSAGE_TYPE, EFIDP_MSG_URI, sizeof(efidp_uri), 0 },
	{ EFIDP_MEDIA_TYPE, EFIDP_MEDIA_HD, sizeof(efidp_hd), 1 },
	{ EFIDP_MEDIA_TYPE, EFIDP_MEDIA_VENDOR, sizeof(efidp_media_vendor), 0 },
	{ EFIDP_MEDIA_TYPE, EFIDP_MEDIA_FILE, sizeof(efidp_file) + 2, 0 },
	{ EFIDP_MEDIA_TYPE, EFIDP_MEDIA_FIRMWARE_FILE, sizeof(efidp_firmware_file), 1 },
	{ EFIDP_MEDIA_TYPE, EFIDP_MEDIA_FIRMWARE_VOLUME, sizeof(efidp_firmware_volume), 1 },
	{ EFIDP_END_TYPE, EFIDP_END_ENTIRE, sizeof(efidp_header), 1 },
	{ EFIDP_END_TYPE, EFIDP_END_INSTANCE, sizeof(efidp_header), 1 },
};

/* 0 when every node (already bounds-checked) is a known kind of a
 * plausible size; else the offending node's type<<8|subtype + 1 */
static int dp_unknown_node(const uint8_t *dp, size_t len)
{
	size_t off = 0;

	while (off + 4 <= len) {
		size_t nl = (size_t)dp[off + 2] | (size_t)dp[off + 3] << 8;
		int ok = 0;

		for (size_t i = 0; i < NF_ARRAY_SIZE(dp_known); i++)
			if (dp_known[i].type == dp[off] &&
			    dp_known[i].subtype == dp[off + 1])
				ok = dp_known[i].exact ? nl == dp_known[i].min
						       : nl >= dp_known[i].min;
		if (!ok)
			return (dp[off] << 8 | dp[off + 1]) + 1;
		off += nl;
	}
	return 0;
}

/* Parse one Boot#### load option into e */
static int parse_loadopt(struct nf_ctx *ctx, const char *name, uint8_t *d,
			 size_t len, struct nf_efi_entry *e)
{
	efi_load_option *opt = (efi_load_option *)d;
	const unsigned char *desc;
	uint16_t pathlen;
	efidp dp;
	char text[4096];
	ssize_t tl;

	if (!loadopt_well_formed(d, len) || !efi_loadopt_is_valid(opt, len))
		return nf_fail(ctx, NF_E_PARSE,
			       "'%s' is not a valid load option", name);
	e->attributes = efi_loadopt_attrs(opt);
	e->active = !!(e->attributes & LOAD_OPTION_ACTIVE);
	desc = efi_loadopt_desc(opt, (ssize_t)len);
	e->description = nf_strdup(desc ? (const char *)desc : "");
	pathlen = efi_loadopt_pathlen(opt, (ssize_t)len);
	dp = efi_loadopt_path(opt, (ssize_t)len);
	text[0] = '\0';
	if (dp && pathlen) {
		int bad = dp_unknown_node((const uint8_t *)dp, pathlen);

		if (bad) {
			snprintf(text, sizeof(text),
				 "(device path not shown: node %02x/%02x)",
				 (bad - 1) >> 8, (bad - 1) & 0xff);
		} else {
			/* char * before efivar 39, unsigned char * since */
			tl = efidp_format_device_path((void *)text,
						      sizeof(text), dp, pathlen);
			if (tl < 0)
				snprintf(text, sizeof(text),
					 "(unreadable device path)");
		}
		e->network = dp_is_network(dp, pathlen);
	}
	e->device_path = nf_strdup(text);
	if (!e->description || !e->device_path)
		return -ENOMEM;
	return 0;
}

struct collect {
	unsigned nums[NF_EFI_MAX_ENTRIES];
	size_t n;
};

static int collect_boot(void *arg, const char *name)
{
	struct collect *c = arg;
	unsigned num;

	if (strlen(name) != 8 || strncmp(name, "Boot", 4) ||
	    nf_efi_parse_num(name + 4, &num) < 0)
		return 0;
	if (c->n >= NF_EFI_MAX_ENTRIES)
		return NF_E_LIMIT;
	c->nums[c->n++] = num;
	return 0;
}

static int cmp_uint(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

int nf_efi_entries(struct nf_efi *efi, struct nf_efi_entry **out, size_t *nout)
{
	struct collect *c = calloc(1, sizeof(*c));
	struct nf_efi_entry *v = NULL;
	size_t n = 0;
	int r;

	*out = NULL;
	*nout = 0;
	if (!c)
		return -ENOMEM;
	r = efi->ops->list(efi, NF_EFI_GLOBAL, collect_boot, c);
	if (r == NF_E_LIMIT)
		nf_fail(efi->ctx, r, "more than %d boot entries",
			NF_EFI_MAX_ENTRIES);
	if (r < 0)
		goto out;
	qsort(c->nums, c->n, sizeof(*c->nums), cmp_uint);
	if (c->n && !(v = calloc(c->n, sizeof(*v)))) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < c->n; i++) {
		char name[16];
		uint8_t *d;
		uint32_t attrs;
		size_t len;

		snprintf(name, sizeof(name), "Boot%04X", c->nums[i]);
		r = efi->ops->get(efi, name, NF_EFI_GLOBAL, &attrs, &d, &len);
		if (r == -ENOENT)
			continue;
		if (r < 0)
			goto out;
		v[n].num = c->nums[i];
		r = parse_loadopt(efi->ctx, name, d, len, &v[n]);
		free(d);
		n++;
		if (r < 0)
			goto out;
	}
	r = 0;
out:
	free(c);
	if (r < 0) {
		nf_efi_entries_free(v, n);
		return r;
	}
	*out = v;
	*nout = n;
	return 0;
}

static int entry_exists(struct nf_efi *efi, unsigned num)
{
	char name[16];
	uint8_t *d;
	uint32_t attrs;
	size_t len;
	int r;

	snprintf(name, sizeof(name), "Boot%04X", num);
	r = efi->ops->get(efi, name, NF_EFI_GLOBAL, &attrs, &d, &len);
	if (r == -ENOENT)
		return nf_fail(efi->ctx, NF_E_NOTFOUND,
			       "no boot entry 'Boot%04X'", num);
	if (r < 0)
		return r;
	free(d);
	return 0;
}

int nf_efi_resolve(struct nf_efi *efi, const char *spec, unsigned *num)
{
	struct nf_efi_entry *v;
	unsigned *order = NULL;
	size_t n, no = 0;
	int r, found = -1, nfound = 0;

	/* "Boot0003" or exactly four hex digits; anything else is a name */
	if ((strlen(spec) == 4 || strlen(spec) == 8) &&
	    nf_efi_parse_num(spec, num) == 0)
		return entry_exists(efi, *num);
	if ((r = nf_efi_entries(efi, &v, &n)) < 0)
		return r;
	if (!strcasecmp(spec, "pxe") || !strcasecmp(spec, "network")) {
		/* the first active network entry in boot order, else by
		 * number */
		if ((r = nf_efi_boot_order(efi, &order, &no)) < 0) {
			nf_efi_entries_free(v, n);
			return r;
		}
		for (size_t i = 0; i < no && found < 0; i++)
			for (size_t j = 0; j < n; j++)
				if (v[j].num == order[i] && v[j].network &&
				    v[j].active) {
					found = (int)j;
					break;
				}
		for (size_t j = 0; j < n && found < 0; j++)
			if (v[j].network && v[j].active)
				found = (int)j;
		free(order);
		if (found < 0) {
			nf_efi_entries_free(v, n);
			return nf_fail(efi->ctx, NF_E_NOTFOUND,
				       "no active network boot entry");
		}
		nfound = 1;
	} else {
		for (size_t j = 0; j < n; j++)
			if (!strcmp(v[j].description, spec)) {
				if (found < 0)
					found = (int)j;
				nfound++;
			}
	}
	if (nfound == 1)
		*num = v[found].num;
	nf_efi_entries_free(v, n);
	if (nfound == 0)
		return nf_fail(efi->ctx, NF_E_NOTFOUND,
			       "no boot entry '%s' (give Boot####, a number, 'pxe' or a description)",
			       spec);
	if (nfound > 1)
		return nf_fail(efi->ctx, NF_E_CONFLICT,
			       "%d boot entries are described '%s'; give the number",
			       nfound, spec);
	return 0;
}

int nf_efi_set_boot_next(struct nf_efi *efi, unsigned num)
{
	uint8_t d[2] = { num & 0xff, (num >> 8) & 0xff };
	int r;

	if (num > 0xffff)
		return nf_fail(efi->ctx, NF_E_INVALID, "bad entry number %u", num);
	if ((r = entry_exists(efi, num)) < 0)
		return r;
	return efi->ops->set(efi, "BootNext", NF_EFI_GLOBAL, EFI_ATTR_DEFAULT,
			     d, 2);
}

int nf_efi_next_boot_is_network(struct nf_efi *efi, int *yes, int *num)
{
	struct nf_efi_entry *v;
	size_t n;
	int r;

	*yes = 0;
	if ((r = nf_efi_boot_next(efi, num)) < 0 || *num < 0)
		return r;
	if ((r = nf_efi_entries(efi, &v, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if ((int)v[i].num == *num)
			*yes = v[i].network && v[i].active;
	nf_efi_entries_free(v, n);
	return 0;
}

int nf_efi_clear_boot_next(struct nf_efi *efi)
{
	int r = efi->ops->del(efi, "BootNext", NF_EFI_GLOBAL);

	return r == -ENOENT ? 0 : r;
}

int nf_efi_set_boot_order(struct nf_efi *efi, const unsigned *v, size_t n)
{
	unsigned *old;
	uint8_t *d;
	uint32_t attrs;
	size_t nold;
	int r;

	if (n == 0 || n > NF_EFI_MAX_ENTRIES)
		return nf_fail(efi->ctx, NF_E_INVALID,
			       "a boot order needs 1 to %d entries",
			       NF_EFI_MAX_ENTRIES);
	for (size_t i = 0; i < n; i++) {
		if (v[i] > 0xffff)
			return nf_fail(efi->ctx, NF_E_INVALID,
				       "bad entry number %u", v[i]);
		for (size_t j = 0; j < i; j++)
			if (v[j] == v[i])
				return nf_fail(efi->ctx, NF_E_INVALID,
					       "'Boot%04X' appears twice in the boot order",
					       v[i]);
		if ((r = entry_exists(efi, v[i])) < 0)
			return r;
	}
	/* keep the variable's own attributes */
	if ((r = read_order(efi, &old, &nold, &attrs)) < 0)
		return r;
	free(old);
	d = malloc(2 * n);
	if (!d)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		d[2 * i] = v[i] & 0xff;
		d[2 * i + 1] = (v[i] >> 8) & 0xff;
	}
	r = efi->ops->set(efi, "BootOrder", NF_EFI_GLOBAL, attrs, d, 2 * n);
	free(d);
	return r;
}

int nf_efi_add(struct nf_efi *efi, const char *description, unsigned partnum,
	       unsigned long long part_start, unsigned long long part_size,
	       const char *partuuid, const char *loader, unsigned *num)
{
	uint8_t dp[1024], opt[4096];
	efi_guid_t sig;
	ssize_t off = 0, sz, ol;
	struct nf_efi_entry *v;
	char *file, name[16];
	size_t n;
	unsigned free_num = 0;
	int r;

	if (!description || !*description || strlen(description) > 256)
		return nf_fail(efi->ctx, NF_E_INVALID,
			       "a boot entry needs a description of 1 to 256 bytes");
	if (!loader || loader[0] != '\\' || strlen(loader) > 256)
		return nf_fail(efi->ctx, NF_E_INVALID,
			       "bad loader path '%s' (an ESP path such as \\EFI\\BOOT\\BOOTX64.EFI)",
			       loader ? loader : "");
	if (!partuuid || efi_str_to_guid(partuuid, &sig) < 0)
		return nf_fail(efi->ctx, NF_E_INVALID,
			       "bad partition UUID '%s' (a GPT partition is needed)",
			       partuuid ? partuuid : "");
	if (part_start % 512 || part_size % 512 || !part_size)
		return nf_fail(efi->ctx, NF_E_INVALID,
			       "partition %u is not sector-aligned", partnum);
	sz = efidp_make_hd(dp, sizeof(dp), partnum, part_start / 512,
			   part_size / 512, (uint8_t *)&sig,
			   EFIDP_HD_FORMAT_GPT, EFIDP_HD_SIGNATURE_GUID);
	if (sz < 0)
		return nf_fail(efi->ctx, NF_E_INVALID, "cannot build device path");
	off += sz;
	if (!(file = nf_strdup(loader)))
		return -ENOMEM;
	sz = efidp_make_file(dp + off, (ssize_t)sizeof(dp) - off, file);
	free(file);
	if (sz < 0)
		return nf_fail(efi->ctx, NF_E_INVALID, "cannot build device path");
	off += sz;
	sz = efidp_make_end_entire(dp + off, (ssize_t)sizeof(dp) - off);
	if (sz < 0)
		return nf_fail(efi->ctx, NF_E_INVALID, "cannot build device path");
	off += sz;
	ol = efi_loadopt_create(opt, sizeof(opt), LOAD_OPTION_ACTIVE,
				(efidp)dp, off,
				(unsigned char *)description, NULL, 0);
	if (ol < 0)
		return nf_fail(efi->ctx, NF_E_INVALID, "cannot build load option");
	/* the lowest free number */
	if ((r = nf_efi_entries(efi, &v, &n)) < 0)
		return r;
	for (size_t i = 0; i < n && v[i].num == free_num; i++)
		free_num++;
	nf_efi_entries_free(v, n);
	if (free_num > 0xffff)
		return nf_fail(efi->ctx, NF_E_LIMIT, "no free boot entry number");
	snprintf(name, sizeof(name), "Boot%04X", free_num);
	r = efi->ops->set(efi, name, NF_EFI_GLOBAL, EFI_ATTR_DEFAULT, opt,
			  (size_t)ol);
	if (r == 0)
		*num = free_num;
	return r;
}
