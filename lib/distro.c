/* SPDX-License-Identifier: MIT */
/*
 * The distributions nodeforge builds for: one table that says how each is
 * bootstrapped (mmdebstrap suite or dnf release) and whether it is an
 * Enterprise Linux, for build, apply and pxe alike.
 */
#include "internal.h"

static const struct nf_distro distros[] = {
	{ "debian13", "trixie", 0 },
	{ "debian12", "bookworm", 0 },
	{ "debian11", "bullseye", 0 },
	{ "rocky9", "9", 1 },
	{ "rhel9", "9", 1 },
	{ "alma9", "9", 1 },
};

const char *const nf_site_distros[] = { "debian13", "debian12", "rocky9", NULL };

const struct nf_distro *nf_distro_find(const char *name)
{
	for (size_t i = 0; name && i < sizeof(distros) / sizeof(*distros); i++)
		if (!strcmp(distros[i].name, name))
			return &distros[i];
	return NULL;
}

int nf_distro_is_el(const char *name)
{
	const struct nf_distro *d = nf_distro_find(name);

	return d && d->el;
}
