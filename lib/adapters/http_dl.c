/* SPDX-License-Identifier: MIT */
/*
 * The libmicrohttpd functions nodeforge calls, defined here and forwarded
 * to libmicrohttpd's own, which is loaded on the first call
 * (lib/adapters/lazy.c).  Without libmicrohttpd they fail as its own do:
 * no daemon, no response, MHD_NO.
 */
#include "internal.h"
#include "lazy.h"

#include <stdarg.h>
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

#define FN(name) NF_LAZY_FN(NF_LAZY_MHD, name)

struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port,
				    MHD_AcceptPolicyCallback apc, void *apc_cls,
				    MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
	__typeof__(&MHD_start_daemon_va) f = FN(MHD_start_daemon_va);
	struct MHD_Daemon *d;
	va_list ap;

	if (!f)
		return NULL;
	va_start(ap, dh_cls);
	d = f(flags, port, apc, apc_cls, dh, dh_cls, ap);
	va_end(ap);
	return d;
}

void MHD_stop_daemon(struct MHD_Daemon *daemon)
{
	__typeof__(&MHD_stop_daemon) f = FN(MHD_stop_daemon);

	if (f)
		f(daemon);
}

/* the information types nodeforge asks for take no argument */
const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *connection,
							 enum MHD_ConnectionInfoType info_type,
							 ...)
{
	__typeof__(&MHD_get_connection_info) f = FN(MHD_get_connection_info);

	return f ? f(connection, info_type) : NULL;
}

const char *MHD_lookup_connection_value(struct MHD_Connection *connection,
					enum MHD_ValueKind kind, const char *key)
{
	__typeof__(&MHD_lookup_connection_value) f = FN(MHD_lookup_connection_value);

	return f ? f(connection, kind, key) : NULL;
}

size_t MHD_http_unescape(char *val)
{
	__typeof__(&MHD_http_unescape) f = FN(MHD_http_unescape);

	return f ? f(val) : 0;
}

struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer,
						     enum MHD_ResponseMemoryMode mode)
{
	__typeof__(&MHD_create_response_from_buffer) f = FN(MHD_create_response_from_buffer);

	return f ? f(size, buffer, mode) : NULL;
}

struct MHD_Response *MHD_create_response_from_fd64(uint64_t size, int fd)
{
	__typeof__(&MHD_create_response_from_fd64) f = FN(MHD_create_response_from_fd64);

	return f ? f(size, fd) : NULL;
}

struct MHD_Response *MHD_create_response_from_fd_at_offset64(uint64_t size, int fd,
							     uint64_t offset)
{
	__typeof__(&MHD_create_response_from_fd_at_offset64) f =
		FN(MHD_create_response_from_fd_at_offset64);

	return f ? f(size, fd, offset) : NULL;
}

enum MHD_Result MHD_add_response_header(struct MHD_Response *response,
					const char *header, const char *content)
{
	__typeof__(&MHD_add_response_header) f = FN(MHD_add_response_header);

	return f ? f(response, header, content) : MHD_NO;
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *connection,
				   unsigned int status_code,
				   struct MHD_Response *response)
{
	__typeof__(&MHD_queue_response) f = FN(MHD_queue_response);

	return f ? f(connection, status_code, response) : MHD_NO;
}

void MHD_destroy_response(struct MHD_Response *response)
{
	__typeof__(&MHD_destroy_response) f = FN(MHD_destroy_response);

	if (f)
		f(response);
}
