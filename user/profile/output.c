// SPDX-License-Identifier: BSD-2-Clause
/* Output formats by name and extension, and one writer for them all, so
 * record, view and the agent's file exporter agree. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"

static const struct {
	const char *ext;
	enum profile_format fmt;
} extensions[] = {
	{ ".pb.gz", PROFILE_FORMAT_PPROF }, { ".pprof", PROFILE_FORMAT_PPROF },
	{ ".folded", PROFILE_FORMAT_FOLDED }, { ".txt", PROFILE_FORMAT_FOLDED },
	{ ".html", PROFILE_FORMAT_HTML }, { ".htm", PROFILE_FORMAT_HTML },
};

static const char *const format_names[] = {
	[PROFILE_FORMAT_PPROF] = "pprof",
	[PROFILE_FORMAT_FOLDED] = "folded",
	[PROFILE_FORMAT_HTML] = "html",
};

enum profile_format profile_format__from_path(const char *path)
{
	size_t len = strlen(path);

	for (size_t i = 0; i < sizeof(extensions) / sizeof(extensions[0]); i++) {
		size_t el = strlen(extensions[i].ext);

		if (len > el && strcmp(path + len - el, extensions[i].ext) == 0)
			return extensions[i].fmt;
	}
	return PROFILE_FORMAT_NONE;
}

enum profile_format profile_format__parse(const char *name)
{
	for (size_t i = 0; i < sizeof(format_names) / sizeof(format_names[0]); i++)
		if (format_names[i] && strcmp(name, format_names[i]) == 0)
			return (enum profile_format)i;
	return PROFILE_FORMAT_NONE;
}

const char *profile_format__name(enum profile_format fmt)
{
	return fmt > PROFILE_FORMAT_NONE && fmt <= PROFILE_FORMAT_HTML ?
	       format_names[fmt] : "none";
}

int profile__write(const struct profile *p, enum profile_format fmt,
		   const struct pprof_meta *pmeta,
		   const struct html_meta *hmeta, bool folded_labels, FILE *f)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	int err;

	switch (fmt) {
	case PROFILE_FORMAT_PPROF:
		err = pprof__encode(p, pmeta, true, &buf, &len);
		if (!err && fwrite(buf, 1, len, f) != len)
			err = -EIO;
		free(buf);
		return err;
	case PROFILE_FORMAT_FOLDED:
		return folded__write(p, folded_labels, f);
	case PROFILE_FORMAT_HTML:
		return html__write(p, hmeta, f);
	default:
		return -EINVAL;
	}
}
