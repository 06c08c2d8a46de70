/* SPDX-License-Identifier: GPL-2.0-only */
/* What a daemon serves: every request routed to its page (httproute.c). */
#ifndef NETSTACK_HTTPROUTE_H
#define NETSTACK_HTTPROUTE_H

#include <microhttpd.h>
#include <stdarg.h>
#include <stddef.h>

/* libmicrohttpd's callbacks of a daemon; cls is its struct web where one is. */
enum MHD_Result web_handle(void *cls, struct MHD_Connection *conn, const char *url,
			   const char *method, const char *version, const char *upload_data,
			   size_t *upload_data_size, void **req);
void web_completed(void *cls, struct MHD_Connection *conn, void **req,
		   enum MHD_RequestTerminationCode toe);
size_t web_unescape(void *cls, struct MHD_Connection *conn, char *s);
void web_log(void *cls, const char *fmt, va_list ap);
void web_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
		    enum MHD_ConnectionNotificationCode code);

#endif
