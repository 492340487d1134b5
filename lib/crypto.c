/* SPDX-License-Identifier: MIT */
/* OpenSSL adapter: hashing (signatures and key generation live here too). */
#include "internal.h"

#include <openssl/evp.h>

void nf_sha256_hex(const void *data, size_t len, char out[NF_SHA256_HEX])
{
	unsigned char md[32];
	unsigned int mdlen = 0;
	static const char hex[] = "0123456789abcdef";

	EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
	for (unsigned i = 0; i < 32; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[64] = '\0';
}
