/* SPDX-License-Identifier: MIT */
/*
 * The libarchive functions nodeforge calls, defined here and forwarded to
 * libarchive's own, which is loaded on the first call
 * (lib/adapters/lazy.c): libarchive links libxml2 and ICU, which every
 * command would otherwise load at its start.  Without libarchive they
 * fail as its own do: no archive object, ARCHIVE_FATAL.
 */
#include "internal.h"
#include "lazy.h"

#include <stddef.h>
#include <archive.h>
#include <archive_entry.h>

/* RET NAME PARAMS, returning FAIL when libarchive cannot be loaded */
#define FWD(ret, name, fail, params, args)                                  \
	ret name params                                                     \
	{                                                                   \
		__typeof__(&name) fn_ = NF_LAZY_FN(NF_LAZY_ARCHIVE, name);  \
		return fn_ ? fn_ args : (fail);                             \
	}
#define FWD_VOID(name, params, args)                                        \
	void name params                                                    \
	{                                                                   \
		__typeof__(&name) fn_ = NF_LAZY_FN(NF_LAZY_ARCHIVE, name);  \
		if (fn_)                                                    \
			fn_ args;                                           \
	}

FWD(struct archive_entry *, archive_entry_clear, NULL, (struct archive_entry *a), (a))
FWD_VOID(archive_entry_copy_hardlink, (struct archive_entry *a, const char *b), (a, b))
FWD_VOID(archive_entry_copy_pathname, (struct archive_entry *a, const char *b), (a, b))
FWD_VOID(archive_entry_copy_symlink, (struct archive_entry *a, const char *b), (a, b))
FWD_VOID(archive_entry_free, (struct archive_entry *a), (a))
FWD(la_int64_t, archive_entry_gid, 0, (struct archive_entry *a), (a))
FWD(const char *, archive_entry_hardlink, NULL, (struct archive_entry *a), (a))
FWD(la_int64_t, archive_entry_ino64, 0, (struct archive_entry *a), (a))
FWD(__LA_MODE_T, archive_entry_mode, 0, (struct archive_entry *a), (a))
FWD(time_t, archive_entry_mtime, 0, (struct archive_entry *a), (a))
FWD(struct archive_entry *, archive_entry_new, NULL, (void), ())
FWD(unsigned int, archive_entry_nlink, 0, (struct archive_entry *a), (a))
FWD(const char *, archive_entry_pathname, NULL, (struct archive_entry *a), (a))
FWD(dev_t, archive_entry_rdevmajor, 0, (struct archive_entry *a), (a))
FWD(dev_t, archive_entry_rdevminor, 0, (struct archive_entry *a), (a))
FWD_VOID(archive_entry_set_dev, (struct archive_entry *a, dev_t b), (a, b))
FWD_VOID(archive_entry_set_gid, (struct archive_entry *a, la_int64_t b), (a, b))
FWD_VOID(archive_entry_set_ino64, (struct archive_entry *a, la_int64_t b), (a, b))
FWD_VOID(archive_entry_set_mode, (struct archive_entry *a, __LA_MODE_T b), (a, b))
FWD_VOID(archive_entry_set_mtime, (struct archive_entry *a, time_t b, long c), (a, b, c))
FWD_VOID(archive_entry_set_nlink, (struct archive_entry *a, unsigned int b), (a, b))
FWD_VOID(archive_entry_set_rdevmajor, (struct archive_entry *a, dev_t b), (a, b))
FWD_VOID(archive_entry_set_rdevminor, (struct archive_entry *a, dev_t b), (a, b))
FWD_VOID(archive_entry_set_size, (struct archive_entry *a, la_int64_t b), (a, b))
FWD_VOID(archive_entry_set_uid, (struct archive_entry *a, la_int64_t b), (a, b))
FWD(la_int64_t, archive_entry_size, 0, (struct archive_entry *a), (a))
FWD(int, archive_entry_size_is_set, 0, (struct archive_entry *a), (a))
FWD(const char *, archive_entry_symlink, NULL, (struct archive_entry *a), (a))
FWD(la_int64_t, archive_entry_uid, 0, (struct archive_entry *a), (a))
FWD_VOID(archive_entry_xattr_add_entry, (struct archive_entry *a, const char *b, const void *c, size_t d), (a, b, c, d))
FWD(int, archive_entry_xattr_next, ARCHIVE_FATAL,
	(struct archive_entry *a, const char **b, const void **c, size_t *d),
	(a, b, c, d))
FWD(int, archive_entry_xattr_reset, ARCHIVE_FATAL, (struct archive_entry *a), (a))
FWD(const char *, archive_error_string, "libarchive is not installed",
	(struct archive *a),
	(a))
FWD(la_ssize_t, archive_read_data, ARCHIVE_FATAL,
	(struct archive *a, void *b, size_t c),
	(a, b, c))
FWD(int, archive_read_free, ARCHIVE_FATAL, (struct archive *a), (a))
FWD(struct archive *, archive_read_new, NULL, (void), ())
FWD(int, archive_read_next_header, ARCHIVE_FATAL,
	(struct archive *a, struct archive_entry **b),
	(a, b))
FWD(int, archive_read_open_fd, ARCHIVE_FATAL,
	(struct archive *a, int b, size_t c),
	(a, b, c))
FWD(int, archive_read_open_memory, ARCHIVE_FATAL,
	(struct archive *a, const void *b, size_t c),
	(a, b, c))
FWD(int, archive_read_support_filter_gzip, ARCHIVE_FATAL, (struct archive *a), (a))
FWD(int, archive_read_support_filter_none, ARCHIVE_FATAL, (struct archive *a), (a))
FWD(int, archive_read_support_filter_xz, ARCHIVE_FATAL, (struct archive *a), (a))
FWD(int, archive_read_support_filter_zstd, ARCHIVE_FATAL, (struct archive *a), (a))
FWD(int, archive_read_support_format_cpio, ARCHIVE_FATAL, (struct archive *a), (a))
FWD(int, archive_read_support_format_tar, ARCHIVE_FATAL, (struct archive *a), (a))
FWD(int, archive_write_add_filter_gzip, ARCHIVE_FATAL, (struct archive *a), (a))
FWD(int, archive_write_add_filter_xz, ARCHIVE_FATAL, (struct archive *a), (a))
FWD(int, archive_write_close, ARCHIVE_FATAL, (struct archive *a), (a))
FWD(la_ssize_t, archive_write_data, ARCHIVE_FATAL,
	(struct archive *a, const void *b, size_t c),
	(a, b, c))
FWD(int, archive_write_free, ARCHIVE_FATAL, (struct archive *a), (a))
FWD(int, archive_write_header, ARCHIVE_FATAL,
	(struct archive *a, struct archive_entry *b),
	(a, b))
FWD(struct archive *, archive_write_new, NULL, (void), ())
FWD(int, archive_write_open2, ARCHIVE_FATAL,
	(struct archive *a, void *b, archive_open_callback *c, archive_write_callback *d, archive_close_callback *e, archive_free_callback *f),
	(a, b, c, d, e, f))
FWD(int, archive_write_set_bytes_in_last_block, ARCHIVE_FATAL,
	(struct archive *a, int b),
	(a, b))
FWD(int, archive_write_set_bytes_per_block, ARCHIVE_FATAL,
	(struct archive *a, int b),
	(a, b))
FWD(int, archive_write_set_filter_option, ARCHIVE_FATAL,
	(struct archive *a, const char *b, const char *c, const char *d),
	(a, b, c, d))
FWD(int, archive_write_set_format_cpio_newc, ARCHIVE_FATAL, (struct archive *a), (a))
FWD(int, archive_write_set_format_option, ARCHIVE_FATAL,
	(struct archive *a, const char *b, const char *c, const char *d),
	(a, b, c, d))
FWD(int, archive_write_set_format_pax_restricted, ARCHIVE_FATAL,
	(struct archive *a),
	(a))
