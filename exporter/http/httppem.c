// SPDX-License-Identifier: GPL-2.0-only
/*
 * TLS settings checked before a daemon is given them: the certificate, key and client CA (PEM,
 * already read) and the priorities parse and match. No I/O: GnuTLS on memory only.
 */
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <string.h>

#include "http/httppem.h"
#include "http/server.h"

void tls_priorities(char *buf, size_t len, const char *min_version)
{
	static const char *const versions[] = { "TLS10", "TLS11", "TLS12", "TLS13" };
	static const char *const gnutls_names[] = { "TLS1.0", "TLS1.1", "TLS1.2", "TLS1.3" };
	size_t used;
	int v = 0;

	/* The GnuTLS defaults with only the versions from the minimum up. */
	while (v < 3 && strcmp(versions[v], min_version))
		v++;
	used = (size_t)snprintf(buf, len, "NORMAL:-VERS-ALL");
	for (int i = 3; i >= v; i--)
		used += (size_t)snprintf(buf + used, len - used, ":+VERS-%s", gnutls_names[i]);
}

static gnutls_datum_t datum(const char *pem)
{
	return (gnutls_datum_t){ (unsigned char *)pem, (unsigned)strlen(pem) };
}

/* Whether the certificate chain and the key parse; 0, or -EINVAL with the reason in err. */
static int parse_pem(const struct web *w, char *err, size_t errlen)
{
	gnutls_datum_t cert = datum(w->cert), key = datum(w->key);
	gnutls_x509_crt_t *crts = NULL;
	gnutls_x509_privkey_t pk;
	unsigned n = 0;
	int ret;

	ret = gnutls_x509_crt_list_import2(&crts, &n, &cert, GNUTLS_X509_FMT_PEM, 0);
	for (unsigned i = 0; i < n; i++)
		gnutls_x509_crt_deinit(crts[i]);
	gnutls_free(crts);
	if (ret < 0) {
		snprintf(err, errlen, "[web] tls_cert_file %s: %s", w->cfg.tls_cert_file,
			 gnutls_strerror(ret));
		return -EINVAL;
	}
	ret = gnutls_x509_privkey_init(&pk);
	if (ret >= 0) {
		ret = gnutls_x509_privkey_import2(pk, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
		gnutls_x509_privkey_deinit(pk);
	}
	if (ret < 0) {
		snprintf(err, errlen, "[web] tls_key_file %s: %s", w->cfg.tls_key_file,
			 gnutls_strerror(ret));
		return -EINVAL;
	}
	return 0;
}

/*
 * Load w's certificate, key, client CA and priorities into scratch GnuTLS objects, as
 * libmicrohttpd will: a pair that does not parse or does not match is found here, before the
 * running daemon is touched.
 */
int tls_check(const struct web *w, char *err, size_t errlen)
{
	gnutls_certificate_credentials_t cred;
	gnutls_datum_t cert = datum(w->cert), key = datum(w->key), ca;
	gnutls_priority_t prio;
	const char *pos = NULL;
	int ret;

	/*
	 * Each file parsed on its own first: a clearer reason, and GnuTLS 3.7 leaks in
	 * gnutls_certificate_set_x509_key_mem2 when the certificate does not parse.
	 */
	ret = parse_pem(w, err, errlen);
	if (ret)
		return ret;
	ret = gnutls_certificate_allocate_credentials(&cred);
	if (ret < 0) {
		snprintf(err, errlen, "[web] TLS: %s", gnutls_strerror(ret));
		return -ENOMEM;
	}
	ret = gnutls_certificate_set_x509_key_mem2(cred, &cert, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (ret < 0)
		snprintf(err, errlen, "[web] tls_cert_file %s with tls_key_file %s: %s",
			 w->cfg.tls_cert_file, w->cfg.tls_key_file, gnutls_strerror(ret));
	if (ret >= 0 && w->ca) {
		ca = datum(w->ca);
		ret = gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM);
		if (ret <= 0) {
			snprintf(err, errlen, "[web] tls_client_ca_file %s: %s",
				 w->cfg.tls_client_ca_file,
				 ret ? gnutls_strerror(ret) : "no certificate in it");
			ret = -1;
		}
	}
	gnutls_certificate_free_credentials(cred);
	if (ret < 0)
		return -EINVAL;
	ret = gnutls_priority_init(&prio, w->priorities, &pos);
	if (ret < 0) {
		snprintf(err, errlen, "[web] tls_min_version: %s", gnutls_strerror(ret));
		return -EINVAL;
	}
	gnutls_priority_deinit(prio);
	return 0;
}
