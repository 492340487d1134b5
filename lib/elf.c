/* SPDX-License-Identifier: MIT */
/*
 * The program interpreter an ELF executable asks for (PT_INTERP): the
 * loader the kernel must find to start it.  A helper linked against a C
 * library the image does not have (musl's loader on a glibc image) cannot
 * be executed at all; reading its header tells so without running it.
 * ELF64 little-endian only (the images are amd64); every offset is
 * checked against the bytes given.
 */
#include "internal.h"

#include <stdint.h>

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

#define EHDR_SIZE 64
#define PHDR_SIZE 56
#define PT_INTERP_TYPE 3

int nf_elf_interp(const void *buf, size_t len, char *out, size_t outsz)
{
	const uint8_t *b = buf;
	uint64_t phoff;
	uint16_t phentsize, phnum;

	if (outsz)
		*out = '\0';
	if (len < EHDR_SIZE || memcmp(b, "\177ELF", 4))
		return -ENOEXEC;
	if (b[4] != 2 || b[5] != 1) /* ELFCLASS64, ELFDATA2LSB */
		return -ENOEXEC;
	phoff = le64(b + 32);
	phentsize = le16(b + 54);
	phnum = le16(b + 56);
	if (phnum && (phentsize < PHDR_SIZE || phoff > len ||
		      (uint64_t)phentsize * phnum > len - phoff))
		return -EINVAL;
	for (uint16_t i = 0; i < phnum; i++) {
		const uint8_t *ph = b + phoff + (uint64_t)i * phentsize;
		uint64_t off, sz;
		size_t n;

		if (le32(ph) != PT_INTERP_TYPE)
			continue;
		off = le64(ph + 8);
		sz = le64(ph + 32);
		if (!sz || off > len || sz > len - off)
			return -EINVAL;
		/* a NUL-terminated path inside the segment */
		n = strnlen((const char *)b + off, (size_t)sz);
		if (n == sz || n == 0 || n >= outsz)
			return -EINVAL;
		memcpy(out, b + off, n);
		out[n] = '\0';
		return 1;
	}
	return 0;
}
